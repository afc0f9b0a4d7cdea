/* SPDX-License-Identifier: MIT */
/*
 * A VM's DRAM bandwidth per interval, for `hvmtrace record`: the CAS counters of the channels its devmem
 * extents live on (from the layout's extent channel ids), or, when asked, resctrl's total bytes of the VMM's
 * threads as a labelled fallback. Open it while the tracer still holds its privileges.
 */
#ifndef HVMTRACE_VM_BANDWIDTH_H
#define HVMTRACE_VM_BANDWIDTH_H

#include <stdbool.h>
#include <sys/types.h>

#include "trace_meta.h" /* enum hvt_bw_source */

struct hvt_err;
struct hvt_interval;
struct hvt_layout;

struct hvt_vm_bw_opts {
	const char *sysfs_root;   /* PMU tree (NULL: /sys) */
	bool resctrl_fallback;    /* no channel in the layout: use resctrl total bytes */
	const char *resctrl_root; /* NULL: /sys/fs/resctrl */
	pid_t vmm_pid;
	const char *group_name; /* resctrl monitoring group to create ("hvmtrace-<vm>-<pid>") */
};

struct hvt_vm_bw;

/* *bw is NULL (and 0 returned) when there is nothing to measure: no channel ids and no fallback. */
int hvt_vm_bw_open(struct hvt_vm_bw **bw, const struct hvt_layout *l, const struct hvt_vm_bw_opts *o,
		   struct hvt_err *err);
/* Fills the trace metadata's bandwidth items: available, source and channels (none for NULL); -ENOMEM. */
int hvt_vm_bw_describe(const struct hvt_vm_bw *bw, struct hvt_trace_meta *m);
/* HVT_BW_SOURCE_NONE for NULL. */
enum hvt_bw_source hvt_vm_bw_source(const struct hvt_vm_bw *bw);
/* Reads the window since the previous call into iv (sets HVT_IV_BANDWIDTH, unless a counter did not count;
 * resctrl also sets HVT_IV_BW_TOTAL: its bytes are totals, not split into reads and writes). */
int hvt_vm_bw_fill(struct hvt_vm_bw *bw, struct hvt_interval *iv, struct hvt_err *err);
void hvt_vm_bw_close(struct hvt_vm_bw *bw);

#endif
