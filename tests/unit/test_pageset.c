// SPDX-License-Identifier: MIT
/* Unit tests for lib/format/pageset.c: every operation against a one-byte-per-page reference model. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hvmtrace/pageset.h"
#include "hvmtrace/util.h"

/* Sizes around word boundaries, and a few larger ones. */
static const uint64_t sizes[] = {1, 2, 63, 64, 65, 127, 128, 129, 1000, 4096 + 17, 70000};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint64_t rng = 42;

static uint64_t rnd(void)
{
	return hvt_splitmix64(&rng);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

struct model {
	uint64_t n;
	uint8_t *bit;
};

static void model_init(struct model *m, uint64_t n)
{
	m->n = n;
	m->bit = calloc(n ? n : 1, 1);
	assert_non_null(m->bit);
}

static void model_set_range(struct model *m, uint64_t first, uint64_t count)
{
	for (uint64_t i = first; i < first + count && i < m->n; i++)
		m->bit[i] = 1;
}

static uint64_t model_count(const struct model *m)
{
	uint64_t c = 0;

	for (uint64_t i = 0; i < m->n; i++)
		c += m->bit[i];
	return c;
}

/* Fills both with the same random content: scattered pages, runs, and runs touching either end. */
static void random_fill(struct hvt_pageset *s, struct model *m)
{
	uint64_t n = m->n, ops = 1 + below(20);

	for (uint64_t k = 0; k < ops; k++) {
		uint64_t first = below(n), count = 1 + below(n / 4 + 1);

		switch (below(5)) {
		case 0:
			hvt_pageset_set(s, first);
			model_set_range(m, first, 1);
			break;
		case 1: /* run at the start of the slot */
			hvt_pageset_set_range(s, 0, count);
			model_set_range(m, 0, count);
			break;
		case 2: /* run ending exactly at the last page */
			count = count > n ? n : count;
			hvt_pageset_set_range(s, n - count, count);
			model_set_range(m, n - count, count);
			break;
		case 3: /* run reaching past the end: clipped */
			hvt_pageset_set_range(s, first, n);
			model_set_range(m, first, n);
			break;
		default:
			hvt_pageset_set_range(s, first, count);
			model_set_range(m, first, count);
		}
	}
}

static void assert_matches(const struct hvt_pageset *s, const struct model *m)
{
	assert_int_equal(s->npages, m->n);
	for (uint64_t i = 0; i < m->n; i++)
		assert_int_equal(hvt_pageset_test(s, i), m->bit[i]);
	assert_false(hvt_pageset_test(s, m->n));
	assert_int_equal(hvt_pageset_count(s), model_count(m));
	/* the invariants: bits past npages stay zero, and a word without its mark is zero */
	if (m->n % 64)
		assert_int_equal(s->words[(m->n - 1) / 64] >> (m->n % 64), 0);
	for (uint64_t w = 0; w < hvt_pageset_nwords(m->n); w++)
		if (!(s->marks[w / 64] >> (w % 64) & 1))
			assert_int_equal(s->words[w], 0);
}

/* The runs next_run walks are the model's, page for page. */
static void assert_runs_match(const struct hvt_pageset *s, const struct model *m)
{
	struct hvt_run run;
	uint64_t pos = 0, expect = 0;

	while (hvt_pageset_next_run(s, &pos, &run)) {
		while (expect < m->n && !m->bit[expect])
			expect++;
		assert_int_equal(run.first, expect);
		for (uint64_t i = 0; i < run.count; i++)
			assert_true(m->bit[run.first + i]);
		expect = run.first + run.count;
		assert_true(expect == m->n || !m->bit[expect]);
	}
	while (expect < m->n)
		assert_false(m->bit[expect++]);
}

/* Whole words, for the checks that must not trust the marks. */
static bool all_words_zero(const struct hvt_pageset *s)
{
	for (uint64_t w = 0; w < hvt_pageset_nwords(s->npages); w++)
		if (s->words[w])
			return false;
	return true;
}

/*
 * A set reused interval after interval (record keeps its sets, cleared): clear walks the marked words only,
 * so every word must come back zero whatever was set before, and the next fill must read as it alone. Words
 * cleared behind the marks' back (bits taken out) stay marked and must not show; words written behind them
 * (KVM_AD_HARVEST) count once remarked. Seeds swept.
 */
static void test_clear_reuse_remark(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 8; seed++) {
		rng = seed * 0x9e3779b97f4a7c15ull;
		for (size_t z = 0; z < NSIZES; z++) {
			uint64_t n = sizes[z];
			struct hvt_pageset s, t;
			struct model m;

			assert_int_equal(hvt_pageset_init(&s, n), 0);
			assert_int_equal(hvt_pageset_init(&t, n), 0);
			for (int round = 0; round < 6; round++) {
				model_init(&m, n);
				random_fill(&s, &m);
				/* take some bits out through the words: their marks stay */
				for (int k = 0; k < 4; k++) {
					uint64_t p = below(n);

					s.words[p / 64] &= ~(1ull << (p % 64));
					m.bit[p] = 0;
				}
				assert_matches(&s, &m);
				assert_runs_match(&s, &m);
				/* intersecting with an empty set leaves marks over words now zero */
				if (round == 3) {
					assert_int_equal(hvt_pageset_intersect(&s, &t), 0);
					memset(m.bit, 0, n);
					assert_matches(&s, &m);
					assert_runs_match(&s, &m);
				}
				hvt_pageset_clear(&s);
				assert_true(all_words_zero(&s));
				assert_int_equal(hvt_pageset_count(&s), 0);
				free(m.bit);
			}
			/* written behind the marks, as the kernel writes them, then remarked */
			model_init(&m, n);
			for (int k = 0; k < 5; k++) {
				uint64_t p = below(n);

				s.words[p / 64] |= 1ull << (p % 64);
				m.bit[p] = 1;
			}
			hvt_pageset_remark(&s);
			assert_matches(&s, &m);
			assert_runs_match(&s, &m);
			hvt_pageset_clear(&s);
			assert_true(all_words_zero(&s));
			free(m.bit);
			hvt_pageset_fini(&t);
			hvt_pageset_fini(&s);
		}
	}
}

static void test_set_test_count(void **state)
{
	(void)state;
	for (size_t z = 0; z < NSIZES; z++) {
		for (int round = 0; round < 20; round++) {
			struct hvt_pageset s;
			struct model m;

			assert_int_equal(hvt_pageset_init(&s, sizes[z]), 0);
			model_init(&m, sizes[z]);
			random_fill(&s, &m);
			assert_matches(&s, &m);
			/* out-of-range pages and empty ranges change nothing */
			hvt_pageset_set(&s, sizes[z]);
			hvt_pageset_set_range(&s, sizes[z], 5);
			hvt_pageset_set_range(&s, 0, 0);
			assert_matches(&s, &m);
			hvt_pageset_clear(&s);
			assert_int_equal(hvt_pageset_count(&s), 0);
			hvt_pageset_fini(&s);
			free(m.bit);
		}
	}
}

static void test_full_and_empty(void **state)
{
	(void)state;
	for (size_t z = 0; z < NSIZES; z++) {
		struct hvt_pageset s;
		struct hvt_run run;
		uint64_t pos = 0;

		assert_int_equal(hvt_pageset_init(&s, sizes[z]), 0);
		assert_false(hvt_pageset_next_run(&s, &pos, &run));
		hvt_pageset_set_range(&s, 0, sizes[z]);
		assert_int_equal(hvt_pageset_count(&s), sizes[z]);
		pos = 0;
		assert_true(hvt_pageset_next_run(&s, &pos, &run));
		assert_int_equal(run.first, 0);
		assert_int_equal(run.count, sizes[z]);
		assert_false(hvt_pageset_next_run(&s, &pos, &run));
		hvt_pageset_fini(&s);
	}
}

static void test_zero_pages(void **state)
{
	struct hvt_pageset s, c;
	struct hvt_run run;
	uint64_t pos = 0;

	(void)state;
	assert_int_equal(hvt_pageset_init(&s, 0), 0);
	hvt_pageset_set(&s, 0);
	hvt_pageset_set_range(&s, 0, 10);
	assert_int_equal(hvt_pageset_count(&s), 0);
	assert_false(hvt_pageset_test(&s, 0));
	assert_false(hvt_pageset_next_run(&s, &pos, &run));
	assert_int_equal(hvt_pageset_copy(&c, &s), 0);
	assert_true(hvt_pageset_equal(&c, &s));
	hvt_pageset_fini(&c);
	hvt_pageset_fini(&s);
	/* a size whose word count overflows is refused, not wrapped */
	assert_int_equal(hvt_pageset_init(&s, UINT64_MAX), -ENOMEM);
}

static void test_next_run(void **state)
{
	(void)state;
	for (size_t z = 0; z < NSIZES; z++) {
		for (int round = 0; round < 30; round++) {
			struct hvt_pageset s;
			struct model m;
			struct hvt_run run;
			uint64_t pos = 0, i = 0;

			assert_int_equal(hvt_pageset_init(&s, sizes[z]), 0);
			model_init(&m, sizes[z]);
			random_fill(&s, &m);
			/* walk the model's maximal runs alongside the iterator */
			for (;;) {
				uint64_t first, end;

				while (i < m.n && !m.bit[i])
					i++;
				if (i == m.n)
					break;
				first = i;
				while (i < m.n && m.bit[i])
					i++;
				end = i;
				assert_true(hvt_pageset_next_run(&s, &pos, &run));
				assert_int_equal(run.first, first);
				assert_int_equal(run.count, end - first);
			}
			assert_false(hvt_pageset_next_run(&s, &pos, &run));
			assert_false(hvt_pageset_next_run(&s, &pos, &run));
			hvt_pageset_fini(&s);
			free(m.bit);
		}
	}
}

/* Large sets, sparse and dense: runs spanning many words and gaps of many words. */
static void test_next_run_large(void **state)
{
	const uint64_t n = 1ull << 24;
	struct hvt_pageset s;
	struct hvt_run run;
	uint64_t pos = 0;

	(void)state;
	assert_int_equal(hvt_pageset_init(&s, n), 0);
	hvt_pageset_set(&s, 5);
	hvt_pageset_set_range(&s, 1000003, 7000000);
	hvt_pageset_set(&s, n - 1);
	assert_true(hvt_pageset_next_run(&s, &pos, &run));
	assert_int_equal(run.first, 5);
	assert_int_equal(run.count, 1);
	assert_true(hvt_pageset_next_run(&s, &pos, &run));
	assert_int_equal(run.first, 1000003);
	assert_int_equal(run.count, 7000000);
	assert_true(hvt_pageset_next_run(&s, &pos, &run));
	assert_int_equal(run.first, n - 1);
	assert_int_equal(run.count, 1);
	assert_false(hvt_pageset_next_run(&s, &pos, &run));

	/* dense: everything but two pages */
	hvt_pageset_set_range(&s, 0, n);
	s.words[100] &= ~(1ull << 7);
	s.words[200000] &= ~(1ull << 63);
	pos = 0;
	assert_true(hvt_pageset_next_run(&s, &pos, &run));
	assert_int_equal(run.first, 0);
	assert_int_equal(run.count, 100 * 64 + 7);
	assert_true(hvt_pageset_next_run(&s, &pos, &run));
	assert_int_equal(run.first, 100 * 64 + 8);
	assert_int_equal(run.count, 200000 * 64 + 63 - (100 * 64 + 8));
	assert_true(hvt_pageset_next_run(&s, &pos, &run));
	assert_int_equal(run.first, 200001 * 64);
	assert_int_equal(run.count, n - 200001 * 64);
	assert_false(hvt_pageset_next_run(&s, &pos, &run));
	hvt_pageset_fini(&s);
}

static void test_algebra(void **state)
{
	(void)state;
	for (size_t z = 0; z < NSIZES; z++) {
		for (int round = 0; round < 20; round++) {
			struct hvt_pageset a, b, r, other;
			struct model ma, mb;
			bool subset = true, equal = true;
			uint64_t n = sizes[z];

			assert_int_equal(hvt_pageset_init(&a, n), 0);
			assert_int_equal(hvt_pageset_init(&b, n), 0);
			model_init(&ma, n);
			model_init(&mb, n);
			random_fill(&a, &ma);
			if (round % 4 == 0) { /* b ⊇ a, sometimes equal */
				assert_int_equal(hvt_pageset_union(&b, &a), 0);
				memcpy(mb.bit, ma.bit, n);
			}
			if (round % 8 != 0)
				random_fill(&b, &mb);
			for (uint64_t i = 0; i < n; i++) {
				subset &= !ma.bit[i] || mb.bit[i];
				equal &= ma.bit[i] == mb.bit[i];
			}
			assert_int_equal(hvt_pageset_is_subset(&a, &b), subset);
			assert_int_equal(hvt_pageset_equal(&a, &b), equal);
			assert_true(hvt_pageset_is_subset(&a, &a));

			struct model mr;

			model_init(&mr, n);
			for (int op = 0; op < 3; op++) {
				assert_int_equal(hvt_pageset_copy(&r, &a), 0);
				assert_true(hvt_pageset_equal(&r, &a));
				if (op == 0)
					assert_int_equal(hvt_pageset_union(&r, &b), 0);
				else if (op == 1)
					assert_int_equal(hvt_pageset_intersect(&r, &b), 0);
				else
					assert_int_equal(hvt_pageset_subtract(&r, &b), 0);
				for (uint64_t i = 0; i < n; i++)
					mr.bit[i] = op == 0   ? (ma.bit[i] | mb.bit[i])
						    : op == 1 ? (ma.bit[i] & mb.bit[i])
							      : (ma.bit[i] & !mb.bit[i]);
				assert_matches(&r, &mr);
				hvt_pageset_fini(&r);
			}

			/* sets of different sizes never combine */
			assert_int_equal(hvt_pageset_init(&other, n + 1), 0);
			assert_int_equal(hvt_pageset_union(&a, &other), -EINVAL);
			assert_int_equal(hvt_pageset_intersect(&a, &other), -EINVAL);
			assert_int_equal(hvt_pageset_subtract(&a, &other), -EINVAL);
			assert_false(hvt_pageset_equal(&a, &other));
			assert_false(hvt_pageset_is_subset(&other, &a));
			assert_matches(&a, &ma);

			hvt_pageset_fini(&other);
			hvt_pageset_fini(&a);
			hvt_pageset_fini(&b);
			free(ma.bit);
			free(mb.bit);
			free(mr.bit);
		}
	}
}

static void test_load_le(void **state)
{
	(void)state;
	for (size_t z = 0; z < NSIZES; z++) {
		uint64_t n = sizes[z], nbytes = hvt_pageset_nwords(n) * 8;
		uint8_t *raw = malloc(nbytes);
		struct hvt_pageset s;
		struct model m;

		assert_non_null(raw);
		/* random bytes, garbage past npages included: KVM-style bitmap, byte i holds pages 8i..8i+7
		 */
		for (uint64_t i = 0; i < nbytes; i++)
			raw[i] = (uint8_t)rnd();
		model_init(&m, n);
		for (uint64_t i = 0; i < n; i++)
			m.bit[i] = (raw[i / 8] >> (i % 8)) & 1;
		assert_int_equal(hvt_pageset_init(&s, n), 0);
		hvt_pageset_set(&s, 0); /* replaced, not merged */
		hvt_pageset_load_le(&s, raw);
		assert_matches(&s, &m);
		hvt_pageset_fini(&s);
		free(m.bit);
		free(raw);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_set_test_count), cmocka_unit_test(test_full_and_empty),
	    cmocka_unit_test(test_zero_pages),     cmocka_unit_test(test_next_run),
	    cmocka_unit_test(test_next_run_large), cmocka_unit_test(test_algebra),
	    cmocka_unit_test(test_load_le),        cmocka_unit_test(test_clear_reuse_remark),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
