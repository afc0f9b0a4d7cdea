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
	uint64_t write_every; /* sparse payload */
	const char *phase_log;
	const char *listen;
	const char *name;
	int harvest_cpu;        /* -1: none */
	int vcpu_cpu;           /* -1: unpinned */
	uint64_t dirty_ring;    /* ring entries per vCPU; 0: no ring (mode dirty-log) */
	uint64_t ring_list_max; /* 0: bitmap_bytes / 8 */
	bool wait_attach;
	bool guest_if; /* the payload runs with RFLAGS.IF=1 */
	bool verbose;
};

/* hvmtrace-vmm's exit statuses, as its --help lists them. */
enum vmm_exit {
	VMM_OK = 0,     /* the script ran, or SIGINT/SIGTERM stopped it */
	VMM_FAILED = 1, /* a guest, KVM or host error */
	VMM_USAGE = 2,  /* a usage error */
};

/* HVT_OPTS_RUN to run; otherwise the status to exit with (0 after --help; a usage error is printed). */
int cli_parse(int argc, char **argv, struct vmm_options *o);

#endif
