/* SPDX-License-Identifier: MIT */
/* The regions of one DAMON snapshot, merged under a cap the way DAMON merges its own (export_damo.h). */
#ifndef HVT_REPORT_DAMO_REGIONS_H
#define HVT_REPORT_DAMO_REGIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct damo_region {
	uint64_t first, end; /* GFNs [first, end) */
	double accesses;     /* nr_accesses × pages: the mean survives merges */
	double ages;         /* age × pages */
	uint64_t touched;    /* pages with nr_accesses >= 1 before any merge: the working set */
	uint32_t nr;         /* the nr_accesses written, from damo_regions_settle */
	bool pinned;         /* never merged */
};

struct damo_regions {
	struct damo_region *v;
	size_t n, cap;
};

/* Appends [first, end) with nr_accesses and age; merged with the last region when it continues it with the
 * same nr_accesses (DAMON merges such neighbours first; their ages average). 0 or -ENOMEM. */
int damo_regions_add(struct damo_regions *r, uint64_t first, uint64_t end, uint32_t nr_accesses,
		     uint32_t age);

/*
 * Merges neighbours (contiguous, neither pinned) until at most max regions are left or none can merge, in
 * sweeps along the address space with a cost limit that grows (DAMON's doubling merge threshold), so the
 * cheapest merges come first: cost = the pages leaving or joining the working set (nr_accesses >= 1) × aggr
 * (the samples per window), plus the accesses moved, |nr_a - nr_b| × the smaller size; so a small region is
 * folded into a big neighbour of like access before two big unlike ones meet. The merged region takes the
 * size-weighted means, as DAMON's merge does. 0.
 */
int damo_regions_cap(struct damo_regions *r, size_t max, uint32_t aggr);

/*
 * Sets each region's nr (the nr_accesses written). A region all touched or all untouched is exact. A mixed
 * one (touched pages merged with untouched ones) is put in the working set (nr >= 1) or left out (nr 0) by
 * error diffusion along the address space, and the accesses rounding or leaving out moves are carried to the
 * next region: the bytes of the regions with nr >= 1 stay within a region of the pages touched, and the
 * accesses (damo's heat) within a region's rounding of the samples taken.
 */
void damo_regions_settle(struct damo_regions *r);

static inline uint32_t damo_region_nr(const struct damo_region *g)
{
	return (uint32_t)(g->accesses / (double)(g->end - g->first) + 0.5);
}

static inline uint32_t damo_region_age(const struct damo_region *g)
{
	return (uint32_t)(g->ages / (double)(g->end - g->first) + 0.5);
}

#endif
