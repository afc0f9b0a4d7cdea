// SPDX-License-Identifier: MIT
/* The per-interval rule of owners_interval.h: one table of owners across snapshots, each snapshot's map as
 * rows, and the agreement of the snapshots around an interval. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute/owners_interval.h"

/* Rows found by their identity: an open-addressed table of row ids + 1 (0 empty). */
struct row_index {
	uint32_t *slot;
	size_t mask;
};

static uint64_t hash_text(uint64_t h, const char *t)
{
	for (; *t; t++)
		h = (h ^ (uint8_t)*t) * 0x100000001b3ull;
	return h;
}

static uint64_t row_hash(const struct owner_row *r)
{
	uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)r->type << 40 | (uint64_t)r->kind << 32 | r->pid);

	h *= 0x100000001b3ull;
	return hash_text(h, r->type == HVT_OWN_KIND ? "" : r->name);
}

static bool same_row(const struct owner_row *a, const struct owner_row *b)
{
	return a->type == b->type && a->kind == b->kind && a->pid == b->pid &&
	       (a->type == HVT_OWN_KIND || !strcmp(a->name, b->name));
}

/* The row of `want`, added when new. OWNERS_SKIP: too many rows. */
static uint32_t find_row(struct owners_interval *v, struct row_index *ix, const struct owner_row *want)
{
	size_t at = row_hash(want) & ix->mask;

	for (; ix->slot[at]; at = (at + 1) & ix->mask)
		if (same_row(&v->rows[ix->slot[at] - 1], want))
			return ix->slot[at] - 1;
	if (v->nrows >= OWNERS_MAX_ROW)
		return OWNERS_SKIP;
	v->rows[v->nrows] = *want;
	ix->slot[at] = (uint32_t)++v->nrows;
	return ix->slot[at] - 1;
}

/* The row of snapshot owner o when grouped by `by`, or OWNERS_SKIP when it is not of the group. */
static uint32_t row_of(struct owners_interval *v, struct row_index *ix, const struct owner *o)
{
	struct owner_row want = {
	    .type = o->type, .kind = o->kind, .pid = o->pid, .name = o->name, .cgroup = o->cgroup};
	uint32_t r;

	if (v->by == OWNERS_BY_CGROUP) {
		if (o->type != HVT_OWN_PROCESS)
			return OWNERS_SKIP;
		want = (struct owner_row){.type = OWNERS_BY_CGROUP, .name = o->cgroup, .cgroup = o->cgroup};
	}
	r = find_row(v, ix, &want);
	if (r == OWNERS_SKIP)
		return r;
	v->rows[r].flags |= o->flags & HVT_OWN_PARTIAL;
	v->rows[r].snapshots++;
	if (v->by != OWNERS_BY_CGROUP && o->pages > v->rows[r].pages)
		v->rows[r].pages = o->pages;
	if (v->by == OWNERS_BY_CGROUP || o->type == v->by)
		return r;
	return OWNERS_SKIP; /* a row (ids follow the snapshot's order), not in this map */
}

/* A cgroup's pages in one map: the most over the snapshots. */
static void cgroup_pages(struct owners_interval *v, const struct owners_map *m, uint64_t *scratch)
{
	for (size_t i = 0; i < v->nrows; i++)
		scratch[i] = 0;
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].owner < v->nrows)
			scratch[m->v[i].owner] += m->v[i].end - m->v[i].first;
	for (size_t i = 0; i < v->nrows; i++)
		if (scratch[i] > v->rows[i].pages)
			v->rows[i].pages = scratch[i];
}

int owners_interval_init(struct owners_interval *v, const struct owners_timeline *tl, int by)
{
	struct row_index ix = {0};
	size_t total = 0, cap = 16;
	uint32_t *row = NULL;
	uint64_t *scratch = NULL;
	int rc = -ENOMEM;

	memset(v, 0, sizeof(*v));
	v->tl = tl;
	v->by = by;
	v->lo = v->hi = SIZE_MAX;
	for (size_t s = 0; s < tl->n; s++)
		total += tl->snap[s].nowners;
	while (cap < 2 * total)
		cap *= 2;
	ix.slot = calloc(cap, sizeof(*ix.slot));
	ix.mask = cap - 1;
	v->rows = calloc(total + 1, sizeof(*v->rows));
	v->maps = calloc(tl->n + 1, sizeof(*v->maps));
	if (!ix.slot || !v->rows || !v->maps)
		goto out;
	for (size_t s = 0; s < tl->n; s++) {
		const struct owners_snapshot *sn = &tl->snap[s];

		free(row);
		row = malloc((sn->nowners + 1) * sizeof(*row));
		if (!row)
			goto out;
		for (size_t i = 0; i < sn->nowners; i++)
			row[i] = row_of(v, &ix, &sn->owners[i]);
		if (owners_map_build_rows(sn, row, v->nrows, &v->maps[s]))
			goto out;
	}
	if (by == OWNERS_BY_CGROUP) {
		scratch = calloc(v->nrows + 1, sizeof(*scratch));
		if (!scratch)
			goto out;
		for (size_t s = 0; s < tl->n; s++)
			cgroup_pages(v, &v->maps[s], scratch);
	}
	rc = 0;
out:
	free(ix.slot);
	free(row);
	free(scratch);
	if (rc)
		owners_interval_free(v);
	return rc;
}

void owners_interval_free(struct owners_interval *v)
{
	if (v->maps)
		for (size_t s = 0; s < v->tl->n; s++)
			owners_map_free(&v->maps[s]);
	free(v->maps);
	free(v->rows);
	owners_map_free(&v->span);
	memset(v, 0, sizeof(*v));
}

void owners_interval_span(const struct owners_timeline *tl, uint64_t t_start_ns, uint64_t t_end_ns,
			  size_t *lo, size_t *hi)
{
	size_t a = 0, b = tl->n;

	if (!tl->n) {
		*lo = 1, *hi = 0;
		return;
	}
	if (!tl->timed) {
		*lo = *hi = 0;
		return;
	}
	/* lo: the last taken at or before t_start (the first, when none was) */
	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (tl->at_ns[mid] <= t_start_ns)
			a = mid + 1;
		else
			b = mid;
	}
	*lo = a ? a - 1 : 0;
	/* hi: the first taken at or after t_end (the last, when none was) */
	a = 0, b = tl->n;
	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (tl->at_ns[mid] < t_end_ns)
			a = mid + 1;
		else
			b = mid;
	}
	*hi = a < tl->n ? a : tl->n - 1;
	if (*hi < *lo) { /* snapshots taken at one instant, an interval of none */
		size_t t = *lo;

		*lo = *hi, *hi = t;
	}
}

const struct owners_map *owners_interval_map(struct owners_interval *v, uint64_t t_start_ns,
					     uint64_t t_end_ns)
{
	size_t lo, hi;

	owners_interval_span(v->tl, t_start_ns, t_end_ns, &lo, &hi);
	if (lo > hi)
		return &v->empty;
	if (lo == hi)
		return &v->maps[lo];
	if (lo != v->lo || hi != v->hi) {
		struct owners_map acc, next;

		owners_map_free(&v->span);
		v->lo = v->hi = SIZE_MAX;
		if (owners_map_agree(&v->maps[lo], &v->maps[lo + 1], &acc))
			return NULL;
		for (size_t s = lo + 2; s <= hi; s++) {
			int rc = owners_map_agree(&acc, &v->maps[s], &next);

			owners_map_free(&acc);
			if (rc)
				return NULL;
			acc = next;
		}
		v->span = acc;
		v->lo = lo, v->hi = hi;
	}
	return &v->span;
}

void owners_row_label(const struct owners_interval *v, uint32_t owner, char *buf, size_t len)
{
	const struct owner_row *r = owner < v->nrows ? &v->rows[owner] : NULL;

	if (owner == OWNERS_SHARED)
		snprintf(buf, len, "(shared)");
	else if (owner == OWNERS_CHANGED)
		snprintf(buf, len, "(changed owner)");
	else if (!r)
		snprintf(buf, len, "%s", v->by == HVT_OWN_KIND ? "(no kind)" : "(no process)");
	else if (r->type == HVT_OWN_PROCESS)
		snprintf(buf, len, "%s[%" PRIu32 "]%s", r->name, r->pid,
			 r->flags & HVT_OWN_PARTIAL ? "*" : "");
	else if (r->type == HVT_OWN_KIND)
		snprintf(buf, len, "%s", owners_kind_name(r->kind));
	else
		snprintf(buf, len, "%s", r->name[0] ? r->name : "(no cgroup)");
}

static int cmp_writer(const void *a, const void *b, void *ctx)
{
	const uint64_t(*total)[2] = ctx;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (total[i][0] != total[j][0])
		return total[i][0] < total[j][0] ? 1 : -1;
	if (total[i][1] != total[j][1])
		return total[i][1] < total[j][1] ? 1 : -1;
	return i < j ? -1 : i > j;
}

void owners_rank_writers(uint32_t *order, size_t n, const uint64_t (*total)[2])
{
	qsort_r(order, n, sizeof(*order), cmp_writer, (void *)total);
}

size_t owners_slot_of(size_t nrows, uint32_t owner)
{
	return owner < nrows             ? owner
	       : owner == OWNERS_SHARED  ? nrows + OWNERS_SLOT_SHARED
	       : owner == OWNERS_CHANGED ? nrows + OWNERS_SLOT_CHANGED
					 : nrows + OWNERS_SLOT_NONE;
}

uint32_t owners_owner_of_slot(size_t nrows, size_t slot)
{
	return slot < nrows                          ? (uint32_t)slot
	       : slot == nrows + OWNERS_SLOT_SHARED  ? OWNERS_SHARED
	       : slot == nrows + OWNERS_SLOT_CHANGED ? OWNERS_CHANGED
						     : OWNERS_NONE;
}
