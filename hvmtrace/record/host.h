/* SPDX-License-Identifier: MIT */
/* The tracer's own footing on the host: which CPU it runs on and its privileges (locked memory:
 * mem_budget.h). */
#ifndef HVT_RECORD_HOST_H
#define HVT_RECORD_HOST_H

#include <sched.h>
#include <stdbool.h>
#include <sys/types.h>

#include "hvmtrace/error.h"

/* The CPUs any of the given threads of pid may run on (from /proc/PID/task/TID/status). */
int vcpu_allowed_cpus(pid_t pid, const int32_t *tids, unsigned ntids, cpu_set_t *set, struct hvt_err *err);

/* The highest CPU we may run on that is not in avoid; -1 if every one of ours is in avoid. */
int pick_tracer_cpu(const cpu_set_t *avoid);

/* Pins the calling thread to cpu; the message names the CPU and says which CPUs exist. */
int pin_to_cpu(int cpu, struct hvt_err *err);

/* Drops every capability (effective, permitted, inheritable, ambient, bounding) and sets no_new_privs. */
int drop_all_capabilities(struct hvt_err *err);

#endif
