/* SPDX-License-Identifier: MIT */
/*
 * resctrl memory-bandwidth monitoring (docs/hardware-notes.md §4): the fallback for a VM whose RAM is not on
 * reserved channels. A monitoring group holds the VMM's threads; the kernel counts the DRAM bytes they
 * cause per L3 domain (usually a socket). TOTAL bytes only: resctrl does not split reads from writes and
 * knows nothing of channels, and device DMA is not attributed to the group.
 */
#ifndef HVMTRACE_RESCTRL_H
#define HVMTRACE_RESCTRL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct hvt_err;

#define HVT_RESCTRL_MAX_DOMAINS 16

struct hvt_resctrl_group {
	char root[256]; /* the resctrl mount, "/sys/fs/resctrl" */
	char dir[400];  /* root/mon_groups/NAME */
	bool created;   /* we made the group (and remove it at close) */
	unsigned ndomains;
	char domains[HVT_RESCTRL_MAX_DOMAINS][32]; /* "mon_L3_00" … */
	uint64_t prev[HVT_RESCTRL_MAX_DOMAINS];
	bool have_prev[HVT_RESCTRL_MAX_DOMAINS];
};

/*
 * Creates (or reuses) the monitoring group root/mon_groups/NAME, moves every thread of pid into it and
 * takes a baseline. root NULL: "/sys/fs/resctrl". Errors say what to do: not mounted, no MBM on this CPU,
 * no free RMID, a thread the kernel refused (with info/last_cmd_status).
 */
int hvt_resctrl_open(struct hvt_resctrl_group *g, const char *root, const char *name, pid_t pid,
		     struct hvt_err *err);

/*
 * Bytes per domain since the previous read. available[i] is false when the kernel said "Unavailable" or
 * "Error" for domain i (bytes[i] is then 0, and the next available window starts afresh).
 */
int hvt_resctrl_read(struct hvt_resctrl_group *g, uint64_t *bytes, bool *available, struct hvt_err *err);

/* Removes the group if we created it (its threads return to the default group). */
void hvt_resctrl_close(struct hvt_resctrl_group *g);

#endif
