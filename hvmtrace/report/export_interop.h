/* SPDX-License-Identifier: MIT */
/*
 * hvmtrace export's raw per-interval bitmaps in KVM's dirty-log layout (docs/analyses.md, "Exports"; damo's
 * record: export_damo.h; pcm-memory's CSV: export_pcm.h).
 */
#ifndef HVT_REPORT_EXPORT_INTEROP_H
#define HVT_REPORT_EXPORT_INTEROP_H

#include <stdbool.h>
#include <stdio.h>

struct hvt_iv_runs;
struct hvt_layout;

/* What comes before the intervals. */
void export_raw_header(FILE *f);

/* Slot s of l cut to the selected GFNs [lo, hi): false when nothing of it is left. */
bool export_slot_cut(const struct hvt_layout *l, uint32_t s, uint64_t lo, uint64_t hi, uint64_t *first,
		     uint64_t *npages);

/* The per-interval forms cover the slots of l cut to the selected GFNs [lo, hi) (export_slot_cut). */
/* Writes the bitmaps as it goes, a buffer at a time: its output is a bit per page of every slot, whatever
 * the trace holds, but its memory is not. */
void export_raw_interval(FILE *f, const struct hvt_iv_runs *ir, const struct hvt_layout *l, uint64_t lo,
			 uint64_t hi);

#endif
