/* SPDX-License-Identifier: MIT */
/*
 * hvmtrace score (docs/score.md): a tracker's pages per window against the trace's exact sets. A window
 * is one DAMON snapshot, moved onto the trace's clock; the trace's intervals whose midpoints fall in it
 * make its truth: the union of their sets (accessed pages, or written pages of a dirty-log trace), each
 * page with the number of those intervals that touched it (its true frequency).
 */
#ifndef HVT_SCORE_SCORE_H
#define HVT_SCORE_SCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "damon_record.h"
#include "hvmtrace/pageset.h"

/* A run of GFNs [first, end) with a count: a true frequency, or DAMON's nr_accesses. */
struct score_run {
	uint64_t first, end;
	uint32_t count;
};

struct score_runs {
	struct score_run *v;
	size_t n, cap;
};

/* The figures of one window (or, summed, of all). */
struct score_counts {
	uint64_t damon_pages; /* in regions with nr_accesses >= 1 */
	uint64_t true_pages;  /* in the trace's sets of the window's intervals */
	uint64_t both_pages;  /* in both */
	uint64_t hot_k;       /* pages in each hot set: --hot % of true_pages, rounded up */
	uint64_t hot_both;    /* in DAMON's hot set and the true one */
};

/* A run's start (up) or end, for the sweep that counts overlapping runs. */
struct score_event {
	uint64_t at;
	bool up;
};

/* Collects one window's truth from the intervals' runs, then scores DAMON's regions against it. */
struct score_window {
	struct score_event *events; /* of every run of every interval added */
	size_t nevents, events_cap;
	struct score_runs truth, hot_true, hot_damon, damon;
	uint64_t intervals;
};

/* Adds one interval's set (ascending runs) to the window. 0 or -ENOMEM. */
int score_window_add(struct score_window *w, const struct hvt_runs *set);

/* The window's pages with their counts (ascending runs, count >= 1) in w->truth, the window emptied for the
 * next: what score_window_close scores against, for a caller that only counts. 0 or -ENOMEM. */
int score_window_counts(struct score_window *w, const struct score_runs **out);

/*
 * Scores regions[0, n) (byte ranges, page_size multiples, ascending) against the window's truth into *c,
 * hot_percent (1-100) sizing the hot sets, and empties the window for the next. 0 or -ENOMEM.
 */
int score_window_close(struct score_window *w, const struct damon_region *regions, size_t n,
		       uint32_t page_size, unsigned hot_percent, struct score_counts *c);
void score_window_fini(struct score_window *w);

void score_counts_add(struct score_counts *sum, const struct score_counts *c);

/* The ratios, NaN when the denominator is 0: both/damon, both/true, hot_both/hot_k, damon/true - 1. */
double score_precision(const struct score_counts *c);
double score_recall(const struct score_counts *c);
double score_hot_overlap(const struct score_counts *c);
double score_wss_error(const struct score_counts *c);

#endif
