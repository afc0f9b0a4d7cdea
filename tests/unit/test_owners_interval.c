// SPDX-License-Identifier: MIT
/*
 * Unit tests for the per-interval rule (hvmtrace/attribute/owners_interval.c) on timelines built in memory:
 * - two snapshots that disagree: a page whose owner is the same in both is its owner's, one that passed
 *   between processes (or from none to one, or shared to one, or to a process of the same pid and another
 *   name) is changed, a page several own in both is shared, a process keeps one row across snapshots;
 * - which snapshots an interval takes: before the first, after the last, at a snapshot's instant, a
 *   snapshot inside the interval that disagrees with both ends;
 * - an untimed timeline (a file) takes its one snapshot for every interval, a timeline of none names no
 * owner;
 * - by cgroup, two processes of one cgroup on a page are that cgroup's, not shared;
 * - random timelines over seeds, every page of every interval against a page-by-page reference.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../hvmtrace/attribute/owners_interval.h"

#define PAGES      200
#define MAX_OWNERS 8
#define MAX_RUNS   64

/* A snapshot built here: owners (processes and kinds) with their runs. */
struct snap_spec {
	struct owners_snapshot s;
	struct owner own[MAX_OWNERS];
	struct hvt_run runs[MAX_OWNERS * MAX_RUNS];
};

static void snap_init(struct snap_spec *x)
{
	memset(x, 0, sizeof(*x));
	x->s.page_size = 4096;
	x->s.owners = x->own;
	x->s.runs = x->runs;
}

/* A process (pid, name, cgroup) owning the pages of runs[0 .. n) as {first, count} pairs. */
static void add_process(struct snap_spec *x, uint32_t pid, const char *name, const char *cgroup,
			const uint64_t (*runs)[2], size_t n)
{
	struct owner *o = &x->own[x->s.nowners++];

	*o = (struct owner){.type = HVT_OWN_PROCESS,
			    .pid = pid,
			    .name = (char *)name,
			    .cgroup = (char *)cgroup,
			    .first_run = x->s.nruns,
			    .nruns = n};
	for (size_t i = 0; i < n; i++) {
		x->runs[x->s.nruns++] = (struct hvt_run){runs[i][0], runs[i][1]};
		o->pages += runs[i][1];
	}
	x->s.nprocesses++;
}

/* The owner of every page [0, PAGES) by the map: rows, OWNERS_SHARED, OWNERS_CHANGED or OWNERS_NONE. */
struct page_owners {
	uint32_t of[PAGES];
};

static void piece(void *ctx, uint64_t first, uint64_t count, uint32_t owner)
{
	struct page_owners *p = ctx;

	for (uint64_t i = first; i < first + count; i++)
		p->of[i] = owner;
}

static void pages_of(const struct owners_map *m, struct page_owners *p)
{
	size_t cursor = 0;

	owners_map_pieces(m, &cursor, 0, PAGES / 2, piece, p);
	owners_map_pieces(m, &cursor, PAGES / 2, PAGES - PAGES / 2, piece, p);
}

static uint32_t row_named(const struct owners_interval *v, uint32_t pid, const char *name)
{
	for (size_t i = 0; i < v->nrows; i++)
		if (v->rows[i].type == HVT_OWN_PROCESS && v->rows[i].pid == pid &&
		    !strcmp(v->rows[i].name, name))
			return (uint32_t)i;
	fail_msg("no row for %s[%u]", name, pid);
	return 0;
}

static void expect_pages(const struct page_owners *p, uint64_t first, uint64_t count, uint32_t owner)
{
	for (uint64_t i = first; i < first + count; i++)
		if (p->of[i] != owner)
			fail_msg("page %llu: owner %u, expected %u", (unsigned long long)i, p->of[i], owner);
}

/* Snapshot a at t=100, b at t=200: p and q trade pages, r's pages go to s (pid 3 too), p takes free pages. */
static void two_snapshots(struct snap_spec *a, struct snap_spec *b)
{
	snap_init(a);
	add_process(a, 1, "p", "/u/a", (const uint64_t[][2]){{0, 10}, {20, 5}, {60, 5}}, 3);
	add_process(a, 2, "q", "/u/a", (const uint64_t[][2]){{10, 15}}, 1);
	add_process(a, 3, "r", "/u/b", (const uint64_t[][2]){{30, 10}}, 1);
	snap_init(b); /* q first: rows follow identity, not position */
	add_process(b, 2, "q", "/u/a", (const uint64_t[][2]){{5, 20}}, 1);
	add_process(b, 1, "p", "/u/a", (const uint64_t[][2]){{0, 5}, {20, 5}, {50, 10}}, 3);
	add_process(b, 3, "s", "/u/b", (const uint64_t[][2]){{35, 5}}, 1);
	add_process(b, 3, "r", "/u/b", (const uint64_t[][2]){{30, 5}}, 1);
}

static void test_changed_owner(void **state)
{
	struct snap_spec a, b;
	struct owners_snapshot snaps[2];
	uint64_t at[2] = {100, 200};
	struct owners_timeline tl = {snaps, at, 2, true};
	struct owners_interval v;
	struct page_owners p;
	uint32_t rp, rq, rr, rs;

	(void)state;
	two_snapshots(&a, &b);
	snaps[0] = a.s, snaps[1] = b.s;
	assert_int_equal(owners_interval_init(&v, &tl, HVT_OWN_PROCESS), 0);
	assert_int_equal(v.nrows, 4); /* p, q, r and s: one row each across both snapshots */
	rp = row_named(&v, 1, "p"), rq = row_named(&v, 2, "q"), rr = row_named(&v, 3, "r"),
	rs = row_named(&v, 3, "s");
	assert_int_equal(v.rows[rp].snapshots, 2);
	assert_int_equal(v.rows[rp].pages, 20); /* the most it had: 20 in a, 20 in b */
	assert_int_equal(v.rows[rs].snapshots, 1);

	pages_of(owners_interval_map(&v, 120, 180), &p);
	expect_pages(&p, 0, 5, rp);              /* p's in both */
	expect_pages(&p, 5, 5, OWNERS_CHANGED);  /* p's, then q's */
	expect_pages(&p, 10, 10, rq);            /* q's in both */
	expect_pages(&p, 20, 5, OWNERS_SHARED);  /* p and q in both */
	expect_pages(&p, 25, 5, OWNERS_NONE);    /* nobody's in either */
	expect_pages(&p, 30, 5, rr);             /* r's in both */
	expect_pages(&p, 35, 5, OWNERS_CHANGED); /* r's, then s's: pid 3 both, another name */
	expect_pages(&p, 40, 10, OWNERS_NONE);
	expect_pages(&p, 50, 10, OWNERS_CHANGED); /* nobody's, then p's */
	expect_pages(&p, 60, 5, OWNERS_CHANGED);  /* p's, then nobody's */
	expect_pages(&p, 65, PAGES - 65, OWNERS_NONE);

	/* before the first snapshot, at it, and after the last: the one there is */
	pages_of(owners_interval_map(&v, 10, 90), &p);
	expect_pages(&p, 5, 5, rp);
	expect_pages(&p, 35, 5, rr);
	expect_pages(&p, 60, 5, rp);
	pages_of(owners_interval_map(&v, 40, 100), &p); /* ends at a's instant: a is the one after */
	expect_pages(&p, 5, 5, rp);
	pages_of(owners_interval_map(&v, 200, 260), &p); /* starts at b's instant: b is the one before */
	expect_pages(&p, 5, 5, rq);
	expect_pages(&p, 35, 5, rs);
	expect_pages(&p, 50, 10, rp);
	expect_pages(&p, 60, 5, OWNERS_NONE);
	pages_of(owners_interval_map(&v, 90, 210), &p); /* spans both: the same as between them */
	expect_pages(&p, 5, 5, OWNERS_CHANGED);
	expect_pages(&p, 0, 5, rp);
	owners_interval_free(&v);
}

/* Three snapshots: the middle one, inside an interval, disagrees with the two around it. */
static void test_snapshot_inside(void **state)
{
	struct snap_spec a, b, c;
	struct owners_snapshot snaps[3];
	uint64_t at[3] = {100, 150, 200};
	struct owners_timeline tl = {snaps, at, 3, true};
	struct owners_interval v;
	struct page_owners p;
	size_t lo, hi;

	(void)state;
	snap_init(&a);
	add_process(&a, 1, "p", "", (const uint64_t[][2]){{0, 10}}, 1);
	snap_init(&b);
	add_process(&b, 1, "p", "", (const uint64_t[][2]){{0, 4}}, 1);
	add_process(&b, 2, "q", "", (const uint64_t[][2]){{4, 2}}, 1);
	add_process(&b, 1 + 1000, "p", "", (const uint64_t[][2]){{6, 4}}, 1);
	c = a;
	c.s.owners = c.own, c.s.runs = c.runs;
	snaps[0] = a.s, snaps[1] = b.s, snaps[2] = c.s;
	owners_interval_span(&tl, 100, 200, &lo, &hi);
	assert_true(lo == 0 && hi == 2);
	owners_interval_span(&tl, 120, 130, &lo, &hi);
	assert_true(lo == 0 && hi == 1);
	owners_interval_span(&tl, 150, 150, &lo, &hi);
	assert_true(lo == 1 && hi == 1);
	owners_interval_span(&tl, 0, 50, &lo, &hi);
	assert_true(lo == 0 && hi == 0);
	owners_interval_span(&tl, 300, 400, &lo, &hi);
	assert_true(lo == 2 && hi == 2);
	assert_int_equal(owners_interval_init(&v, &tl, HVT_OWN_PROCESS), 0);
	pages_of(owners_interval_map(&v, 110, 190), &p);
	expect_pages(&p, 0, 4, row_named(&v, 1, "p"));
	expect_pages(&p, 4, 6, OWNERS_CHANGED); /* q's, and another pid's, in the middle */
	pages_of(owners_interval_map(&v, 110, 120),
		 &p); /* then an interval of a and b only, then one of b and c */
	expect_pages(&p, 4, 6, OWNERS_CHANGED);
	pages_of(owners_interval_map(&v, 210, 220), &p);
	expect_pages(&p, 0, 10, row_named(&v, 1, "p"));
	owners_interval_free(&v);
}

static void test_untimed_and_none(void **state)
{
	struct snap_spec a, b;
	struct owners_snapshot snaps[1];
	uint64_t at[1] = {0};
	struct owners_timeline tl = {snaps, at, 1, false}, none = {NULL, NULL, 0, true};
	struct owners_interval v;
	struct page_owners p;

	(void)state;
	two_snapshots(&a, &b);
	snaps[0] = a.s;
	assert_int_equal(owners_interval_init(&v, &tl, HVT_OWN_PROCESS), 0);
	for (uint64_t t = 0; t < 1000; t += 333) {
		pages_of(owners_interval_map(&v, t, t + 500), &p);
		expect_pages(&p, 0, 10, 0); /* row i is the snapshot's owner i */
		expect_pages(&p, 10, 10, 1);
		expect_pages(&p, 20, 5, OWNERS_SHARED);
		expect_pages(&p, 30, 10, 2);
	}
	owners_interval_free(&v);
	assert_int_equal(owners_interval_init(&v, &none, HVT_OWN_PROCESS), 0);
	pages_of(owners_interval_map(&v, 0, 10), &p);
	expect_pages(&p, 0, PAGES, OWNERS_NONE);
	owners_interval_free(&v);
}

static void test_cgroup(void **state)
{
	struct snap_spec a, b;
	struct owners_snapshot snaps[2];
	uint64_t at[2] = {100, 200};
	struct owners_timeline tl = {snaps, at, 2, true};
	struct owners_interval v;
	struct page_owners p;

	(void)state;
	two_snapshots(&a, &b);
	snaps[0] = a.s, snaps[1] = b.s;
	assert_int_equal(owners_interval_init(&v, &tl, OWNERS_BY_CGROUP), 0);
	assert_int_equal(v.nrows, 2);
	assert_string_equal(v.rows[0].name, "/u/a");
	assert_string_equal(v.rows[1].name, "/u/b");
	pages_of(owners_interval_map(&v, 120, 180), &p);
	expect_pages(&p, 0, 25, 0);               /* p's and q's, traded or shared, all /u/a's */
	expect_pages(&p, 30, 10, 1);              /* r's then s's: /u/b's in both */
	expect_pages(&p, 50, 15, OWNERS_CHANGED); /* /u/a's in one only */
	assert_int_equal(v.rows[0].pages, 35);    /* the most of a (30) and b ([0, 25), [50, 60)) */
	owners_interval_free(&v);
}

/* ---- random timelines against a page-by-page reference ---- */

static uint64_t rng;

static uint64_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

static const struct {
	uint32_t pid;
	const char *name;
} ids[] = {{1, "a"}, {2, "b"}, {3, "c"}, {3, "d"}, {4, "a"}, {5, "e"}};
#define NIDS (sizeof(ids) / sizeof(ids[0]))

/* Each snapshot's owner identity (index into ids) per owner, and the page-by-page owner. */
static uint32_t ref_owner(const struct snap_spec *x, const int *id_of, uint64_t page)
{
	int found = -1;

	for (size_t o = 0; o < x->s.nowners; o++)
		for (size_t r = 0; r < x->own[o].nruns; r++) {
			const struct hvt_run *run = &x->runs[x->own[o].first_run + r];

			if (page >= run->first && page < run->first + run->count) {
				if (found >= 0 && found != id_of[o])
					return OWNERS_SHARED;
				found = id_of[o];
			}
		}
	return found < 0 ? OWNERS_NONE : (uint32_t)found; /* an identity here; rows compared by identity */
}

static void test_random(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct snap_spec specs[5];
		struct owners_snapshot snaps[5];
		int id_of[5][MAX_OWNERS];
		uint64_t at[5], t = 0;
		size_t n;
		struct owners_timeline tl;
		struct owners_interval v;
		uint32_t row_id[NIDS];

		rng = seed * 0x9e3779b97f4a7c15ull;
		n = 1 + next() % 5;
		for (size_t s = 0; s < n; s++) {
			bool used[NIDS] = {0};
			size_t owners = next() % 5;

			snap_init(&specs[s]);
			t += next() % 3 * 50; /* some snapshots at one instant */
			at[s] = t;
			for (size_t o = 0; o < owners; o++) {
				uint64_t runs[6][2], pos = next() % 30;
				size_t k = 0, id = next() % NIDS;

				if (used[id])
					continue;
				used[id] = true;
				for (; k < 6 && pos < PAGES; k++) {
					uint64_t len = 1 + next() % 30;

					if (pos + len > PAGES)
						len = PAGES - pos;
					runs[k][0] = pos, runs[k][1] = len;
					pos += len + 1 + next() % 40;
				}
				id_of[s][specs[s].s.nowners] = (int)id;
				add_process(&specs[s], ids[id].pid, ids[id].name, "",
					    (const uint64_t(*)[2])runs, k);
			}
			snaps[s] = specs[s].s;
		}
		tl = (struct owners_timeline){snaps, at, n, true};
		assert_int_equal(owners_interval_init(&v, &tl, HVT_OWN_PROCESS), 0);
		for (size_t i = 0; i < NIDS; i++) {
			row_id[i] = OWNERS_NONE;
			for (size_t r = 0; r < v.nrows; r++)
				if (v.rows[r].pid == ids[i].pid && !strcmp(v.rows[r].name, ids[i].name))
					row_id[i] = (uint32_t)r;
		}
		for (int k = 0; k < 30; k++) {
			uint64_t t0 = next() % (t + 100), t1 = t0 + next() % 120;
			size_t lo = SIZE_MAX, hi = 0;
			struct page_owners p;

			/* the rule, plainly: the last at or before t0 (else the first), the first at or after
			 * t1 (else the last) */
			for (size_t s = 0; s < n; s++)
				if (at[s] <= t0)
					lo = s;
			for (size_t s = n; s-- > 0;)
				if (at[s] >= t1)
					hi = s;
			if (lo == SIZE_MAX)
				lo = 0;
			if (at[n - 1] < t1)
				hi = n - 1;
			if (hi < lo) {
				size_t x = lo;

				lo = hi, hi = x;
			}
			pages_of(owners_interval_map(&v, t0, t1), &p);
			for (uint64_t page = 0; page < PAGES; page++) {
				uint32_t want = ref_owner(&specs[lo], id_of[lo], page);

				for (size_t s = lo + 1; s <= hi; s++)
					if (ref_owner(&specs[s], id_of[s], page) != want)
						want = OWNERS_CHANGED;
				if (want < NIDS)
					want = row_id[want];
				if (p.of[page] != want)
					fail_msg(
					    "seed %llu interval [%llu, %llu] (snapshots %zu-%zu) page %llu: "
					    "%u, expected %u",
					    (unsigned long long)seed, (unsigned long long)t0,
					    (unsigned long long)t1, lo, hi, (unsigned long long)page,
					    p.of[page], want);
			}
		}
		owners_interval_free(&v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_changed_owner),    cmocka_unit_test(test_snapshot_inside),
	    cmocka_unit_test(test_untimed_and_none), cmocka_unit_test(test_cgroup),
	    cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
