/* SPDX-License-Identifier: MIT */
/* hvmtrace-vmm's command line. */
#ifndef HVMTRACE_VMM_CLI_H
#define HVMTRACE_VMM_CLI_H

#include <stdbool.h>
#include <stdint.h>

struct vmm_options {
	uint64_t low_ram, high_ram;
	const char *payload;
	uint64_t phase_ns, pass_gap_ns;
	uint64_t repeat;         /* 0: until killed */
	unsigned hold_intervals; /* with follow: whole intervals of the tracer per phase */
	const char *follow;      /* the tracer's --jsonl file */
	uint64_t array_bytes;
	const char *phase_log;
	const char *listen;
	const char *name;
	int harvest_cpu; /* -1: none */
	int vcpu_cpu;    /* -1: unpinned */
	bool wait_attach;
	bool verbose;
};

/* 0 to run, 1 after --help (exit 0), -1 after a usage error (already printed; exit 2). */
int cli_parse(int argc, char **argv, struct vmm_options *o);

#endif
