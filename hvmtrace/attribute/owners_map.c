// SPDX-License-Identifier: MIT
/* Owner segments by a sweep over the runs' ends, and page sets counted against them (owners_map.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attribute/owners_map.h"

struct edge {
	uint64_t pos;
	uint32_t row;
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

int owners_map_build_rows(const struct owners_snapshot *s, const uint32_t *row, size_t nrows,
			  struct owners_map *m)
{
	size_t n = 0;
	struct edge *e;
	uint32_t *depth;              /* per row: its owners' runs covering the sweep's position */
	uint64_t active = 0, sum = 0; /* rows covering the position, and the sum of their ids */

	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < s->nowners; i++)
		if (row[i] != OWNERS_SKIP)
			n += 2 * s->owners[i].nruns;
	e = malloc((n + 1) * sizeof(*e));
	m->v = malloc((n + 1) * sizeof(*m->v));
	depth = calloc(nrows + 1, sizeof(*depth));
	if (!e || !m->v || !depth) {
		free(e);
		free(depth);
		owners_map_free(m);
		return -ENOMEM;
	}
	n = 0;
	for (size_t i = 0; i < s->nowners; i++) {
		const struct owner *o = &s->owners[i];

		if (row[i] == OWNERS_SKIP)
			continue;
		for (size_t j = 0; j < o->nruns; j++) {
			const struct hvt_run *r = &s->runs[o->first_run + j];

			e[n++] = (struct edge){r->first, row[i], 1};
			e[n++] = (struct edge){r->first + r->count, row[i], -1};
		}
	}
	qsort(e, n, sizeof(*e), cmp_edge);
	/* A row counts once however many of its owners cover a page; with one row active, `sum` is its id. */
	for (size_t i = 0; i < n;) {
		uint64_t pos = e[i].pos;

		for (; i < n && e[i].pos == pos; i++) {
			uint32_t r = e[i].row;

			if (e[i].delta > 0 && depth[r]++ == 0)
				active++, sum += r;
			else if (e[i].delta < 0 && --depth[r] == 0)
				active--, sum -= r;
		}
		if (active && i < n)
			put_seg(m, pos, e[i].pos, active == 1 ? (uint32_t)sum : OWNERS_SHARED);
	}
	free(e);
	free(depth);
	return 0;
}

int owners_map_build(const struct owners_snapshot *s, uint8_t type, struct owners_map *m)
{
	uint32_t *row = malloc((s->nowners + 1) * sizeof(*row));
	int rc;

	if (!row) {
		memset(m, 0, sizeof(*m));
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->nowners; i++)
		row[i] = s->owners[i].type == type ? (uint32_t)i : OWNERS_SKIP;
	rc = owners_map_build_rows(s, row, s->nowners, m);
	free(row);
	return rc;
}

/* The owner of the segment at *k covering pos, or OWNERS_NONE, and where that owner's piece ends. */
static uint32_t owner_at(const struct owners_map *m, size_t *k, uint64_t pos, uint64_t *end)
{
	while (*k < m->n && m->v[*k].end <= pos)
		(*k)++;
	if (*k == m->n) {
		*end = UINT64_MAX;
		return OWNERS_NONE;
	}
	if (m->v[*k].first > pos) {
		*end = m->v[*k].first;
		return OWNERS_NONE;
	}
	*end = m->v[*k].end;
	return m->v[*k].owner;
}

int owners_map_agree(const struct owners_map *a, const struct owners_map *b, struct owners_map *out)
{
	size_t i = 0, j = 0;
	uint64_t pos = 0;

	memset(out, 0, sizeof(*out));
	/* every segment of the result starts at a segment's start or end of a or b */
	out->v = malloc((2 * (a->n + b->n) + 1) * sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	while (i < a->n || j < b->n) {
		uint64_t ea, eb, end;
		uint32_t oa = owner_at(a, &i, pos, &ea), ob = owner_at(b, &j, pos, &eb);

		if (oa == OWNERS_NONE && ob == OWNERS_NONE) {
			if (ea == UINT64_MAX && eb == UINT64_MAX)
				break;
			pos = ea < eb ? ea : eb;
			continue;
		}
		end = ea < eb ? ea : eb;
		put_seg(out, pos, end, oa == ob ? oa : OWNERS_CHANGED);
		pos = end;
	}
	return 0;
}

void owners_map_free(struct owners_map *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}

void owners_map_pieces(const struct owners_map *m, size_t *cursor, uint64_t first, uint64_t count,
		       owners_piece_fn fn, void *ctx)
{
	uint64_t pos = first, end = first + count;
	size_t k;

	while (*cursor < m->n && m->v[*cursor].end <= pos)
		(*cursor)++;
	for (k = *cursor; pos < end;) {
		const struct owner_seg *g = k < m->n ? &m->v[k] : NULL;
		uint64_t upto;

		if (!g || g->first >= end) {
			fn(ctx, pos, end - pos, OWNERS_NONE);
			break;
		}
		if (g->first > pos) {
			fn(ctx, pos, g->first - pos, OWNERS_NONE);
			pos = g->first;
		}
		upto = g->end < end ? g->end : end;
		fn(ctx, pos, upto - pos, g->owner);
		pos = upto;
		if (g->end <= end)
			k++;
	}
	*cursor = k;
}

static void credit(void *arg, uint64_t first, uint64_t pages, uint32_t owner)
{
	struct owners_count *c = arg;

	(void)first;
	if (owner == OWNERS_SHARED) {
		c->shared += pages;
	} else if (owner == OWNERS_CHANGED) {
		c->changed += pages;
	} else if (owner == OWNERS_NONE) {
		c->none += pages;
	} else {
		if (!c->per_owner[owner])
			c->touched[c->ntouched++] = owner;
		c->per_owner[owner] += pages;
	}
}

void owners_map_count_run(const struct owners_map *m, size_t *cursor, uint64_t first, uint64_t count,
			  struct owners_count *c)
{
	owners_map_pieces(m, cursor, first, count, credit, c);
}

void owners_map_count(const struct owners_map *m, const struct hvt_runs *set, struct owners_count *c)
{
	size_t cursor = 0;

	for (size_t i = 0; i < set->n; i++)
		owners_map_count_run(m, &cursor, set->v[i].first, set->v[i].count, c);
}
