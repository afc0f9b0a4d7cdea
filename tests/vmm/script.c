// SPDX-License-Identifier: MIT
/*
 * The built-in phase scripts (--payload NAME):
 *   phases4  the test pattern: four phases over both slots whose write sets differ pairwise and overlap
 *            in places, each reading pages another phase wrote (a read must never look like a write);
 *   array    the seed paper's array program at page level: "copy" writes c reading a, "add" writes c
 *            reading a and b;
 *   idle     one phase that touches nothing;
 *   sparse   one phase that writes every Nth page of the high slot (--write-every N), a given fraction of a
 *            large guest, for the bench (bench/table.sh).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest_abi.h"
#include "hvmtrace/error.h"
#include "script.h"

#define PAGE 4096ull

const char *const script_names[] = {"phases4", "array", "idle", "sparse", NULL};

int script_add_range(struct range_list *l, uint64_t first, uint64_t count, uint64_t stride)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		struct page_range *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct page_range){first, count, stride};
	return 0;
}

static int add_list(struct range_list *dst, const struct range_list *src)
{
	for (size_t i = 0; i < src->n; i++)
		if (script_add_range(dst, src->v[i].first_gfn, src->v[i].count, src->v[i].stride))
			return -ENOMEM;
	return 0;
}

static struct phase *add_phase(struct script *s, const char *name)
{
	struct phase *p = realloc(s->phases, (s->nphases + 1) * sizeof(*p));

	if (!p)
		return NULL;
	s->phases = p;
	p = &s->phases[s->nphases++];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	return p;
}

/* Deterministic, so every run of phases4 scatters the same pages (xorshift64*). */
static uint64_t prng_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* n distinct pages drawn from [free, low) and the high slot, as single-page ranges in ascending order. */
static int add_scattered(struct range_list *l, const struct script_geometry *g, unsigned n)
{
	uint64_t low_avail = g->low_pages - g->first_free_gfn, total = low_avail + g->high_pages;
	uint64_t *v = malloc(n * sizeof(*v)), state = 0x9e3779b97f4a7c15ull;
	unsigned have = 0;
	int rc = 0;

	if (!v)
		return -ENOMEM;
	while (have < n) {
		uint64_t r = prng_next(&state) % total;
		uint64_t gfn = r < low_avail ? g->first_free_gfn + r : g->high_first_gfn + (r - low_avail);
		unsigned i;

		for (i = 0; i < have && v[i] != gfn; i++)
			;
		if (i == have)
			v[have++] = gfn;
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	for (unsigned i = 0; i < n && !rc; i++)
		rc = script_add_range(l, v[i], 1, 1);
	free(v);
	return rc;
}

/* Pages phases4's strided phase writes at most per pass. */
#define MAX_STRIDED_PAGES 65536

static int build_phases4(struct script *s, const struct script_geometry *g, struct hvt_err *err)
{
	const uint64_t w0_first = 4096, w0_count = 2048; /* 16 MiB .. 24 MiB */
	const uint64_t low = g->low_pages, high = g->high_pages, hi = g->high_first_gfn;
	struct phase *p;

	if (low < 16384 || high < 512)
		return hvt_err_set(err, -EINVAL,
				   "--payload phases4 needs --low-ram >= 64M and --high-ram >= 2M");
	/* 0: a contiguous block in low RAM; reads in both slots that nobody writes. */
	if (!(p = add_phase(s, "contiguous")) || script_add_range(&p->write, w0_first, w0_count, 1) ||
	    script_add_range(&p->read, low / 2, 1024, 1) || script_add_range(&p->read, hi + high / 2, 256, 1))
		return -ENOMEM;
	/* 1: every 64th page of the whole high slot (one page per bitmap word), or a wider multiple of 64 in
	 * slots over 16 GiB so that a pass stays at 65536 pages (a sparse guest: most pages never touched);
	 * reads what phase 0 wrote. */
	const uint64_t stride = 64 * ((high / 64 + MAX_STRIDED_PAGES - 1) / MAX_STRIDED_PAGES);
	if (!(p = add_phase(s, "strided")) || script_add_range(&p->write, hi, high / stride, stride) ||
	    script_add_range(&p->read, w0_first, w0_count, 1))
		return -ENOMEM;
	/* 2: scattered pages over both slots; reads what phase 1 wrote. */
	if (!(p = add_phase(s, "scattered")) || add_scattered(&p->write, g, 1024) ||
	    add_list(&p->read, &s->phases[1].write))
		return -ENOMEM;
	/* 3: the edges of both slots and a quarter of phase 0's block; reads what phase 2 wrote. */
	if (!(p = add_phase(s, "edges")) || script_add_range(&p->write, 0, 1, 1) ||
	    script_add_range(&p->write, low - 1, 1, 1) || script_add_range(&p->write, hi, 1, 1) ||
	    script_add_range(&p->write, hi + high - 1, 1, 1) ||
	    script_add_range(&p->write, w0_first, w0_count / 4, 1) || add_list(&p->read, &s->phases[2].write))
		return -ENOMEM;
	return 0;
}

static int build_array(struct script *s, const struct script_geometry *g, struct hvt_err *err)
{
	const uint64_t first = 4096; /* 16 MiB, well above the system area */
	uint64_t n = (g->array_bytes + PAGE - 1) / PAGE;
	uint64_t a = first, b = a + n, c = b + n;
	struct phase *p;

	if (c + n > g->low_pages)
		return hvt_err_set(err, -EINVAL,
				   "--payload array: three arrays of %" PRIu64
				   " bytes from 16 MiB do not fit in --low-ram (%" PRIu64 " MiB)",
				   g->array_bytes, (uint64_t)(g->low_pages * PAGE >> 20));
	if (!(p = add_phase(s, "copy")) || script_add_range(&p->write, c, n, 1) ||
	    script_add_range(&p->read, a, n, 1))
		return -ENOMEM;
	if (!(p = add_phase(s, "add")) || script_add_range(&p->write, c, n, 1) ||
	    script_add_range(&p->read, a, n, 1) || script_add_range(&p->read, b, n, 1))
		return -ENOMEM;
	return 0;
}

static int build_sparse(struct script *s, const struct script_geometry *g, struct hvt_err *err)
{
	const uint64_t every = g->write_every;
	struct phase *p;

	if (every == 0 || every > g->high_pages)
		return hvt_err_set(err, -EINVAL,
				   "--payload sparse: --write-every %" PRIu64
				   " must be between 1 and the high slot's %" PRIu64 " pages",
				   every, g->high_pages);
	if (!(p = add_phase(s, "sparse")) ||
	    script_add_range(&p->write, g->high_first_gfn, g->high_pages / every, every))
		return -ENOMEM;
	return 0;
}

/* True if every page of the range is RAM of one slot and outside the system area. */
static int range_ok(const struct page_range *r, const struct script_geometry *g)
{
	uint64_t last = r->first_gfn + (r->count - 1) * r->stride;

	if (r->count == 0)
		return 1;
	if (r->first_gfn == 0 && r->count == 1)
		return 1;
	if (r->first_gfn >= g->first_free_gfn && last < g->low_pages)
		return 1;
	return r->first_gfn >= g->high_first_gfn && last < g->high_first_gfn + g->high_pages;
}

static int check_script(const struct script *s, const struct script_geometry *g, struct hvt_err *err)
{
	for (unsigned i = 0; i < s->nphases; i++) {
		const struct range_list *lists[2] = {&s->phases[i].write, &s->phases[i].read};

		for (int k = 0; k < 2; k++)
			for (size_t j = 0; j < lists[k]->n; j++)
				if (!range_ok(&lists[k]->v[j], g))
					return hvt_err_set(err, -EINVAL,
							   "script %s phase %u: %s range %zu (gfn 0x%" PRIx64
							   ", %" PRIu64 " pages) leaves guest RAM",
							   s->name, i, k ? "read" : "write", j,
							   lists[k]->v[j].first_gfn, lists[k]->v[j].count);
	}
	return 0;
}

int script_build(struct script *s, const char *name, const struct script_geometry *g, struct hvt_err *err)
{
	int rc;

	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	if (!strcmp(name, "phases4"))
		rc = build_phases4(s, g, err);
	else if (!strcmp(name, "array"))
		rc = build_array(s, g, err);
	else if (!strcmp(name, "idle"))
		rc = add_phase(s, "idle") ? 0 : -ENOMEM;
	else if (!strcmp(name, "sparse"))
		rc = build_sparse(s, g, err);
	else
		rc = hvt_err_set(err, -EINVAL, "--payload %s: no such script (phases4, array, idle, sparse)",
				 name);
	if (rc == -ENOMEM)
		hvt_err_set(err, rc, "out of memory building script %s", name);
	if (!rc)
		rc = check_script(s, g, err);
	if (rc)
		script_free(s);
	return rc;
}

void script_free(struct script *s)
{
	for (unsigned i = 0; i < s->nphases; i++) {
		free(s->phases[i].write.v);
		free(s->phases[i].read.v);
	}
	free(s->phases);
	memset(s, 0, sizeof(*s));
}

size_t script_encoded_size(const struct script *s)
{
	size_t n = 8;

	for (unsigned i = 0; i < s->nphases; i++)
		n += GUEST_PHASE_HEADER_BYTES +
		     GUEST_RANGE_BYTES * (s->phases[i].write.n + s->phases[i].read.n);
	return n;
}

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + 8;
}

static uint8_t *put_ranges(uint8_t *p, const struct range_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		p = put_u64(p, l->v[i].first_gfn * PAGE);
		p = put_u64(p, l->v[i].count);
		p = put_u64(p, l->v[i].stride * PAGE);
	}
	return p;
}

size_t script_encode(const struct script *s, uint8_t *buf, size_t cap)
{
	size_t need = script_encoded_size(s);
	uint8_t *p = buf;

	if (cap < need)
		return 0;
	p = put_u64(p, s->nphases);
	for (unsigned i = 0; i < s->nphases; i++) {
		p = put_u64(p, s->phases[i].write.n);
		p = put_u64(p, s->phases[i].read.n);
		p = put_ranges(p, &s->phases[i].write);
		p = put_ranges(p, &s->phases[i].read);
	}
	return need;
}
