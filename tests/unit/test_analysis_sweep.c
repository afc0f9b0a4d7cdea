// SPDX-License-Identifier: MIT
/*
 * The analyses' per-page sweep (lib/analysis/analysis_sweep.c) against a plain model: every page's count and
 * last interval in 64-bit integers, the gaps counted page by page. Each instruction set the CPU has, and
 * epochs from 1 interval (a flush before every interval) to the largest, over random runs: short and long, at
 * the slot's ends, touching pages in many intervals and with many different histories, for 20 seeds; the
 * chunks found directly (even seeds) and through the hash (odd ones), the counts compared chunk by chunk.
 * Window 0 is the sweep of counts only (report --no-windows): the same counts, no gaps. Each case is also
 * swept in two parts owning complementary blocks, as the loader's two threads do: the parts' gaps add up to
 * the model's and their chunks, disjoint, hold its counts.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../lib/analysis/analysis_sweep.h"
#include "hvmtrace/pageset.h"

#define NPAGES 3000
#define BASE   5000 /* GFN of the first page */
#define NIV    60   /* intervals */

struct model {
	uint64_t count[NPAGES];
	uint64_t last[NPAGES]; /* 1-based interval that touched the page last; 0: never */
};

/* Random ascending, disjoint runs in [BASE, BASE + NPAGES): lengths 1 to 70, some at the slot's ends. */
static size_t random_runs(struct hvt_run *v, unsigned *seed)
{
	size_t n = 0;
	uint64_t pos = rand_r(seed) % 2 ? 0 : (uint64_t)(rand_r(seed) % 40);

	while (pos < NPAGES) {
		uint64_t len = 1 + (uint64_t)(rand_r(seed) % (rand_r(seed) % 4 ? 20 : 70));

		if (pos + len > NPAGES)
			len = NPAGES - pos;
		v[n].first = BASE + pos;
		v[n].count = len;
		n++;
		pos += len + 1 + (uint64_t)(rand_r(seed) % (rand_r(seed) % 3 ? 8 : 200));
	}
	return n;
}

static void model_touch(struct model *m, const struct hvt_run *v, size_t n, uint64_t k, uint32_t w,
			uint64_t *gap)
{
	for (size_t r = 0; r < n; r++)
		for (uint64_t g = v[r].first; g < v[r].first + v[r].count; g++) {
			uint64_t i = g - BASE, d = m->last[i] ? k - m->last[i] : UINT64_MAX;

			if (d < w)
				gap[d]++;
			m->count[i]++;
			m->last[i] = k;
		}
}

/*
 * One sweep of the whole (nparts 1), or two sweeps of complementary blocks of `block` pages, as the loader's
 * two threads sweep side by side: their gaps added up and their chunks together must be the model's, and
 * no chunk may be made by both or hold a page of a block of the other.
 */
static void check_one(enum hvt_sweep_impl impl, uint32_t epoch, uint32_t window, unsigned seed,
		      uint32_t nparts, uint64_t block)
{
	/* two parts: every other block, or (odd seeds) one or two blocks in four and the others */
	uint32_t nblocks = seed % 2 ? 4 : 2, mask0 = seed % 4 == 3 ? 0x6 : 0x1;
	struct hvt_sweep_tuning t = {
	    .epoch = epoch, .impl = impl, .hash = seed % 2}; /* odd seeds: the hash */
	struct model *m = calloc(1, sizeof(*m));
	struct hvt_run *v = malloc(NPAGES * sizeof(*v));
	uint64_t *want = calloc(window + 1, sizeof(*want));               /* + 1: window 0 has no gaps */
	uint64_t *seen = calloc(NPAGES + HVT_COUNT_CHUNK, sizeof(*seen)); /* the parts' counts by page */
	bool *made = calloc(NPAGES / HVT_COUNT_CHUNK + 1, sizeof(*made));
	struct hvt_sweep s[2];

	assert_non_null(m);
	assert_non_null(v);
	assert_non_null(want);
	assert_non_null(seen);
	assert_non_null(made);
	for (uint32_t p = 0; p < nparts; p++) {
		assert_int_equal(hvt_sweep_init(&s[p], NPAGES, 1u << 1, window, &t), 0);
		assert_true(window ? s[p].gap[1] != NULL : s[p].gap[1] == NULL);
		if (nparts > 1)
			hvt_sweep_own(&s[p], p ? ~mask0 & ((1u << nblocks) - 1) : mask0, nblocks, block);
	}
	for (uint64_t k = 1; k <= NIV; k++) {
		/* every few intervals the same runs again, so that whole segments share one previous stamp */
		unsigned again = seed + (unsigned)(k % 4 ? k : k - 1);
		size_t n = random_runs(v, &again);

		memset(want, 0, window * sizeof(*want));
		model_touch(m, v, n, k, window, want);
		for (uint32_t p = 0; p < nparts; p++) {
			assert_int_equal(hvt_sweep_begin(&s[p]), 0);
			assert_int_equal(hvt_sweep_touch(&s[p], 1, v, n, BASE), 0);
		}
		for (uint32_t d = 1; d < window; d++) {
			uint64_t got = 0;

			for (uint32_t p = 0; p < nparts; p++)
				got += s[p].gap[1][d];
			if (got != want[d])
				fail_msg(
				    "impl %d epoch %u window %u seed %u parts %u: interval %lu, gap %u: %lu "
				    "pages, want %lu",
				    impl, epoch, window, seed, nparts, (unsigned long)k, d,
				    (unsigned long)got, (unsigned long)want[d]);
		}
		for (uint32_t p = 0; window && p < nparts; p++) /* as the loader does once it has read them */
			memset(s[p].gap[1], 0, window * sizeof(*s[p].gap[1]));
	}
	for (uint32_t p = 0; p < nparts; p++) {
		struct hvt_count_chunk *got;
		uint64_t ngot, prev_end = 0;

		assert_int_equal(hvt_sweep_take(&s[p], &got, &ngot), 0);
		/* ascending, none of a kind not swept, each made once and inside the part's blocks */
		for (uint64_t c = 0; c < ngot; c++) {
			assert_true(got[c].first % HVT_COUNT_CHUNK == 0 && got[c].first >= prev_end);
			assert_true(got[c].first < NPAGES);
			assert_false(made[got[c].first / HVT_COUNT_CHUNK]);
			made[got[c].first / HVT_COUNT_CHUNK] = true;
			if (nparts > 1)
				assert_int_equal(s[p].mask >> (got[c].first / block % nblocks) & 1, 1);
			assert_null(got[c].count[0]);
			assert_non_null(got[c].count[1]);
			for (uint64_t j = 0; j < HVT_COUNT_CHUNK; j++)
				seen[got[c].first + j] = got[c].count[1][j];
			prev_end = got[c].first + HVT_COUNT_CHUNK;
			free(got[c].count[1]);
		}
		free(got);
		if (epoch && epoch < NIV)
			assert_int_equal(s[p].flushes, (NIV - 1) / epoch);
		hvt_sweep_fini(&s[p]);
	}
	/* against the dense model: untouched pages, those of no chunk and past the range, 0 */
	for (uint64_t i = 0; i < NPAGES + HVT_COUNT_CHUNK; i++) {
		uint64_t want_n = i < NPAGES ? m->count[i] : 0;

		if (seen[i] != want_n)
			fail_msg("impl %d epoch %u seed %u parts %u: page %lu counted %lu times, want %lu",
				 impl, epoch, seed, nparts, (unsigned long)i, (unsigned long)seen[i],
				 (unsigned long)want_n);
	}
	free(made);
	free(seen);
	free(want);
	free(v);
	free(m);
}

static void test_against_model(void **state)
{
	static const enum hvt_sweep_impl impls[] = {HVT_SWEEP_SCALAR, HVT_SWEEP_SSE2, HVT_SWEEP_AVX2};
	static const uint32_t epochs[] = {1, 2, 3, 7, 16, 0};
	static const uint32_t windows[] = {0, 1, 2, 5, 61};
	struct hvt_sweep probe;

	(void)state;
	for (size_t i = 0; i < sizeof(impls) / sizeof(*impls); i++) {
		struct hvt_sweep_tuning t = {.impl = impls[i]};

		if (hvt_sweep_init(&probe, 1, 1, 1, &t)) {
			print_message("impl %d: not on this CPU, skipped\n", impls[i]);
			continue;
		}
		hvt_sweep_fini(&probe);
		for (size_t e = 0; e < sizeof(epochs) / sizeof(*epochs); e++)
			for (size_t w = 0; w < sizeof(windows) / sizeof(*windows); w++)
				for (unsigned seed = 1; seed <= 20; seed++) {
					check_one(impls[i], epochs[e], windows[w], seed, 1, 0);
					/* two parts, of one chunk per block and of two */
					check_one(impls[i], epochs[e], windows[w], seed, 2,
						  HVT_COUNT_CHUNK * (1 + seed / 2 % 2));
				}
	}
}

static void test_refusals(void **state)
{
	struct hvt_sweep s;

	(void)state;
	assert_int_equal(hvt_sweep_init(&s, 10, 1, 65536, NULL), -EINVAL);
	assert_int_equal(hvt_sweep_init(&s, 10, 1, 0, NULL), 0); /* counts only */
	assert_null(s.gap[0]);
	hvt_sweep_fini(&s);
	assert_int_equal(hvt_sweep_init(&s, 10, 1, 65535, NULL), 0);
	assert_true(s.epoch >= 1 && s.epoch - 1 + s.window <= 65535); /* the newest stamp fits in 16 bits */
	hvt_sweep_fini(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_against_model),
	    cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
