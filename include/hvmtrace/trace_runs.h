/* SPDX-License-Identifier: MIT */
/*
 * An interval read as runs of guest page frames instead of bitmaps: what every reading command uses
 * (export, report, plot). A bitmap costs one bit per page of its slot whatever the record holds, so a
 * small trace that declares a huge slot would cost memory and time in proportion to the slot; runs cost
 * what the record holds (docs/reliability.md, "Limits"). hvt_trace_read_interval (trace.h) still gives
 * bitmaps, for callers that want them and know the slots are small.
 */
#ifndef HVMTRACE_TRACE_RUNS_H
#define HVMTRACE_TRACE_RUNS_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* An interval as runs (struct hvt_runs, pageset.h) of GFNs: every slot's runs together, ascending. A run
 * never crosses a slot's end, and the runs of one slot are consecutive (slots do not overlap). */
struct hvt_iv_runs {
	struct hvt_interval hdr; /* fixed fields and channels; written/accessed are NULL */
	struct hvt_runs set[2];  /* [0] written, [1] accessed; empty when the flags say absent */
	size_t ch_cap;           /* hdr.channels' room, reused between reads */
};

/*
 * Reads interval i (0-based) into ir, which is zeroed before its first use and reused after (its arrays
 * grow to the largest interval). Checks everything hvt_trace_read_interval checks; the message names the
 * trace, the interval, the record and the field.
 */
int hvt_trace_read_runs(struct hvt_trace_reader *r, uint64_t i, struct hvt_iv_runs *ir, struct hvt_err *err);
void hvt_iv_runs_fini(struct hvt_iv_runs *ir);

/* The runs of r inside GFNs [first, end), cut to it: [*begin, *end_index) of r->v, the first and last
 * of which may stick out. Binary search: cost log(runs). */
void hvt_runs_range(const struct hvt_runs *r, uint64_t first, uint64_t end, size_t *begin, size_t *end_index);

#endif
