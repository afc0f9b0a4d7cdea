/* SPDX-License-Identifier: MIT */
/*
 * hvmtrace export's forms for other tools (docs/analyses.md, "Exports"): pcm-memory's -csv layout and raw
 * per-interval bitmaps in KVM's dirty-log layout (damo's record: export_damo.h).
 */
#ifndef HVT_REPORT_EXPORT_INTEROP_H
#define HVT_REPORT_EXPORT_INTEROP_H

#include <stdbool.h>
#include <stdio.h>

struct hvt_interval;
struct hvt_iv_runs;
struct hvt_layout;
struct hvt_trace_meta;

/* 0, or -1 after saying (one line) why the trace has no pcm-memory form: no bandwidth, or only totals. */
int export_pcm_csv_check(const struct hvt_trace_meta *m, const char *path);
/* What comes before the intervals. */
void export_pcm_csv_header(FILE *f, const struct hvt_trace_meta *m);
void export_raw_header(FILE *f);

/* Slot s of l cut to the selected GFNs [lo, hi): false when nothing of it is left. */
bool export_slot_cut(const struct hvt_layout *l, uint32_t s, uint64_t lo, uint64_t hi, uint64_t *first,
		     uint64_t *npages);

/* The per-interval forms cover the slots of l cut to the selected GFNs [lo, hi) (export_slot_cut). */
void export_pcm_csv_interval(FILE *f, const struct hvt_interval *iv, const struct hvt_trace_meta *m);
/* Writes the bitmaps as it goes, a buffer at a time: its output is a bit per page of every slot, whatever
 * the trace holds, but its memory is not. */
void export_raw_interval(FILE *f, const struct hvt_iv_runs *ir, const struct hvt_layout *l, uint64_t lo,
			 uint64_t hi);

#endif
