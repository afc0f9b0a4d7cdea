/* SPDX-License-Identifier: MIT */
/*
 * report --html --by process|cgroup|kind: what the memory display says of owners (docs/plots.md, "The
 * HTML report"): each cell's owner over the selection (the one owning most of its pages, and how many;
 * by the snapshots the whole selection spans, attribute/owners_interval.h) for the hover, and the legend of
 * owners, the top writers with their written and accessed page-intervals.
 */
#ifndef HVT_REPORT_REPORT_HTML_OWNERS_H
#define HVT_REPORT_REPORT_HTML_OWNERS_H

#include "hvmtrace/gfn_bins.h"
#include "hvmtrace/trace_runs.h"
#include "hvmtrace/trace_series.h"

struct html_owners;
struct json_object;

/* The owners of `file` (snapshot N) or of the trace; NULL after one line said. */
struct html_owners *html_owners_open(const struct trace_series *s, int by, const char *file, int snapshot);
/* One selected interval's pages, counted for the legend; 0, or the exit status after one line said. */
int html_owners_interval(struct html_owners *h, const struct hvt_iv_runs *ir);
/* The "owners" object of the page's metadata; NULL: out of memory (said). */
struct json_object *html_owners_json(struct html_owners *h, const struct trace_series *s,
				     const struct hvt_gfn_bins *cells);
void html_owners_free(struct html_owners *h);

#endif
