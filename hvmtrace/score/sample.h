/* SPDX-License-Identifier: MIT */
/*
 * hvmtrace score --sample (docs/score.md): a sampling tracker modelled on the trace's own sets, scored as a
 * DAMON record is. Guest RAM is cut into blocks of B pages, each a region; in each interval one page of a
 * block is looked at, and the block's nr_accesses is the number of the window's intervals whose set held
 * that page. every:N looks at each block's first page (B = N); random:F at a page drawn anew for every
 * block and interval (B = 1/F rounded, seeded), as DAMON draws its sampling address in each region.
 */
#ifndef HVT_SCORE_SAMPLE_H
#define HVT_SCORE_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "damon_record.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/pageset.h"
#include "score.h"

struct sample_spec {
	bool random;
	uint64_t block; /* pages a sample stands for */
	uint64_t seed;
};

/* "every:N" (N >= 1) or "random:F[:SEED]" (0 < F <= 1; SEED default 1). 0, or -1 with the problem. */
int sample_spec_parse(const char *s, struct sample_spec *sp, char *problem, size_t len);
/* "the first page of every 64", "a random page of every 100 (seed 1)" */
void sample_spec_describe(const struct sample_spec *sp, char *buf, size_t len);

struct sample_tracker {
	struct sample_spec spec;
	struct score_window blocks; /* in block numbers: the blocks whose sampled page was in a set */
	struct hvt_runs hits;       /* one interval's, reused */
	struct damon_region *regions;
	size_t nregions, regions_cap;
};

/* Looks at interval number iv (its set: ascending runs of GFNs). 0 or -ENOMEM. */
int sample_interval(struct sample_tracker *t, uint64_t iv, const struct hvt_runs *set);
/* The window's regions (nr_accesses >= 1 only, clipped to l's slots, ascending) in t->regions[0,
 * t->nregions), the window emptied for the next. 0 or -ENOMEM. */
int sample_window_regions(struct sample_tracker *t, const struct hvt_layout *l);
void sample_tracker_fini(struct sample_tracker *t);

#endif
