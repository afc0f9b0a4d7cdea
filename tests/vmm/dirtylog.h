/* SPDX-License-Identifier: MIT */
/* KVM dirty logging in manual-protect mode: arming, disarming and one harvest into shared bitmaps. */
#ifndef HVMTRACE_VMM_DIRTYLOG_H
#define HVMTRACE_VMM_DIRTYLOG_H

#include <stdint.h>

struct vm;
struct hvt_layout;
struct hvt_err;

struct dirtylog_result {
	uint64_t t_end_ns;    /* just before the first KVM_GET_DIRTY_LOG */
	uint64_t t_done_ns;   /* just after the last KVM_CLEAR_DIRTY_LOG */
	uint64_t dirty_pages; /* bits set in the bitmaps */
};

/* Turns on manual-protect dirty logging for every slot; *t_armed_ns is taken once all are armed. */
int dirtylog_arm(struct vm *vm, uint64_t *t_armed_ns, struct hvt_err *err);
int dirtylog_disarm(struct vm *vm, struct hvt_err *err);

/* Snapshots every slot's log into bitmaps (laid out as hvt_layout_bitmap_offset says) and re-arms exactly
 * the pages of the snapshot. */
int dirtylog_harvest(struct vm *vm, const struct hvt_layout *l, void *bitmaps, struct dirtylog_result *r,
		     struct hvt_err *err);

#endif
