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

/* A candidate merge of region a with its successor b, valid while both are as they were (stamps). */
struct pair {
	double cost;
	uint64_t pages; /* of both: ties go to the smaller merge */
	size_t a, b;
	uint32_t stamp_a, stamp_b;
};

struct heap {
	struct pair *v;
	size_t n, cap;
};

static bool before(const struct pair *x, const struct pair *y)
{
	return x->cost < y->cost || (x->cost == y->cost && x->pages < y->pages);
}

static int heap_push(struct heap *h, struct pair p)
{
	size_t i;

	if (hvt_array_room((void **)&h->v, &h->cap, h->n, sizeof(*h->v)))
		return -ENOMEM;
	for (i = h->n++; i && before(&p, &h->v[(i - 1) / 2]); i = (i - 1) / 2)
		h->v[i] = h->v[(i - 1) / 2];
	h->v[i] = p;
	return 0;
}

static struct pair heap_pop(struct heap *h)
{
	struct pair top = h->v[0], last = h->v[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c]))
			c++;
		if (!before(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = last;
	return top;
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

struct links {
	uint32_t aggr;
	size_t *next; /* r->n: none */
	size_t *prev;
	uint32_t *stamp;
	bool *dead;
};

static int offer(struct heap *h, const struct damo_regions *r, const struct links *k, size_t a)
{
	size_t b = a < r->n ? k->next[a] : r->n;
	const struct damo_region *x, *y;
	uint64_t px, py;

	if (a >= r->n || b >= r->n)
		return 0;
	x = &r->v[a];
	y = &r->v[b];
	if (x->end != y->first || x->pinned || y->pinned)
		return 0;
	px = x->end - x->first;
	py = y->end - y->first;
	return heap_push(h,
			 (struct pair){merge_cost(x, y, k->aggr), px + py, a, b, k->stamp[a], k->stamp[b]});
}

int damo_regions_cap(struct damo_regions *r, size_t max, uint32_t aggr)
{
	struct heap h = {0};
	struct links k = {aggr, malloc(r->n * sizeof(size_t)), malloc(r->n * sizeof(size_t)),
			  calloc(r->n, sizeof(uint32_t)), calloc(r->n, sizeof(bool))};
	size_t alive = r->n, out = 0;
	int rc = 0;

	if (r->n <= max)
		goto done;
	if (!k.next || !k.prev || !k.stamp || !k.dead) {
		rc = -ENOMEM;
		goto done;
	}
	for (size_t i = 0; i < r->n; i++) {
		k.next[i] = i + 1;
		k.prev[i] = i ? i - 1 : r->n;
	}
	for (size_t i = 0; i + 1 < r->n && !rc; i++)
		rc = offer(&h, r, &k, i);
	while (!rc && alive > max && h.n) {
		struct pair p = heap_pop(&h);
		struct damo_region *a = &r->v[p.a], *b = &r->v[p.b];

		if (k.dead[p.a] || k.dead[p.b] || k.stamp[p.a] != p.stamp_a || k.stamp[p.b] != p.stamp_b)
			continue;
		a->end = b->end;
		a->accesses += b->accesses;
		a->ages += b->ages;
		a->touched += b->touched;
		k.dead[p.b] = true;
		k.stamp[p.a]++;
		k.next[p.a] = k.next[p.b];
		if (k.next[p.b] < r->n)
			k.prev[k.next[p.b]] = p.a;
		alive--;
		rc = offer(&h, r, &k, k.prev[p.a]);
		if (!rc)
			rc = offer(&h, r, &k, p.a);
	}
	/* merges of unlike neighbours leave like ones side by side: those merge too, as they would have first
	 */
	for (size_t i = 0; i < r->n && !rc; i++) {
		struct damo_region *last = out ? &r->v[out - 1] : NULL, *g = &r->v[i];

		if (k.dead[i])
			continue;
		if (last && !last->pinned && !g->pinned && last->end == g->first &&
		    damo_region_nr(last) == damo_region_nr(g)) {
			last->end = g->end;
			last->accesses += g->accesses;
			last->ages += g->ages;
			last->touched += g->touched;
		} else {
			r->v[out++] = *g;
		}
	}
	if (!rc)
		r->n = out;
done:
	free(h.v);
	free(k.next);
	free(k.prev);
	free(k.stamp);
	free(k.dead);
	return rc;
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
