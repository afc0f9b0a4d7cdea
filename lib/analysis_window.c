// SPDX-License-Identifier: MIT
/* Run-list unions and the sliding-window working set (analysis_internal.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"

/* Merges a and b in GFN order, handing each run of the union to emit once it is complete. */
#define MERGE_RUNS(a, b, emit)                                                                               \
	do {                                                                                                 \
		size_t i_ = 0, j_ = 0;                                                                       \
		uint64_t f_ = 0, e_ = 0;                                                                     \
		bool open_ = false;                                                                          \
		while (i_ < (a)->n || j_ < (b)->n) {                                                         \
			const struct hvt_run *r_ =                                                           \
			    j_ == (b)->n || (i_ < (a)->n && (a)->v[i_].first <= (b)->v[j_].first)            \
				? &(a)->v[i_++]                                                              \
				: &(b)->v[j_++];                                                             \
			if (open_ && r_->first <= e_) {                                                      \
				if (r_->first + r_->count > e_)                                              \
					e_ = r_->first + r_->count;                                          \
				continue;                                                                    \
			}                                                                                    \
			if (open_)                                                                           \
				emit(f_, e_ - f_);                                                           \
			f_ = r_->first;                                                                      \
			e_ = r_->first + r_->count;                                                          \
			open_ = true;                                                                        \
		}                                                                                            \
		if (open_)                                                                                   \
			emit(f_, e_ - f_);                                                                   \
	} while (0)

int hvt_runs_union(struct hvt_runs *dst, const struct hvt_runs *a, const struct hvt_runs *b)
{
	int rc = 0;

	dst->n = 0;
	dst->pages = 0;
#define PUSH(f, c)                                                                                           \
	do {                                                                                                 \
		rc |= hvt_runs_push(dst, f, c);                                                              \
		dst->pages += (c);                                                                           \
	} while (0)
	MERGE_RUNS(a, b, PUSH);
#undef PUSH
	return rc ? -ENOMEM : 0;
}

uint64_t hvt_runs_union_pages(const struct hvt_runs *a, const struct hvt_runs *b)
{
	uint64_t pages = 0;

#define ADD(f, c) (pages += (c))
	MERGE_RUNS(a, b, ADD);
#undef ADD
	return pages;
}

int hvt_window_init(struct hvt_window *w, uint32_t size)
{
	memset(w, 0, sizeof(*w));
	w->size = size ? size : 1;
	w->cur = calloc(w->size, sizeof(*w->cur));
	w->suf = calloc(w->size, sizeof(*w->suf));
	if (!w->cur || !w->suf) {
		hvt_window_fini(w);
		return -ENOMEM;
	}
	return 0;
}

static int copy_runs(struct hvt_runs *dst, const struct hvt_run *v, size_t n)
{
	dst->n = 0;
	dst->pages = 0;
	for (size_t i = 0; i < n; i++) {
		if (hvt_runs_push(dst, v[i].first, v[i].count))
			return -ENOMEM;
		dst->pages += v[i].count;
	}
	return 0;
}

/* The block is complete: its suffix unions become the previous block's, its lists are free again. */
static int close_block(struct hvt_window *w)
{
	static const struct hvt_runs none;
	uint32_t b = w->size;

	for (uint32_t j = b; j-- > 0;)
		if (hvt_runs_union(&w->suf[j], &w->cur[j], j + 1 < b ? &w->suf[j + 1] : &none))
			return -ENOMEM;
	w->have_prev = true;
	w->fill = 0;
	w->prefix.n = 0;
	w->prefix.pages = 0;
	return 0;
}

int hvt_window_push(struct hvt_window *w, const struct hvt_run *runs, size_t n, uint64_t *pages)
{
	uint32_t j = w->fill;
	struct hvt_runs t;

	if (copy_runs(&w->cur[j], runs, n) || hvt_runs_union(&w->tmp, &w->prefix, &w->cur[j]))
		return -ENOMEM;
	/* swap: prefix takes the new union, tmp keeps the old buffer for next time */
	t = w->prefix;
	w->prefix = w->tmp;
	w->tmp = t;
	w->fill++;
	if (j + 1 == w->size || !w->have_prev)
		*pages = w->prefix.pages; /* the window is this block's prefix (or all there has been) */
	else
		*pages = hvt_runs_union_pages(&w->suf[j + 1], &w->prefix);
	return w->fill == w->size ? close_block(w) : 0;
}

void hvt_window_fini(struct hvt_window *w)
{
	for (uint32_t i = 0; w->cur && i < w->size; i++)
		free(w->cur[i].v);
	for (uint32_t i = 0; w->suf && i < w->size; i++)
		free(w->suf[i].v);
	free(w->cur);
	free(w->suf);
	free(w->prefix.v);
	free(w->tmp.v);
	memset(w, 0, sizeof(*w));
}
