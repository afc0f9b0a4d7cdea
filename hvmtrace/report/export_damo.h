/* SPDX-License-Identifier: MIT */
/*
 * hvmtrace export --damo: the trace as a DAMON record in damo's own file format (json_compressed: the JSON
 * list of DamonRecord objects, zlib-compressed, what `damo record` writes by default), with DAMON's
 * semantics: the trace's intervals are the sampling intervals, --damo-aggr whole intervals make an
 * aggregation window, nr_accesses counts the samples of a window that touched a region, age counts the
 * windows since its nr_accesses last changed, and adjacent regions are merged under --damo-max-regions. The
 * mapping is in docs/analyses.md, "Exports for other tools".
 */
#ifndef HVT_REPORT_EXPORT_DAMO_H
#define HVT_REPORT_EXPORT_DAMO_H

#include <stdint.h>
#include <stdio.h>

#include "hvmtrace/select.h"

#define DAMO_DEFAULT_AGGR_INTERVALS 10   /* nr_accesses 0-10: see docs/analyses.md for why not DAMON's 20 */
#define DAMO_DEFAULT_MAX_REGIONS    1000 /* DAMON's default max_nr_regions */

struct damo_export;

/* Writes to f the GFNs [lo, hi) in windows of aggr_intervals intervals, at most max_regions regions a
 * snapshot; interval_ns is the trace's nominal interval. NULL when out of memory. */
struct damo_export *damo_export_new(FILE *f, uint64_t interval_ns, uint32_t aggr_intervals,
				    uint32_t max_regions, uint64_t lo, uint64_t hi);
/* One selected interval, in order. 0, or -ENOMEM / -EIO. */
int damo_export_interval(struct damo_export *x, const struct hvt_walk_iv *w);
/* Writes the last (maybe partial) window and ends the file. 0, or -ENOMEM / -EIO. */
int damo_export_finish(struct damo_export *x);
void damo_export_free(struct damo_export *x);

#endif
