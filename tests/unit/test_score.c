// SPDX-License-Identifier: MIT
/*
 * Unit tests for hvmtrace score's window (hvmtrace/score/score.c): a case worked by hand, then a sweep over
 * seeds it prints of random intervals and DAMON regions, each window's counts against a page-by-page count
 * written here (every page's true frequency and DAMON's nr_accesses in arrays; the hot sets ranked by
 * count, then by address).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../hvmtrace/score/score.h"
#include "hvmtrace/util.h"

#define PS 4096u

static void add_set(struct score_window *w, const uint64_t (*runs)[2], size_t n)
{
	struct hvt_runs set = {0};

	for (size_t i = 0; i < n; i++)
		assert_int_equal(hvt_runs_push(&set, runs[i][0], runs[i][1]), 0);
	assert_int_equal(score_window_add(w, &set), 0);
	free(set.v);
}

/* truth: pages 10-14 once, 15-19 twice, 20-29 once (20 pages); DAMON: 0-11 at 1, 12-17 at 0, 18-24 at 5 */
static void test_by_hand(void **state)
{
	static const uint64_t iv1[][2] = {{10, 10}}, iv2[][2] = {{15, 15}};
	const struct damon_region regions[] = {
	    {0, 12 * PS, 1, 0}, {12 * PS, 18 * PS, 0, 0}, {18 * PS, 25 * PS, 5, 0}};
	struct score_window w = {0};
	struct score_counts c;

	(void)state;
	add_set(&w, iv1, 1);
	add_set(&w, iv2, 1);
	assert_int_equal(score_window_close(&w, regions, 3, PS, 10, &c), 0);
	assert_int_equal(c.damon_pages, 19);
	assert_int_equal(c.true_pages, 20);
	assert_int_equal(c.both_pages, 9); /* 10-11 and 18-24 */
	assert_int_equal(c.hot_k, 2);      /* true: 15, 16; DAMON: 18, 19 */
	assert_int_equal(c.hot_both, 0);
	/* the window is empty again; at 50 %: true 15-19 then 10-14, DAMON 18-24 then 0-2: 18 and 19 */
	add_set(&w, iv1, 1);
	add_set(&w, iv2, 1);
	assert_int_equal(score_window_close(&w, regions, 3, PS, 50, &c), 0);
	assert_int_equal(c.hot_k, 10);
	assert_int_equal(c.hot_both, 2);
	assert_true(score_precision(&c) == 9.0 / 19);
	assert_true(score_recall(&c) == 9.0 / 20);
	assert_true(score_wss_error(&c) == -1.0 / 20);
	score_window_fini(&w);
}

/* A window in which DAMON saw nothing (every nr_accesses 0, as DAMON's first windows in a guest often are):
 * no DAMON page, so no hot page, and the window's first hot set is empty (scored, not a crash). */
static void test_damon_idle(void **state)
{
	static const uint64_t iv[][2] = {{10, 10}};
	const struct damon_region regions[] = {{0, 32 * PS, 0, 0}};
	struct score_window w = {0};
	struct score_counts c;

	(void)state;
	add_set(&w, iv, 1);
	assert_int_equal(score_window_close(&w, regions, 1, PS, 10, &c), 0);
	assert_int_equal(c.damon_pages, 0);
	assert_int_equal(c.true_pages, 10);
	assert_int_equal(c.both_pages, 0);
	assert_int_equal(c.hot_k, 1);
	assert_int_equal(c.hot_both, 0);
	assert_true(score_recall(&c) == 0);
	score_window_fini(&w);
}

#define PAGES 256

/* The k hottest of count[0, PAGES) (count >= 1), by count then address, into hot. */
static void brute_hot(const uint32_t *count, uint64_t k, bool *hot)
{
	uint32_t max = 0;

	memset(hot, 0, PAGES * sizeof(*hot));
	for (int p = 0; p < PAGES; p++)
		max = count[p] > max ? count[p] : max;
	for (uint32_t c = max; c >= 1 && k; c--)
		for (int p = 0; p < PAGES && k; p++)
			if (count[p] == c) {
				hot[p] = true;
				k--;
			}
}

static void test_sweep(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 300; seed++) {
		uint64_t rng = seed, k, want_hot_both = 0, want_d = 0, want_t = 0, want_both = 0;
		uint32_t truth[PAGES] = {0}, damon[PAGES] = {0};
		bool hot_t[PAGES], hot_d[PAGES];
		struct damon_region regions[PAGES];
		struct score_window w = {0};
		struct score_counts c;
		unsigned hot = 1 + hvt_splitmix64(&rng) % 100;
		size_t nr = 0, nint = 1 + hvt_splitmix64(&rng) % 8;

		for (size_t i = 0; i < nint; i++) {
			uint64_t runs[16][2], at = hvt_splitmix64(&rng) % 8;
			size_t n = 0;

			while (n < 16 && at < PAGES) {
				uint64_t len = 1 + hvt_splitmix64(&rng) % 20;

				len = at + len > PAGES ? PAGES - at : len;
				runs[n][0] = at;
				runs[n++][1] = len;
				for (uint64_t p = at; p < at + len; p++)
					truth[p]++;
				at += len + 1 + hvt_splitmix64(&rng) % 30;
			}
			add_set(&w, (const uint64_t(*)[2])runs, n);
		}
		for (uint64_t at = hvt_splitmix64(&rng) % 4; at < PAGES;) {
			uint64_t len = 1 + hvt_splitmix64(&rng) % 40;
			uint32_t nr_acc = hvt_splitmix64(&rng) % 3 ? (uint32_t)(hvt_splitmix64(&rng) % 6) : 0;

			len = at + len > PAGES ? PAGES - at : len;
			regions[nr++] = (struct damon_region){at * PS, (at + len) * PS, nr_acc, 0};
			for (uint64_t p = at; p < at + len; p++)
				damon[p] = nr_acc;
			at += len + hvt_splitmix64(&rng) % 3;
		}
		for (int p = 0; p < PAGES; p++) {
			want_d += damon[p] > 0;
			want_t += truth[p] > 0;
			want_both += damon[p] && truth[p];
		}
		k = (want_t * hot + 99) / 100;
		brute_hot(truth, k, hot_t);
		brute_hot(damon, k, hot_d);
		for (int p = 0; p < PAGES; p++)
			want_hot_both += hot_t[p] && hot_d[p];
		assert_int_equal(score_window_close(&w, regions, nr, PS, hot, &c), 0);
		if (c.damon_pages != want_d || c.true_pages != want_t || c.both_pages != want_both ||
		    c.hot_k != k || c.hot_both != want_hot_both)
			fail_msg("seed %" PRIu64 ": got %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
				 " %" PRIu64 ", want %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
				 " %" PRIu64,
				 seed, c.damon_pages, c.true_pages, c.both_pages, c.hot_k, c.hot_both, want_d,
				 want_t, want_both, k, want_hot_both);
		score_window_fini(&w);
	}
	printf("# 300 seeds (1-300) of random windows against the page-by-page count\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_by_hand),
	    cmocka_unit_test(test_damon_idle),
	    cmocka_unit_test(test_sweep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
