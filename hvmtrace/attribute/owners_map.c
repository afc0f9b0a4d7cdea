// SPDX-License-Identifier: MIT
/* Owner segments by a sweep over the runs' ends, and page sets counted against them (owners_map.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attribute/owners_map.h"

struct edge {
	uint64_t pos;
	uint32_t owner;
	int32_t delta; /* +1 a run starts, -1 it ends */
};

static int cmp_edge(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Appends [first, end) of owner, joined to the segment before when it goes on with the same owner. */
static void put_seg(struct owners_map *m, uint64_t first, uint64_t end, uint32_t owner)
{
	struct owner_seg *last = m->n ? &m->v[m->n - 1] : NULL;

	if (last && last->end == first && last->owner == owner) {
		last->end = end;
		return;
	}
	m->v[m->n++] = (struct owner_seg){first, end, owner};
}

int owners_map_build(const struct owners_snapshot *s, uint8_t type, struct owners_map *m)
{
	size_t n = 0;
	struct edge *e;
	uint64_t active = 0, sum = 0; /* owners covering the sweep's position, and the sum of their indexes */

	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < s->nowners; i++)
		if (s->owners[i].type == type)
			n += 2 * s->owners[i].nruns;
	e = malloc((n + 1) * sizeof(*e));
	m->v = malloc((n + 1) * sizeof(*m->v));
	if (!e || !m->v) {
		free(e);
		owners_map_free(m);
		return -ENOMEM;
	}
	n = 0;
	for (size_t i = 0; i < s->nowners; i++) {
		const struct owner *o = &s->owners[i];

		if (o->type != type)
			continue;
		for (size_t j = 0; j < o->nruns; j++) {
			const struct hvt_run *r = &s->runs[o->first_run + j];

			e[n++] = (struct edge){r->first, (uint32_t)i, 1};
			e[n++] = (struct edge){r->first + r->count, (uint32_t)i, -1};
		}
	}
	qsort(e, n, sizeof(*e), cmp_edge);
	/* An owner's runs are apart, so `active` counts distinct owners; with one, `sum` is its index. */
	for (size_t i = 0; i < n;) {
		uint64_t pos = e[i].pos;

		for (; i < n && e[i].pos == pos; i++) {
			active += (uint64_t)(int64_t)e[i].delta;
			sum += e[i].delta > 0 ? e[i].owner : -(uint64_t)e[i].owner;
		}
		if (active && i < n)
			put_seg(m, pos, e[i].pos, active == 1 ? (uint32_t)sum : OWNERS_SHARED);
	}
	free(e);
	return 0;
}

void owners_map_free(struct owners_map *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}

static void credit(struct owners_count *c, uint32_t owner, uint64_t pages)
{
	if (owner == OWNERS_SHARED) {
		c->shared += pages;
		return;
	}
	if (!c->per_owner[owner])
		c->touched[c->ntouched++] = owner;
	c->per_owner[owner] += pages;
}

void owners_map_count(const struct owners_map *m, const struct hvt_runs *set, struct owners_count *c)
{
	size_t j = 0;

	for (size_t i = 0; i < set->n; i++) {
		uint64_t pos = set->v[i].first, end = pos + set->v[i].count;
		size_t k;

		while (j < m->n && m->v[j].end <= pos)
			j++;
		for (k = j; pos < end;) {
			const struct owner_seg *g = k < m->n ? &m->v[k] : NULL;
			uint64_t upto;

			if (!g || g->first >= end) {
				c->none += end - pos;
				break;
			}
			if (g->first > pos) {
				c->none += g->first - pos;
				pos = g->first;
			}
			upto = g->end < end ? g->end : end;
			credit(c, g->owner, upto - pos);
			pos = upto;
			if (g->end <= end)
				k++;
		}
		j = k;
	}
}
