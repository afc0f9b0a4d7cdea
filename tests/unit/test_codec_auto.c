// SPDX-License-Identifier: MIT
/*
 * The writer's choice of codec (hvt_pageset_encode_auto_into, lib/format/pageset_codec.c): a set whose runs
 * could make zstd-runs' frame larger than a bitmap is written with roaring, so no set takes more than
 * hvt_pageset_encode_auto_bound (about npages / 8 bytes); every other set is written with zstd-runs, byte
 * for byte as before. And the roaring encoder, which writes the portable format itself, writes the bytes
 * CRoaring's own serialisation does.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <roaring/roaring.h>

#include "hvmtrace/error.h"
#include "hvmtrace/pageset.h"
#include "hvmtrace/util.h"

/* Runs and gaps of 1 to max pages at random (a stream zstd can hardly shrink when max is small). */
static void random_runs(struct hvt_pageset *s, uint64_t seed, uint64_t max)
{
	uint64_t p = hvt_splitmix64(&seed) % max;

	while (p < s->npages) {
		uint64_t len = 1 + hvt_splitmix64(&seed) % max;

		hvt_pageset_set_range(s, p, len < s->npages - p ? len : s->npages - p);
		p += len + 1 + hvt_splitmix64(&seed) % max;
	}
}

static void every_other_page(struct hvt_pageset *s)
{
	for (uint64_t p = 0; p < s->npages; p += 2)
		hvt_pageset_set(s, p);
}

/* Encodes s as the writer does into a buffer of exactly the auto bound; returns the codec, checks the rest.
 */
static enum hvt_codec auto_round_trip(const struct hvt_pageset *s, const char *what)
{
	uint64_t bound = hvt_pageset_encode_auto_bound(s->npages);
	struct hvt_err err = {{0}};
	struct hvt_pageset back;
	enum hvt_codec c;
	uint8_t *buf = malloc(bound);
	size_t len;
	int rc;

	assert_non_null(buf);
	rc = hvt_pageset_encode_auto_into(s, buf, bound, &len, &c);
	if (rc)
		fail_msg("%s, %llu pages: %s", what, (unsigned long long)s->npages, strerror(-rc));
	assert_true(len <= bound);
	assert_int_equal(hvt_pageset_init(&back, s->npages), 0);
	if (hvt_pageset_decode(&back, c, buf, len, &err))
		fail_msg("%s, %llu pages, %s: %s", what, (unsigned long long)s->npages, hvt_codec_name(c),
			 err.msg);
	assert_true(hvt_pageset_equal(s, &back));
	hvt_pageset_fini(&back);
	free(buf);
	return c;
}

/* (a) The worst patterns take roaring, within about a bitmap's size, and decode to the set. */
static void test_worst_sets_take_roaring(void **state)
{
	/* slots of one page past a container and one short of one, a 16 GiB one, and a 40 GiB one, whose
	 * stream overflows the encoder's 1 MiB scratch before it reaches roaring's bound (the count stops
	 * past it) */
	static const uint64_t sizes[] = {65536 * 3 + 1, 65536 * 40 - 1, 4194304, 65536 * 160};

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i], bound = hvt_pageset_encode_auto_bound(n);
		struct hvt_pageset s;

		/* a bitmap and 9 bytes a container, where zstd-runs' frame could take a byte a page */
		assert_true(bound <= n / 8 + (n / 65536 + 1) * 9 + 8192 + 16);
		assert_true(bound <
			    hvt_pageset_encode_bound(n, HVT_CODEC_ZSTD_RUNS) / (n < 65536 * 8 ? 5 : 7));
		assert_int_equal(hvt_pageset_init(&s, n), 0);
		every_other_page(&s);
		assert_int_equal(auto_round_trip(&s, "every other page"), HVT_CODEC_ROARING);
		for (uint64_t seed = 1; seed <= 4; seed++) {
			hvt_pageset_clear(&s);
			random_runs(&s, seed * 1000 + i, 4);
			assert_int_equal(auto_round_trip(&s, "random runs of 1-4 pages"), HVT_CODEC_ROARING);
		}
		hvt_pageset_fini(&s);
	}
}

/* Sets under the threshold are zstd-runs, the bytes hvt_pageset_encode writes with it. */
static void test_ordinary_sets_unchanged(void **state)
{
	static const uint64_t n = 65536 * 20 + 7;
	struct hvt_pageset s;

	(void)state;
	assert_int_equal(hvt_pageset_init(&s, n), 0);
	for (int k = 0; k < 6; k++) {
		uint64_t bound = hvt_pageset_encode_auto_bound(n);
		uint8_t *plain, *buf = malloc(bound);
		size_t plain_len, len;
		enum hvt_codec c;

		hvt_pageset_clear(&s);
		if (k == 0)
			hvt_pageset_set_range(&s, 100, n / 3);
		else if (k == 1)
			for (uint64_t p = 0; p < n; p += 64)
				hvt_pageset_set(&s, p);
		else /* runs and gaps of up to 24 pages: 2 bytes every 25 pages or so, under a bit a page */
			random_runs(&s, (uint64_t)k, 24);
		assert_non_null(buf);
		assert_int_equal(hvt_pageset_encode_auto_into(&s, buf, bound, &len, &c), 0);
		assert_int_equal(c, HVT_CODEC_ZSTD_RUNS);
		assert_int_equal(hvt_pageset_encode(&s, HVT_CODEC_ZSTD_RUNS, &plain, &plain_len), 0);
		assert_int_equal(len, plain_len);
		assert_memory_equal(buf, plain, len);
		free(plain);
		free(buf);
	}
	hvt_pageset_fini(&s);
}

/* Slots too small for a roaring container to pay, and slots past 32-bit page indexes, stay zstd-runs. */
static void test_bounds_where_roaring_cannot_help(void **state)
{
	struct hvt_pageset s;

	(void)state;
	assert_int_equal(hvt_pageset_encode_auto_bound(1000),
			 hvt_pageset_encode_bound(1000, HVT_CODEC_ZSTD_RUNS));
	assert_int_equal(hvt_pageset_encode_auto_bound((1ull << 32) + 1),
			 hvt_pageset_encode_bound((1ull << 32) + 1, HVT_CODEC_ZSTD_RUNS));
	assert_int_equal(hvt_pageset_init(&s, 1000), 0);
	every_other_page(&s);
	assert_int_equal(auto_round_trip(&s, "every other page of 1000"), HVT_CODEC_ZSTD_RUNS);
	hvt_pageset_fini(&s);
}

/* What CRoaring writes for the set: built from its runs and run-optimised, as the encoder once did. */
static void croaring_bytes(const struct hvt_pageset *s, uint8_t **out, size_t *len)
{
	roaring_bitmap_t *r = roaring_bitmap_create();
	struct hvt_run run;
	uint64_t pos = 0;

	assert_non_null(r);
	while (hvt_pageset_next_run(s, &pos, &run))
		roaring_bitmap_add_range(r, run.first, run.first + run.count);
	roaring_bitmap_run_optimize(r);
	*len = roaring_bitmap_portable_size_in_bytes(r);
	*out = malloc(*len);
	assert_non_null(*out);
	assert_int_equal(roaring_bitmap_portable_serialize(r, (char *)*out), *len);
	roaring_bitmap_free(r);
}

static unsigned croaring_unreadable;

/*
 * Ours decodes to the set, and is CRoaring's bytes wherever CRoaring's read back. CRoaring 0.2.66 can leave a
 * bitset container of 4096 values or fewer (a run container past 2048 runs becomes one, whatever its count),
 * which its portable format then describes as an array: those bytes do not read back, and ours (an array)
 * do.
 */
static void assert_same_as_croaring(const struct hvt_pageset *s, const char *what)
{
	struct hvt_err err = {{0}};
	struct hvt_pageset back;
	uint8_t *ours, *theirs;
	size_t ours_len, theirs_len;

	assert_int_equal(hvt_pageset_encode(s, HVT_CODEC_ROARING, &ours, &ours_len), 0);
	assert_int_equal(hvt_pageset_init(&back, s->npages), 0);
	if (hvt_pageset_decode(&back, HVT_CODEC_ROARING, ours, ours_len, &err))
		fail_msg("%s, %llu pages: %s", what, (unsigned long long)s->npages, err.msg);
	assert_true(hvt_pageset_equal(s, &back));
	hvt_pageset_fini(&back);
	croaring_bytes(s, &theirs, &theirs_len);
	if (roaring_bitmap_portable_deserialize_size((const char *)theirs, theirs_len) != theirs_len)
		croaring_unreadable++;
	else if (ours_len != theirs_len || memcmp(ours, theirs, ours_len))
		fail_msg("%s, %llu pages: %zu bytes, CRoaring's %zu, or other bytes", what,
			 (unsigned long long)s->npages, ours_len, theirs_len);
	free(ours);
	free(theirs);
}

/*
 * Every container form (array, bitset, run, full), ties between run and array (runs of 2 pages), containers
 * started by runs of 1, 2 and 3 pages, runs across containers, 1 to 5 containers (offsets appear at 4),
 * random densities.
 */
static void test_roaring_bytes_as_croaring(void **state)
{
	static const uint64_t sizes[] = {1, 70, 65536, 65536 * 2 + 3, 65536 * 3, 65536 * 5 - 9};
	char what[64];

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t n = sizes[i];
		struct hvt_pageset s;

		assert_int_equal(hvt_pageset_init(&s, n), 0);
		assert_same_as_croaring(&s, "empty");
		hvt_pageset_set_range(&s, 0, n);
		assert_same_as_croaring(&s, "full");
		for (uint64_t len = 1; len <= 3; len++)
			for (uint64_t period = len + 1; period <= 2 * len + 2; period++) {
				hvt_pageset_clear(&s);
				for (uint64_t p = 0; p < n; p += period)
					hvt_pageset_set_range(&s, p, len < n - p ? len : n - p);
				snprintf(what, sizeof(what), "runs of %llu every %llu",
					 (unsigned long long)len, (unsigned long long)period);
				assert_same_as_croaring(&s, what);
			}
		/* ties between run and array (as many values as twice the runs), the container started by a
		 * run of 2 pages (CRoaring keeps a run container) or of 1 (an array) */
		for (uint64_t first = 1; first <= 2 && n >= 400; first++) {
			hvt_pageset_clear(&s);
			hvt_pageset_set_range(&s, 0, first);
			hvt_pageset_set_range(&s, 10, first == 1 ? 3 : 2);
			for (uint64_t p = 20; p + 2 < 400; p += 10)
				hvt_pageset_set_range(&s, p, 2);
			snprintf(what, sizeof(what), "a tie, the first run %llu pages",
				 (unsigned long long)first);
			assert_same_as_croaring(&s, what);
		}
		for (uint64_t seed = 1; seed <= 40; seed++) {
			uint64_t r = seed, first = hvt_splitmix64(&r) % 4, max = 1 + hvt_splitmix64(&r) % 64;
			uint64_t many = 1 + hvt_splitmix64(&r) % 6000;

			/* a container's first run of 1-4 pages, then runs of up to max pages, or a count of
			 * them */
			hvt_pageset_clear(&s);
			random_runs(&s, seed, max);
			if (seed % 2) {
				hvt_pageset_clear(&s);
				for (uint64_t k = 0; k < many; k++)
					hvt_pageset_set(&s, hvt_splitmix64(&r) % n);
			}
			for (uint64_t c = 0; c * 65536 < n; c++) {
				hvt_pageset_set_range(&s, c * 65536,
						      first + 1 < n - c * 65536 ? first + 1 : 1);
				if (c * 65536 + first + 1 < n)
					s.words[(c * 65536 + first + 1) / 64] &=
					    ~(1ull << ((c * 65536 + first + 1) % 64));
			}
			snprintf(what, sizeof(what), "seed %llu", (unsigned long long)seed);
			assert_same_as_croaring(&s, what);
		}
		hvt_pageset_fini(&s);
	}
	print_message("%u sets CRoaring itself wrote unreadably\n", croaring_unreadable);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_worst_sets_take_roaring),
	    cmocka_unit_test(test_ordinary_sets_unchanged),
	    cmocka_unit_test(test_bounds_where_roaring_cannot_help),
	    cmocka_unit_test(test_roaring_bytes_as_croaring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
