/* SPDX-License-Identifier: MIT */
/*
 * The selection every reading command takes the same way (report, report --html, plot, export; the
 * grammar is docs/analyses.md, "Selection"): --from/--to name intervals by seq or by time, --range names
 * guest page frames. One parser, one option table entry, one rule for which intervals a selection takes,
 * and one walk that reads those intervals with their page runs cut to the range.
 */
#ifndef HVMTRACE_SELECT_H
#define HVMTRACE_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "options.h"
#include "trace.h"
#include "trace_runs.h"

enum hvt_point_kind {
	HVT_POINT_NONE,     /* not given: the first (from) or last (to) interval */
	HVT_POINT_INTERVAL, /* an interval's seq, as report's table shows it */
	HVT_POINT_TIME,     /* ns since the start of the trace's first interval */
};

struct hvt_point {
	enum hvt_point_kind kind;
	uint64_t value;
};

struct hvt_selection {
	struct hvt_point from, to; /* both ends included; by time, the intervals that overlap [from, to) */
	bool gfns_given;
	uint64_t gfn_first, gfn_last; /* inclusive */
};

/*
 * "12": interval seq 12 (decimal digits only). A decimal number ("30", "1.5", ".5") with a unit ns, us, ms,
 * s, m or h: a time since the trace's start, rounded to the ns, below 2^63 ns. Nothing else: no sign, no
 * blank, no exponent. -EINVAL with a message naming s otherwise.
 */
int hvt_point_parse(struct hvt_point *p, const char *s, struct hvt_err *err);
/* "FIRST-LAST", each decimal or 0x-hex (a leading 0 is still decimal), FIRST <= LAST: sets gfns_given and
 * the range. */
int hvt_gfn_range_parse(struct hvt_selection *sel, const char *s, struct hvt_err *err);

/* The two as option callbacks: value is a struct hvt_point (--from, --to) or the hvt_selection (--range). */
int hvt_select_opt_point(const struct hvt_option *opt, const char *arg, char *problem, size_t len);
int hvt_select_opt_range(const struct hvt_option *opt, const char *arg, char *problem, size_t len);

/* The selection's options, with their one help text, for a command's table (sel outlives the parse). */
#define HVT_SELECT_OPTIONS(sel)                                                                              \
	HVT_OPT_HEADING("Selection (docs/analyses.md)"),                                                     \
	    HVT_OPT_CALLBACK(                                                                                \
		0, "from", &(sel)->from, hvt_select_opt_point, "WHEN",                                       \
		"first interval: its number (12) or a time since the start (30s, 1.5m, 250ms)"),             \
	    HVT_OPT_CALLBACK(0, "to", &(sel)->to, hvt_select_opt_point, "WHEN",                              \
			     "last interval, as --from (by time: the intervals starting before it)"),        \
	    HVT_OPT_CALLBACK(0, "range", (sel), hvt_select_opt_range, "FIRST-LAST",                          \
			     "only these guest page frame numbers (decimal or 0x-hex, both included)")

/* Whether sel takes the interval seq over [start_ns, end_ns) (relative to the trace's first interval's
 * start); *past: it lies after the selection, and so do all that follow. */
bool hvt_select_takes(const struct hvt_selection *sel, uint64_t seq, uint64_t start_ns, uint64_t end_ns,
		      bool *past);

/* Refuses a selection that is empty whatever the trace: --from after --to (both interval numbers, or both
 * times). -EINVAL with the message; hvt_select_span checks it first, so every reading command does. */
int hvt_select_check(const struct hvt_selection *sel, struct hvt_err *err);

/*
 * The GFNs [*first, *end) sel takes of r (after hvt_select_check): the span of the RAM of every layout, cut
 * to --range. -EINVAL with a message when the range lies outside that span, or wholly in a hole of every
 * layout.
 */
int hvt_select_span(struct hvt_trace_reader *r, const struct hvt_selection *sel, uint64_t *first,
		    uint64_t *end, struct hvt_err *err);

/* ---- the walk ---- */

/* One selected interval, valid during the call. */
struct hvt_walk_iv {
	uint64_t index;               /* in the trace, from 0 */
	uint64_t k;                   /* among the selected, from 0 */
	uint64_t t0_ns;               /* CLOCK_MONOTONIC start of the trace's first interval */
	const struct hvt_iv_runs *ir; /* as recorded, its sets cut to the span (set[].pages counts them) */
	const struct hvt_layout *layout;
};
typedef int (*hvt_walk_fn)(void *ctx, const struct hvt_walk_iv *iv);

/* How a walk ended. */
struct hvt_walk_end {
	uint64_t selected; /* intervals given to fn */
	/* what the trace covers, for hvt_select_none: its first interval's start and seq, its last readable
	 * interval's seq and end (relative to that start); when some were selected, only up to the last read
	 */
	uint64_t t0_ns, first_seq, last_seq, last_end_ns;
	bool damaged; /* interval bad_index could not be read, decoded or cut (bad_rc, why); every selected
			 interval before it was walked */
	uint64_t bad_index;
	int bad_rc;
	struct hvt_err why;
};

/*
 * Reads the intervals of r that sel takes, in order, on a thread of its own a few intervals ahead (only
 * those are decoded; reading stops after the last), cuts their runs to the GFNs [first, end) and gives each
 * to fn. Returns 0 (also when an interval is damaged: see out); fn's non-zero return, which stops the walk;
 * or -errno with err set. With fn NULL it only counts them (out->selected), decoding none. The reader
 * belongs to the walk until it returns.
 */
int hvt_select_walk(struct hvt_trace_reader *r, const struct hvt_selection *sel, uint64_t first, uint64_t end,
		    hvt_walk_fn fn, void *ctx, struct hvt_walk_end *out, struct hvt_err *err);

/* The message of a walk that selected nothing: -EINVAL. */
int hvt_select_none(const struct hvt_selection *sel, const struct hvt_walk_end *end, struct hvt_err *err);

/* The runs of src inside [lo, hi): src itself when all are, else dst (emptied first) holds them; NULL when
 * out of memory. */
const struct hvt_runs *hvt_runs_clip(struct hvt_runs *dst, const struct hvt_runs *src, uint64_t lo,
				     uint64_t hi);

#endif
