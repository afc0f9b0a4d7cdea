/* SPDX-License-Identifier: MIT */
/*
 * A trace as the pictures need it (hvmtrace plot, report --html): its guest-physical RAM as one list of
 * ranges over every layout, per-interval counts and bytes, and the selection a command line asks for
 * (--range GFN-GFN, --from/--to). Per-page work (heatmap rows, HTML tiles, per-page counts) is done by a
 * hook called once per selected interval, so the trace is decoded once.
 */
#ifndef HVMTRACE_TRACE_SERIES_H
#define HVMTRACE_TRACE_SERIES_H

#include <stdbool.h>
#include <stdint.h>

#include "hvmtrace/layout.h"
#include "hvmtrace/options.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/trace_runs.h"

/* A memslot as the pictures draw it: GFNs [first, end), with the VMM's name. */
struct series_slot {
	uint64_t first, end;
	char name[HVT_NAME_MAX];
};

struct series_iv {
	uint64_t seq;
	double t0, t1; /* seconds since the start of the trace's first interval */
	uint32_t flags;
	uint64_t written, accessed; /* pages in the selected GFN range */
};

/* A point of --from/--to: a time since the trace's start (with a unit: "5s"), or an interval seq (bare). */
struct series_point {
	bool given, is_time;
	uint64_t v; /* ns or seq */
};

struct series_select {
	bool range_given;
	uint64_t gfn_first, gfn_end; /* --range, [first, end) */
	struct series_point from, to;
};

struct trace_series;
typedef int (*series_hook)(void *ctx, const struct trace_series *s, const struct hvt_iv_runs *ir,
			   const struct hvt_layout *l, uint64_t index);

struct trace_series {
	const char *cmd, *path;
	struct hvt_trace_reader *r;
	const struct hvt_trace_meta *meta;
	uint32_t page_size;
	struct series_slot *slots; /* the RAM of every layout, sorted by GFN, merged where slots overlap */
	uint32_t nslots;
	uint64_t gfn_first, gfn_end; /* selected: --range, or all RAM */
	struct series_iv *iv;        /* the selected intervals, in order */
	uint64_t niv;
	uint32_t nchannels;
	uint64_t *read, *write; /* niv * nchannels bytes (read holds totals when bw_total) */
	bool bandwidth, bw_total;
	bool incomplete; /* the trace ended early; the walk said so */
};

/* The --range/--from/--to options, for a command's table (sel must outlive the parse). */
#define SERIES_SELECT_OPTIONS(sel)                                                                           \
	HVT_OPT_CALLBACK(0, "range", (sel), series_parse_range, "GFN-GFN",                                   \
			 "only these guest page frames (hex 0x.. or decimal, end inclusive)"),               \
	    HVT_OPT_CALLBACK(0, "from", &(sel)->from, series_parse_point, "T|SEQ",                           \
			     "start: a time since the trace's start (5s, 1500ms) or an interval seq"),       \
	    HVT_OPT_CALLBACK(0, "to", &(sel)->to, series_parse_point, "T|SEQ",                               \
			     "end (a seq, included; or a time: the intervals before it); default: the end")

int series_parse_range(const struct hvt_option *opt, const char *arg, char *problem, size_t len);
int series_parse_point(const struct hvt_option *opt, const char *arg, char *problem, size_t len);

/*
 * Opens path and reads every interval the selection holds, calling hook (may be NULL) for each. Returns 0;
 * TRACE_INCOMPLETE (the trace ended early, and it said so: everything before is in s); or TRACE_USAGE after
 * a one-line message (not a trace, no intervals, a range outside the guest, a selection with no interval).
 * The hook's non-zero return stops the walk and is returned.
 */
int trace_series_load(struct trace_series *s, const char *cmd, const char *path,
		      const struct series_select *sel, series_hook hook, void *ctx);
/* The same in two steps: open (the RAM and the range are known after it), then walk the intervals. */
int trace_series_open(struct trace_series *s, const char *cmd, const char *path,
		      const struct series_select *sel);
int trace_series_walk(struct trace_series *s, const struct series_select *sel, series_hook hook, void *ctx);
void trace_series_fini(struct trace_series *s);

/* The GFNs of an interval's set (written or accessed) inside [first, end), run by run. */
typedef void (*series_run_fn)(void *ctx, uint64_t gfn, uint64_t count);
void series_each_run(const struct hvt_runs *runs, uint64_t first, uint64_t end, series_run_fn fn, void *ctx);

/* The channel a GFN's host memory lies on (devmem extents), or NULL when the layout does not say. */
const char *series_channel_of(const struct hvt_layout *l, uint64_t gfn);

#endif
