/* SPDX-License-Identifier: MIT */
/*
 * The address axis of the pictures of pages (plot heatmap, report --html; docs/plots.md): the selected GFNs
 * cut into segments, RAM drawn to scale (the slots with the holes between them) and gaps without RAM at
 * least 1/16 as wide as the RAM shown (the PCI hole, the space below a device's RAM high up), and the
 * segments into bins of a fixed number of pages: a heatmap's rows, the HTML display's cells. Each picture
 * picks the bin size and what a gap becomes (a band of a few rows, or nothing); the rule is here, once.
 */
#ifndef HVMTRACE_GFN_BINS_H
#define HVMTRACE_GFN_BINS_H

#include <stdbool.h>
#include <stdint.h>

#include "trace_runs.h"
#include "trace_series.h"

#define HVT_BINS_MAX_SEGS 64 /* past them, what remains is drawn to scale */

/* GFNs [first, end) on bins [bin0, bin0 + nbins). */
struct hvt_bin_seg {
	uint64_t first, end;
	bool gap; /* no RAM, and wide: not to scale */
	uint64_t bin0, nbins;
};

struct hvt_gfn_bins {
	struct hvt_bin_seg seg[HVT_BINS_MAX_SEGS];
	unsigned nseg, ngaps;
	uint64_t scale_pages;   /* pages of the segments drawn to scale */
	uint64_t pages_per_bin; /* after hvt_gfn_bins_size */
	uint64_t nbins;
};

/* The segments of GFNs [first, end) given the RAM as slots (sorted, not overlapping: trace_series's). */
void hvt_gfn_bins_segment(struct hvt_gfn_bins *b, const struct series_slot *slots, uint32_t nslots,
			  uint64_t first, uint64_t end);
/* Bins of pages_per_bin pages over each segment to scale, gap_bins for each gap (0: left out). */
void hvt_gfn_bins_size(struct hvt_gfn_bins *b, uint64_t pages_per_bin, uint64_t gap_bins);
/* The segment holding gfn, or NULL outside [first, end). */
const struct hvt_bin_seg *hvt_gfn_bins_seg_of(const struct hvt_gfn_bins *b, uint64_t gfn);
/* Adds the pages of runs (inside [first, end)) to bins[] (nbins of them); pages in gaps have none. */
void hvt_gfn_bins_add(const struct hvt_gfn_bins *b, const struct hvt_runs *runs, uint32_t *bins);
/* ram[bin] = the RAM pages of each bin (0 for a gap's). */
void hvt_gfn_bins_ram(const struct hvt_gfn_bins *b, const struct series_slot *slots, uint32_t nslots,
		      uint64_t *ram);

#endif
