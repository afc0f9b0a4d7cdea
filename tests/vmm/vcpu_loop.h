/* SPDX-License-Identifier: MIT */
/* Runs the vCPU through the script: times the phases, answers the payload's ports, logs phases and passes. */
#ifndef HVMTRACE_VMM_VCPU_LOOP_H
#define HVMTRACE_VMM_VCPU_LOOP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct vm;
struct script;
struct phaselog;
struct phase_hold;
struct hvt_err;

struct run_config {
	struct phase_hold *hold; /* when each phase may end, from its PHASE report */
	uint64_t pass_gap_ns;    /* at most one logged pass per gap, besides each phase's first and last */
	uint64_t repeat;         /* rounds of the whole script; 0 = until stopped */
	uint64_t t_process_start_ns;
	bool verbose;
};

enum run_end {
	RUN_FINISHED = 0, /* every round done */
	RUN_STOPPED = 1,  /* *stop was set (a signal) */
};

/* Returns an enum run_end, or a negative errno with err naming the guest's failure. */
int vcpu_run(struct vm *vm, const struct script *s, struct phaselog *pl, const struct run_config *c,
	     volatile sig_atomic_t *stop, struct hvt_err *err);

#endif
