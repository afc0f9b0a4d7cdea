// SPDX-License-Identifier: MIT
/* A snapshot's regions and their merging under a cap (damo_regions.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "damo_regions.h"
#include "hvmtrace/util.h"

int damo_regions_add(struct damo_regions *r, uint64_t first, uint64_t end, uint32_t nr_accesses, uint32_t age)
{
	struct damo_region *last = r->n ? &r->v[r->n - 1] : NULL;
	double pages = (double)(end - first);

	if (last && !last->pinned && last->end == first && damo_region_nr(last) == nr_accesses) {
		last->end = end;
		last->accesses += nr_accesses * pages;
		last->ages += age * pages;
		last->touched += nr_accesses ? end - first : 0;
		return 0;
	}
	if (hvt_array_room((void **)&r->v, &r->cap, r->n, sizeof(*r->v)))
		return -ENOMEM;
	r->v[r->n++] = (struct damo_region){
	    first, end, nr_accesses * pages, age * pages, nr_accesses ? end - first : 0, 0, false};
	return 0;
}

/*
 * What merging x and y loses: the pages that leave or join the working set (damo's wss counts the regions
 * with nr_accesses >= 1), each as much as a page's every sample, then the accesses moved, |nr_x - nr_y| ×
 * the smaller size. The merged region's accesses are the sum of both, so the heat is kept either way.
 */
static double merge_cost(const struct damo_region *x, const struct damo_region *y, uint32_t aggr)
{
	double px = (double)(x->end - x->first), py = (double)(y->end - y->first);
	bool in_x = damo_region_nr(x) >= 1, in_y = damo_region_nr(y) >= 1,
	     in_xy = (x->accesses + y->accesses) / (px + py) + 0.5 >= 1;
	double wss = fabs((in_xy ? px + py : 0) - (in_x ? px : 0) - (in_y ? py : 0));

	return wss * aggr + fabs(x->accesses / px - y->accesses / py) * (px < py ? px : py);
}

static bool mergeable(const struct damo_region *x, const struct damo_region *y)
{
	return x->end == y->first && !x->pinned && !y->pinned;
}

static void merge_into(struct damo_region *x, const struct damo_region *y)
{
	x->end = y->end;
	x->accesses += y->accesses;
	x->ages += y->ages;
	x->touched += y->touched;
}

/* One sweep: merges each region into the one before it while that costs at most limit and more than max
 * regions are left; returns the smallest cost above limit seen (INFINITY: none). */
static double sweep(struct damo_regions *r, size_t max, double limit, uint32_t aggr)
{
	double next = INFINITY;
	size_t out = 0, n = r->n;

	for (size_t i = 0; i < r->n; i++) {
		struct damo_region *last = out ? &r->v[out - 1] : NULL;

		if (last && n > max && mergeable(last, &r->v[i])) {
			double c = merge_cost(last, &r->v[i], aggr);

			if (c <= limit) {
				merge_into(last, &r->v[i]);
				n--;
				continue;
			}
			next = c < next ? c : next;
		}
		r->v[out++] = r->v[i];
	}
	r->n = out;
	return next;
}

int damo_regions_cap(struct damo_regions *r, size_t max, uint32_t aggr)
{
	double limit = 0;
	size_t out = 0;

	/* DAMON's way: sweeps with a threshold that grows until the regions fit; here it doubles from the
	 * cheapest merge the last sweep left, so each sweep takes the cheapest merges first */
	while (r->n > max && limit < INFINITY) {
		double next = sweep(r, max, limit, aggr);

		limit = next < INFINITY ? (next > 2 * limit ? next : 2 * limit) : INFINITY;
	}
	/* merges of unlike neighbours leave like ones side by side: those merge too, as they would have first
	 */

	for (size_t i = 0; i < r->n; i++)
		if (out && mergeable(&r->v[out - 1], &r->v[i]) &&
		    damo_region_nr(&r->v[out - 1]) == damo_region_nr(&r->v[i]))
			merge_into(&r->v[out - 1], &r->v[i]);
		else
			r->v[out++] = r->v[i];
	r->n = out;
	return 0;
}

void damo_regions_settle(struct damo_regions *r)
{
	double missed = 0;  /* touched pages the regions so far leave out of the working set (< 0: put in) */
	double carried = 0; /* accesses the regions so far leave out (< 0: added by rounding) */
	struct damo_region *last_in = NULL;

	for (size_t i = 0; i < r->n; i++) {
		struct damo_region *g = &r->v[i];
		double pages = (double)(g->end - g->first), touched = (double)g->touched, nr;
		bool in = g->touched == g->end - g->first ||
			  (g->touched && fabs(missed + touched - pages) < fabs(missed + touched));

		nr = in ? floor((g->accesses + carried) / pages + 0.5) : 0;
		if (in && nr < 1)
			nr = 1;
		g->nr = (uint32_t)nr;
		missed += touched - (in ? pages : 0);
		carried += g->accesses - nr * pages;
		if (in)
			last_in = g;
	}
	/* what is still carried after the last region goes back to the last one in the working set */
	if (last_in) {
		double pages = (double)(last_in->end - last_in->first),
		       nr = floor((last_in->nr * pages + carried) / pages + 0.5);

		last_in->nr = nr < 1 ? 1 : (uint32_t)nr;
	}
}
