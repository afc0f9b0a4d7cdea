// SPDX-License-Identifier: MIT
/*
 * The scoring of one window (score.h). Everything is runs of pages, never a page at a time: the truth is
 * swept from the intervals' run starts and ends, and every comparison is a merge of two ascending lists,
 * so a window costs its runs and DAMON's regions, not the guest's size.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "hvmtrace/util.h"
#include "score.h"

static int runs_push(struct score_runs *r, uint64_t first, uint64_t end, uint32_t count)
{
	if (end <= first)
		return 0;
	if (r->n && r->v[r->n - 1].end == first && r->v[r->n - 1].count == count) {
		r->v[r->n - 1].end = end;
		return 0;
	}
	if (hvt_array_room((void **)&r->v, &r->cap, r->n, sizeof(*r->v)))
		return -ENOMEM;
	r->v[r->n++] = (struct score_run){first, end, count};
	return 0;
}

int score_window_add(struct score_window *w, const struct hvt_runs *set)
{
	for (size_t i = 0; i < set->n; i++)
		for (int k = 0; k < 2; k++) {
			if (hvt_array_room((void **)&w->events, &w->events_cap, w->nevents,
					   sizeof(*w->events)))
				return -ENOMEM;
			w->events[w->nevents++] =
			    (struct score_event){k ? set->v[i].first + set->v[i].count : set->v[i].first, !k};
		}
	w->intervals++;
	return 0;
}

static int cmp_event(const void *a, const void *b)
{
	const struct score_event *p = a, *q = b;

	return p->at < q->at ? -1 : p->at > q->at;
}

/* The truth: each page touched by some interval, with the number of intervals that touched it. */
static int sweep_truth(struct score_window *w)
{
	uint32_t depth = 0;
	uint64_t at = 0;
	int rc = 0;

	w->truth.n = 0;
	qsort(w->events, w->nevents, sizeof(*w->events), cmp_event);
	for (size_t i = 0; i < w->nevents && !rc; i++) {
		const struct score_event *e = &w->events[i];

		if (depth && e->at > at)
			rc = runs_push(&w->truth, at, e->at, depth);
		at = e->at;
		depth += e->up ? 1 : (uint32_t)-1;
	}
	return rc;
}

int score_window_counts(struct score_window *w, const struct score_runs **out)
{
	int rc = sweep_truth(w);

	w->nevents = 0;
	w->intervals = 0;
	*out = &w->truth;
	return rc;
}

/* Pages of a and b (ascending, apart) that both hold. */
static uint64_t overlap(const struct score_runs *a, const struct score_runs *b)
{
	uint64_t both = 0;
	size_t i = 0, j = 0;

	while (i < a->n && j < b->n) {
		uint64_t lo = a->v[i].first > b->v[j].first ? a->v[i].first : b->v[j].first,
			 hi = a->v[i].end < b->v[j].end ? a->v[i].end : b->v[j].end;

		if (hi > lo)
			both += hi - lo;
		if (a->v[i].end < b->v[j].end)
			i++;
		else
			j++;
	}
	return both;
}

/* Hottest first; among equals, lower addresses first. */
static int cmp_hot(const void *a, const void *b)
{
	const struct score_run *p = a, *q = b;

	if (p->count != q->count)
		return p->count > q->count ? -1 : 1;
	return p->first < q->first ? -1 : p->first > q->first;
}

static int cmp_first(const void *a, const void *b)
{
	const struct score_run *p = a, *q = b;

	return p->first < q->first ? -1 : p->first > q->first;
}

/* The k hottest pages of src (count >= 1) into dst, ascending: fewer when src holds fewer. */
static int hot_set(struct score_runs *dst, const struct score_runs *src, uint64_t k)
{
	size_t kept = 0;
	int rc = 0;

	dst->n = 0;
	for (size_t i = 0; i < src->n && !rc; i++)
		if (src->v[i].count) {
			if (hvt_array_room((void **)&dst->v, &dst->cap, dst->n, sizeof(*dst->v)))
				rc = -ENOMEM;
			else
				dst->v[dst->n++] = src->v[i];
		}
	if (rc || !dst->n) /* qsort must not be given dst->v NULL (no page with a count) */
		return rc;
	qsort(dst->v, dst->n, sizeof(*dst->v), cmp_hot);
	for (size_t i = 0; i < dst->n && k; i++) {
		struct score_run *r = &dst->v[i];
		uint64_t take = r->end - r->first < k ? r->end - r->first : k;

		r->end = r->first + take;
		k -= take;
		kept = i + 1;
	}
	dst->n = kept;
	qsort(dst->v, dst->n, sizeof(*dst->v), cmp_first);
	return 0;
}

int score_window_close(struct score_window *w, const struct damon_region *regions, size_t n,
		       uint32_t page_size, unsigned hot_percent, struct score_counts *c)
{
	int rc = sweep_truth(w);

	*c = (struct score_counts){0};
	w->damon.n = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		uint64_t first = regions[i].start / page_size, end = regions[i].end / page_size;

		if (regions[i].nr_accesses) {
			rc = runs_push(&w->damon, first, end, regions[i].nr_accesses);
			c->damon_pages += end - first;
		}
	}
	for (size_t i = 0; i < w->truth.n; i++)
		c->true_pages += w->truth.v[i].end - w->truth.v[i].first;
	if (rc)
		return rc;
	c->both_pages = overlap(&w->damon, &w->truth);
	c->hot_k = (c->true_pages * hot_percent + 99) / 100;
	if ((rc = hot_set(&w->hot_true, &w->truth, c->hot_k)) ||
	    (rc = hot_set(&w->hot_damon, &w->damon, c->hot_k)))
		return rc;
	c->hot_both = overlap(&w->hot_damon, &w->hot_true);
	w->nevents = 0;
	w->intervals = 0;
	return 0;
}

void score_window_fini(struct score_window *w)
{
	free(w->events);
	free(w->truth.v);
	free(w->hot_true.v);
	free(w->hot_damon.v);
	free(w->damon.v);
	*w = (struct score_window){0};
}

void score_counts_add(struct score_counts *sum, const struct score_counts *c)
{
	sum->damon_pages += c->damon_pages;
	sum->true_pages += c->true_pages;
	sum->both_pages += c->both_pages;
	sum->hot_k += c->hot_k;
	sum->hot_both += c->hot_both;
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : NAN;
}

double score_precision(const struct score_counts *c)
{
	return ratio(c->both_pages, c->damon_pages);
}

double score_recall(const struct score_counts *c)
{
	return ratio(c->both_pages, c->true_pages);
}

double score_hot_overlap(const struct score_counts *c)
{
	return ratio(c->hot_both, c->hot_k);
}

double score_wss_error(const struct score_counts *c)
{
	return c->true_pages ? ((double)c->damon_pages - (double)c->true_pages) / (double)c->true_pages : NAN;
}
