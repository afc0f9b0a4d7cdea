/* SPDX-License-Identifier: MIT */
/* Internal to the analyses (lib/analysis_*.c): run lists and the sliding-window working set. */
#ifndef HVMTRACE_LIB_ANALYSIS_INTERNAL_H
#define HVMTRACE_LIB_ANALYSIS_INTERNAL_H

#include <stdint.h>

#include "trace_runs.h"

/* dst = a ∪ b (runs ascending and disjoint; touching runs are joined). 0 or -ENOMEM. */
int hvt_runs_union(struct hvt_runs *dst, const struct hvt_runs *a, const struct hvt_runs *b);
/* |a ∪ b| without building it. */
uint64_t hvt_runs_union_pages(const struct hvt_runs *a, const struct hvt_runs *b);

/*
 * Pages in the union of the last `size` run lists pushed (fewer at the start), in O(runs) per push: van
 * Herk / Gil-Werman, which needs only an associative, idempotent operation, and union is one. Lists are cut
 * into blocks of `size`; the window ending at k is the union of a suffix of the previous block and a prefix
 * of the current one, both kept ready.
 */
struct hvt_window {
	uint32_t size, fill;    /* fill: lists of the current block pushed */
	struct hvt_runs *cur;   /* [size]: the current block's lists */
	struct hvt_runs prefix; /* union of cur[0 .. fill-1] */
	struct hvt_runs *suf;   /* [size]: suf[j] = union of the previous block's lists j .. size-1 */
	bool have_prev;
	struct hvt_runs tmp;
};

int hvt_window_init(struct hvt_window *w, uint32_t size);
int hvt_window_push(struct hvt_window *w, const struct hvt_run *runs, size_t n, uint64_t *pages);
void hvt_window_fini(struct hvt_window *w);

#endif
