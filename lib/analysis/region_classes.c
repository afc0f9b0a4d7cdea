// SPDX-License-Identifier: MIT
/*
 * The 2 MiB regions' classes (analysis.h), from the page spans: a region is summed page by page where a
 * touched chunk lies, and the untouched RAM between chunks gives its whole regions at once, so the walk's
 * cost follows the touched pages and the RAM runs, not the range's size.
 */
#include <errno.h>
#include <stdlib.h>

#include "hvmtrace/analysis.h"

static enum hvt_page_class region_class(const uint64_t *pages)
{
	enum hvt_page_class best = HVT_CLASS_COUNT;

	/* touched classes first, in enum order (hotter first), so ties go to the hotter */
	for (int c = HVT_CLASS_WRITE_HEAVY; c <= HVT_CLASS_COLD; c++)
		if (pages[c] && (best == HVT_CLASS_COUNT || pages[c] > pages[best]))
			best = (enum hvt_page_class)c;
	if (best != HVT_CLASS_COUNT)
		return best;
	return pages[HVT_CLASS_UNKNOWN] > pages[HVT_CLASS_UNTOUCHED] ? HVT_CLASS_UNKNOWN
								     : HVT_CLASS_UNTOUCHED;
}

struct region_walk {
	const struct hvt_analysis *a;
	const struct hvt_class_thresholds *t;
	hvt_region_fn fn;
	void *ctx;
	struct hvt_region_class cur; /* the region being summed */
	bool open;                   /* cur holds pages */
};

static int emit(struct region_walk *x, struct hvt_region_class *r, uint64_t repeat)
{
	r->cls = region_class(r->pages);
	return x->fn(x->ctx, r, repeat);
}

/* Ends the region being summed unless it is the one at base. */
static int leave_unless(struct region_walk *x, uint64_t base)
{
	int rc;

	if (!x->open || x->cur.gfn_first == base)
		return 0;
	x->open = false;
	if ((rc = emit(x, &x->cur, 1)))
		return rc;
	return 0;
}

static int region_span(void *ctx, const struct hvt_page_span *s)
{
	struct region_walk *x = ctx;
	const struct hvt_analysis *a = x->a;
	enum hvt_page_class zero = hvt_class_of(a, x->t, 0, 0);
	bool untouched = !s->count_of[0] && !s->count_of[1];
	uint64_t g = a->gfn_first + s->first, end = g + s->count;
	int rc;

	while (g < end) {
		uint64_t base = g / HVT_REGION_PAGES * HVT_REGION_PAGES;
		uint64_t stop = base + HVT_REGION_PAGES < end ? base + HVT_REGION_PAGES : end;

		if ((rc = leave_unless(x, base)))
			return rc;
		if (untouched && g == base && end - g >= HVT_REGION_PAGES) {
			/* whole untouched regions, all alike */
			struct hvt_region_class r = {.gfn_first = base};
			uint64_t m = (end - g) / HVT_REGION_PAGES;

			r.pages[zero] = HVT_REGION_PAGES;
			if ((rc = emit(x, &r, m)))
				return rc;
			g += m * HVT_REGION_PAGES;
			continue;
		}
		if (!x->open)
			x->cur = (struct hvt_region_class){.gfn_first = base};
		x->open = true;
		if (untouched)
			x->cur.pages[zero] += stop - g;
		else
			for (uint64_t j = g - a->gfn_first - s->first; g < stop; g++, j++)
				x->cur.pages[hvt_class_of(a, x->t, s->count_of[0] ? s->count_of[0][j] : 0,
							  s->count_of[1] ? s->count_of[1][j] : 0)]++;
		g = stop;
	}
	return 0;
}

int hvt_region_walk(const struct hvt_analysis *a, const struct hvt_class_thresholds *t, hvt_region_fn fn,
		    void *ctx)
{
	struct region_walk x = {.a = a, .t = t, .fn = fn, .ctx = ctx};
	int rc = hvt_page_spans(a, region_span, &x);

	if (!rc && x.open)
		rc = emit(&x, &x.cur, 1);
	return rc;
}

struct region_list {
	struct hvt_region_class *v;
	uint64_t n, max;
};

static int count_region(void *ctx, const struct hvt_region_class *r, uint64_t repeat)
{
	struct region_list *l = ctx;

	(void)r;
	if (repeat > l->max - l->n)
		return -E2BIG;
	l->n += repeat;
	return 0;
}

static int list_region(void *ctx, const struct hvt_region_class *r, uint64_t repeat)
{
	struct region_list *l = ctx;

	for (uint64_t i = 0; i < repeat; i++) {
		l->v[l->n] = *r;
		l->v[l->n++].gfn_first = r->gfn_first + i * HVT_REGION_PAGES;
	}
	return 0;
}

int hvt_region_classes(const struct hvt_analysis *a, const struct hvt_class_thresholds *t, uint64_t max,
		       struct hvt_region_class **out, uint64_t *nout)
{
	struct region_list l = {.max = max};
	int rc = hvt_region_walk(a, t, count_region, &l); /* first how many: the list is allocated once */

	if (rc)
		return rc;
	if (!(l.v = malloc((l.n ? l.n : 1) * sizeof(*l.v))))
		return -ENOMEM;
	l.n = 0;
	hvt_region_walk(a, t, list_region, &l);
	*out = l.v;
	*nout = l.n;
	return 0;
}
