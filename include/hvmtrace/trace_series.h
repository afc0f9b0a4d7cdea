/* SPDX-License-Identifier: MIT */
/*
 * A trace as the pictures need it (hvmtrace plot, report --html): its guest-physical RAM as one list of
 * ranges over every layout, per-interval counts and bytes, over the selection a command line asks for
 * (select.h). Per-page work (heatmap rows, HTML tiles, per-page counts) is done by a hook called once per
 * selected interval with its runs cut to the range, so the trace is decoded once.
 */
#ifndef HVMTRACE_TRACE_SERIES_H
#define HVMTRACE_TRACE_SERIES_H

#include <stdbool.h>
#include <stdint.h>

#include "hvmtrace/layout.h"
#include "hvmtrace/select.h"
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
	uint64_t gfn_first, gfn_end; /* selected: --range cut to the RAM span, or all of it */
	struct series_iv *iv;        /* the selected intervals, in order */
	uint64_t niv;
	uint32_t nchannels;
	uint64_t *read, *write; /* niv * nchannels bytes (read holds totals when bw_total) */
	bool bandwidth, bw_total;
	bool incomplete; /* the trace ended early; the walk said so */
};

/*
 * Opens path and reads every interval the selection takes, calling hook (may be NULL) for each with its runs
 * cut to [s->gfn_first, s->gfn_end). Returns 0;
 * TRACE_INCOMPLETE (the trace ended early, and it said so: everything before is in s); or TRACE_USAGE after
 * a one-line message (not a trace, no intervals, a range outside the guest, a selection with no interval).
 * The hook's non-zero return stops the walk and is returned.
 */
int trace_series_load(struct trace_series *s, const char *cmd, const char *path,
		      const struct hvt_selection *sel, series_hook hook, void *ctx);
/* The same in two steps: open (the RAM and the range are known after it), then walk the intervals. */
int trace_series_open(struct trace_series *s, const char *cmd, const char *path,
		      const struct hvt_selection *sel);
int trace_series_walk(struct trace_series *s, const struct hvt_selection *sel, series_hook hook, void *ctx);
/* Between the two: how many intervals the walk will give at most (it reads them, decoding none). */
uint64_t trace_series_count(const struct trace_series *s, const struct hvt_selection *sel);
void trace_series_fini(struct trace_series *s);

/* The channel a GFN's host memory lies on (devmem extents), or NULL when the layout does not say. */
const char *series_channel_of(const struct hvt_layout *l, uint64_t gfn);

#endif
