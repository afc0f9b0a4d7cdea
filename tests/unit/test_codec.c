// SPDX-License-Identifier: MIT
/*
 * Unit tests for lib/format/pageset_codec.c: round trips of the sets the tracer produces, with both codecs,
 * and hostile input (truncations, byte flips, crafted streams) that must give -EINVAL, never a crash or a
 * read out of bounds (run under ASan).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zstd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/pageset.h"
#include "hvmtrace/util.h"

static const enum hvt_codec codecs[] = {HVT_CODEC_ROARING, HVT_CODEC_ZSTD_RUNS};
#define NCODECS (sizeof(codecs) / sizeof(codecs[0]))

static uint64_t rng = 7;

static uint64_t rnd(void)
{
	return hvt_splitmix64(&rng);
}

static double unit(void)
{
	return (double)(rnd() >> 11) * 0x1p-53;
}

enum pattern {
	EMPTY,
	FULL,
	BLOCK,
	BLOCKS,
	STRIDE64,
	RANDOM_01,
	RANDOM_1,
	RANDOM_10,
	RANDOM_50,
	CLUSTERED,
	FIRST_LAST,
	NPATTERNS
};

static void fill(struct hvt_pageset *s, enum pattern p)
{
	static const double density[] = {
	    [RANDOM_01] = 0.001, [RANDOM_1] = 0.01, [RANDOM_10] = 0.1, [RANDOM_50] = 0.5};
	uint64_t n = s->npages, pos;

	switch (p) {
	case EMPTY:
	case NPATTERNS:
		break;
	case FULL:
		hvt_pageset_set_range(s, 0, n);
		break;
	case BLOCK:
		hvt_pageset_set_range(s, n / 3, n / 4 + 1);
		break;
	case BLOCKS:
		for (uint64_t b = 0; b < 5; b++)
			hvt_pageset_set_range(s, n / 6 * b + b, n / 20 + 1);
		break;
	case STRIDE64:
		for (uint64_t i = 0; i < n; i += 64)
			hvt_pageset_set(s, i);
		break;
	case RANDOM_01:
	case RANDOM_1:
	case RANDOM_10:
	case RANDOM_50:
		for (uint64_t i = 0; i < n; i++)
			if (unit() < density[p])
				hvt_pageset_set(s, i);
		break;
	case CLUSTERED:
		for (pos = rnd() % 50; pos < n; pos += 1 + (uint64_t)(-log(1 - unit()) * 100)) {
			uint64_t len = 1 + (uint64_t)(-log(1 - unit()) * 12);

			hvt_pageset_set_range(s, pos, len);
			pos += len;
		}
		break;
	case FIRST_LAST: /* runs touching both ends of the slot */
		hvt_pageset_set_range(s, 0, 3);
		hvt_pageset_set_range(s, n > 2 ? n - 2 : 0, 2);
		break;
	}
}

static void assert_round_trip(const struct hvt_pageset *s, enum hvt_codec c)
{
	struct hvt_err err = {{0}};
	struct hvt_pageset back;
	uint8_t *buf;
	size_t len;

	assert_int_equal(hvt_pageset_encode(s, c, &buf, &len), 0);
	assert_non_null(buf);
	assert_true(len > 0);
	assert_int_equal(hvt_pageset_init(&back, s->npages), 0);
	hvt_pageset_set_range(&back, 0, s->npages); /* old contents must be replaced */
	if (hvt_pageset_decode(&back, c, buf, len, &err))
		fail_msg("%s, %llu pages: %s", hvt_codec_name(c), (unsigned long long)s->npages, err.msg);
	assert_true(hvt_pageset_equal(s, &back));
	hvt_pageset_fini(&back);
	free(buf);
}

static void test_round_trips(void **state)
{
	static const uint64_t sizes[] = {1, 2, 63, 64, 65, 1000, 4097, 65536, 65537, 262144};

	(void)state;
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
		for (int p = 0; p < NPATTERNS; p++)
			for (size_t c = 0; c < NCODECS; c++) {
				struct hvt_pageset s;

				assert_int_equal(hvt_pageset_init(&s, sizes[z]), 0);
				fill(&s, (enum pattern)p);
				assert_round_trip(&s, codecs[c]);
				hvt_pageset_fini(&s);
			}
}

/* A 64 GiB slot (2^24 pages), the large end of what one memslot holds in practice. */
static void test_round_trips_large(void **state)
{
	static const enum pattern patterns[] = {EMPTY, FULL, BLOCKS, STRIDE64, RANDOM_01, FIRST_LAST};

	(void)state;
	for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++)
		for (size_t c = 0; c < NCODECS; c++) {
			struct hvt_pageset s;

			assert_int_equal(hvt_pageset_init(&s, 1ull << 24), 0);
			fill(&s, patterns[p]);
			assert_round_trip(&s, codecs[c]);
			hvt_pageset_fini(&s);
		}
}

/* The varint stream of s, built here page by page, independent of the encoder. */
static size_t varint_stream(const struct hvt_pageset *s, uint8_t *out)
{
	uint64_t prev_end = 0, p = 0;
	size_t n = 0;

	while (p < s->npages) {
		uint64_t first, v[2];

		while (p < s->npages && !hvt_pageset_test(s, p))
			p++;
		if (p == s->npages)
			break;
		first = p;
		while (p < s->npages && hvt_pageset_test(s, p))
			p++;
		v[0] = first - prev_end;
		v[1] = p - first - 1;
		prev_end = p;
		for (int k = 0; k < 2; k++) {
			for (; v[k] >= 0x80; v[k] >>= 7)
				out[n++] = (uint8_t)(v[k] | 0x80);
			out[n++] = (uint8_t)v[k];
		}
	}
	return n;
}

/*
 * zstd-runs writes the frame a single-shot compression of the whole varint stream makes, as it always did,
 * for every stream up to the encoder's 1 MiB of scratch (every pattern here, and every other page of 2^19
 * pages); longer ones are streamed through zstd (test_large_streams).
 */
static void test_frame_matches_single_shot(void **state)
{
	static const uint64_t sizes[] = {1, 63, 65, 1000, 65537, 262144, 1ull << 19};
	ZSTD_CCtx *cctx = ZSTD_createCCtx();

	(void)state;
	assert_non_null(cctx);
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++)
		for (int p = 0; p <= NPATTERNS; p++) {
			struct hvt_pageset s;
			uint8_t *stream, *single, *ours;
			size_t n, bound, want, len;

			assert_int_equal(hvt_pageset_init(&s, sizes[z]), 0);
			if (p == NPATTERNS) /* every other page: the longest stream */
				for (uint64_t i = 1; i < s.npages; i += 2)
					hvt_pageset_set(&s, i);
			else
				fill(&s, (enum pattern)p);
			stream = malloc(sizes[z] + 2);
			assert_non_null(stream);
			n = varint_stream(&s, stream);
			assert_true(n <= sizes[z] + 1);
			bound = ZSTD_compressBound(n);
			single = malloc(bound);
			assert_non_null(single);
			want = ZSTD_compressCCtx(cctx, single, bound, stream, n, 1);
			assert_false(ZSTD_isError(want));
			assert_int_equal(hvt_pageset_encode(&s, HVT_CODEC_ZSTD_RUNS, &ours, &len), 0);
			if (len != want || memcmp(ours, single, len))
				fail_msg(
				    "%llu pages, pattern %d: %zu bytes encoded, %zu single-shot, not the same",
				    (unsigned long long)sizes[z], p, len, want);
			free(ours);
			free(single);
			free(stream);
			hvt_pageset_fini(&s);
		}
	ZSTD_freeCCtx(cctx);
}

/*
 * Streams longer than the encoder's scratch, many times zstd's window (every other page of a 32 GiB slot: 8
 * MiB of varints; half of a 16 GiB slot at random), go through zstd's streaming compressor: they decode to
 * the set, fit hvt_pageset_encode_bound, and a buffer a byte short of the frame gives -ENOSPC, not an
 * overrun.
 */
static void test_large_streams(void **state)
{
	(void)state;
	for (int k = 0; k < 2; k++) {
		struct hvt_pageset s;
		uint8_t *buf, *tight;
		size_t len, len2;

		assert_int_equal(hvt_pageset_init(&s, k ? 1ull << 22 : 1ull << 23), 0);
		if (k)
			fill(&s, RANDOM_50);
		else
			for (uint64_t i = 0; i < s.npages; i += 2)
				hvt_pageset_set(&s, i);
		assert_round_trip(&s, HVT_CODEC_ZSTD_RUNS);
		assert_int_equal(hvt_pageset_encode(&s, HVT_CODEC_ZSTD_RUNS, &buf, &len), 0);
		assert_true(len <= hvt_pageset_encode_bound(s.npages, HVT_CODEC_ZSTD_RUNS));
		tight = malloc(len - 1);
		assert_non_null(tight);
		assert_int_equal(hvt_pageset_encode_into(&s, HVT_CODEC_ZSTD_RUNS, tight, len - 1, &len2),
				 -ENOSPC);
		assert_int_equal(hvt_pageset_encode_into(&s, HVT_CODEC_ZSTD_RUNS, buf, len, &len2), 0);
		assert_int_equal(len2, len);
		free(tight);
		free(buf);
		hvt_pageset_fini(&s);
	}
}

static void test_codec_names_and_unknown(void **state)
{
	struct hvt_err err = {{0}};
	struct hvt_pageset s;
	uint8_t *buf = (uint8_t *)"x";
	size_t len = 1;

	(void)state;
	assert_string_equal(hvt_codec_name(HVT_CODEC_ROARING), "roaring");
	assert_string_equal(hvt_codec_name(HVT_CODEC_ZSTD_RUNS), "zstd-runs");
	assert_string_equal(hvt_codec_name((enum hvt_codec)99), "unknown");
	assert_true(hvt_codec_default == HVT_CODEC_ROARING || hvt_codec_default == HVT_CODEC_ZSTD_RUNS);
	assert_int_equal(hvt_pageset_init(&s, 100), 0);
	assert_int_equal(hvt_pageset_encode(&s, (enum hvt_codec)99, &buf, &len), -EINVAL);
	assert_null(buf);
	assert_int_equal(hvt_pageset_decode(&s, (enum hvt_codec)0, (const uint8_t *)"abcd", 4, &err),
			 -EINVAL);
	assert_true(err.msg[0] != '\0');
	hvt_pageset_fini(&s);
}

/* CRoaring's 32-bit API cannot hold page 2^32: such slots are refused before any page is looked at. */
static void test_roaring_refuses_huge_slots(void **state)
{
	struct hvt_pageset huge = {.npages = (1ull << 32) + 1, .words = NULL};
	uint8_t *buf;
	size_t len;

	(void)state;
	assert_int_equal(hvt_pageset_encode(&huge, HVT_CODEC_ROARING, &buf, &len), -EINVAL);
	assert_null(buf);
}

/* Decoding into a smaller slot than the set was encoded from: the last page is out of range. */
static void test_page_past_slot(void **state)
{
	(void)state;
	for (size_t c = 0; c < NCODECS; c++) {
		struct hvt_err err = {{0}};
		struct hvt_pageset s, small;
		uint8_t *buf;
		size_t len;

		assert_int_equal(hvt_pageset_init(&s, 5000), 0);
		hvt_pageset_set(&s, 10);
		hvt_pageset_set(&s, 4999);
		assert_int_equal(hvt_pageset_encode(&s, codecs[c], &buf, &len), 0);
		assert_int_equal(hvt_pageset_init(&small, 4999), 0);
		assert_int_equal(hvt_pageset_decode(&small, codecs[c], buf, len, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "past the slot"));
		assert_int_equal(hvt_pageset_count(&small), 0);
		hvt_pageset_fini(&small);
		/* a slot of exactly 5000 pages takes it */
		assert_int_equal(hvt_pageset_init(&small, 5000), 0);
		assert_int_equal(hvt_pageset_decode(&small, codecs[c], buf, len, &err), 0);
		assert_true(hvt_pageset_equal(&s, &small));
		hvt_pageset_fini(&small);
		hvt_pageset_fini(&s);
		free(buf);
	}
}

/* A slot of npages holding pattern, encoded by codec: returns the encoding (*len bytes, the caller frees it);
 * back is made an empty set of the same size to decode into. */
static uint8_t *encoded(enum pattern pat, enum hvt_codec codec, uint64_t npages, struct hvt_pageset *back,
			size_t *len)
{
	struct hvt_pageset s;
	uint8_t *buf;

	assert_int_equal(hvt_pageset_init(&s, npages), 0);
	assert_int_equal(hvt_pageset_init(back, npages), 0);
	fill(&s, pat);
	assert_int_equal(hvt_pageset_encode(&s, codec, &buf, len), 0);
	hvt_pageset_fini(&s);
	return buf;
}

/* Every proper prefix of an encoding is refused. Exact-length copies let ASan see any overread. */
static void test_truncations(void **state)
{
	static const enum pattern patterns[] = {EMPTY, FULL, BLOCKS, RANDOM_1, RANDOM_50, CLUSTERED};

	(void)state;
	for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++)
		for (size_t c = 0; c < NCODECS; c++) {
			struct hvt_pageset back;
			size_t len;
			uint8_t *buf = encoded(patterns[p], codecs[c], 20000, &back, &len);

			for (size_t cut = 0; cut < len; cut++) {
				struct hvt_err err = {{0}};
				uint8_t *prefix = malloc(cut ? cut : 1);

				assert_non_null(prefix);
				memcpy(prefix, buf, cut);
				if (hvt_pageset_decode(&back, codecs[c], prefix, cut, &err) != -EINVAL)
					fail_msg("%s: prefix of %zu/%zu bytes accepted",
						 hvt_codec_name(codecs[c]), cut, len);
				assert_true(err.msg[0] != '\0');
				assert_int_equal(hvt_pageset_count(&back), 0);
				free(prefix);
			}
			hvt_pageset_fini(&back);
			free(buf);
		}
}

/* Byte flips: a flip may turn into another valid set, but never a crash or a set reaching past the slot. */
static void test_byte_flips(void **state)
{
	static const enum pattern patterns[] = {EMPTY,     FULL,      BLOCKS,    STRIDE64,
						RANDOM_10, CLUSTERED, FIRST_LAST};
	unsigned rejected = 0, total = 0;

	(void)state;
	for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++)
		for (size_t c = 0; c < NCODECS; c++) {
			struct hvt_pageset back;
			size_t len;
			uint8_t *buf = encoded(patterns[p], codecs[c], 70000, &back, &len);

			for (int k = 0; k < 1000; k++) {
				struct hvt_err err = {{0}};
				uint8_t *mut = malloc(len);
				int nflips = 1 + (int)(rnd() % 3), rc;

				assert_non_null(mut);
				memcpy(mut, buf, len);
				for (int f = 0; f < nflips; f++)
					mut[rnd() % len] ^= (uint8_t)(1 + rnd() % 255);
				rc = hvt_pageset_decode(&back, codecs[c], mut, len, &err);
				assert_true(rc == 0 || rc == -EINVAL);
				if (rc) {
					rejected++;
					assert_int_equal(hvt_pageset_count(&back), 0);
				} else {
					assert_true(hvt_pageset_count(&back) <= back.npages);
					if (back.npages % 64)
						assert_int_equal(
						    back.words[back.npages / 64] >> (back.npages % 64), 0);
				}
				total++;
				free(mut);
			}
			hvt_pageset_fini(&back);
			free(buf);
		}
	print_message("%u of %u mutated encodings rejected\n", rejected, total);
	/* most flips must be caught; if none were, the decoders are not checking anything */
	assert_true(rejected > total / 2);
}

/* ---- crafted zstd-runs streams ---- */

static int decode_stream(uint64_t npages, const uint8_t *stream, size_t n, struct hvt_pageset *out,
			 struct hvt_err *err)
{
	size_t bound = ZSTD_compressBound(n), clen;
	uint8_t *frame = malloc(bound);
	int rc;

	assert_non_null(frame);
	clen = ZSTD_compress(frame, bound, stream, n, 1);
	assert_false(ZSTD_isError(clen));
	assert_int_equal(hvt_pageset_init(out, npages), 0);
	rc = hvt_pageset_decode(out, HVT_CODEC_ZSTD_RUNS, frame, clen, err);
	free(frame);
	return rc;
}

static void expect_stream(uint64_t npages, const uint8_t *stream, size_t n, int want, const char *msg_part)
{
	struct hvt_err err = {{0}};
	struct hvt_pageset s;
	int rc = decode_stream(npages, stream, n, &s, &err);

	if (rc != want)
		fail_msg("stream of %zu bytes: got %d (%s), want %d", n, rc, err.msg, want);
	if (msg_part)
		assert_non_null(strstr(err.msg, msg_part));
	hvt_pageset_fini(&s);
}

static void test_varints(void **state)
{
	static const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					 0x80, 0x80, 0x80, 0x80, 0x01, 0x00};
	static const uint8_t overflow[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00};
	static const uint8_t redundant[] = {0x85, 0x00, 0x00};      /* 5 written in two bytes */
	static const uint8_t truncated[] = {0x05, 0x83};            /* length varint cut */
	static const uint8_t odd[] = {0x05, 0x01, 0x03};            /* a gap without its length */
	static const uint8_t touching[] = {0x00, 0x01, 0x00, 0x01}; /* second run's gap is 0 */
	static const uint8_t past[] = {0x63, 0x01};                 /* pages 99..100 of 100 */
	static const uint8_t last[] = {0x63, 0x00};                 /* page 99 of 100: fine */
	static const uint8_t two_byte[] = {0x80, 0x01, 0x00};       /* gap 128: a canonical 2-byte varint */
	uint8_t big[300];
	struct hvt_err err = {{0}};
	struct hvt_pageset s;

	(void)state;
	expect_stream(1000, eleven, sizeof(eleven), -EINVAL, "varint");
	expect_stream(1000, overflow, sizeof(overflow), -EINVAL, "varint");
	expect_stream(1000, redundant, sizeof(redundant), -EINVAL, "varint");
	expect_stream(1000, truncated, sizeof(truncated), -EINVAL, "varint");
	expect_stream(1000, odd, sizeof(odd), -EINVAL, "varint");
	expect_stream(1000, touching, sizeof(touching), -EINVAL, "previous run");
	expect_stream(100, past, sizeof(past), -EINVAL, "past the slot");
	expect_stream(100, last, sizeof(last), 0, NULL);
	expect_stream(128, two_byte, sizeof(two_byte), -EINVAL, "past the slot");
	assert_int_equal(decode_stream(129, two_byte, sizeof(two_byte), &s, &err), 0);
	assert_int_equal(hvt_pageset_count(&s), 1);
	assert_true(hvt_pageset_test(&s, 128));
	hvt_pageset_fini(&s);
	/* more bytes than any set of 100 pages needs: refused before decompressing */
	memset(big, 0x01, sizeof(big));
	expect_stream(100, big, sizeof(big), -EINVAL, "more than");
}

static void test_zstd_framing(void **state)
{
	static const uint8_t runs[] = {0x03, 0x02};
	uint8_t frame[64], buf[160];
	struct hvt_err err = {{0}};
	struct hvt_pageset s;
	size_t n;

	(void)state;
	n = ZSTD_compress(frame, sizeof(frame), runs, sizeof(runs), 1);
	assert_false(ZSTD_isError(n));
	assert_int_equal(hvt_pageset_init(&s, 100), 0);
	assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ZSTD_RUNS, frame, n, &err), 0);
	assert_int_equal(hvt_pageset_count(&s), 3);

	/* trailing junk, and a second frame, after the frame */
	memcpy(buf, frame, n);
	buf[n] = 0;
	assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ZSTD_RUNS, buf, n + 1, &err), -EINVAL);
	memcpy(buf + n, frame, n);
	assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ZSTD_RUNS, buf, 2 * n, &err), -EINVAL);

	/* a skippable frame is not a set */
	memcpy(buf,
	       "\x50\x2a\x4d\x18\x04\x00\x00\x00"
	       "abcd",
	       12);
	assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ZSTD_RUNS, buf, 12, &err), -EINVAL);

	/* a frame that does not declare its size is refused: there is no bound to check */
	{
		ZSTD_CCtx *cctx = ZSTD_createCCtx();
		ZSTD_inBuffer in = {runs, sizeof(runs), 0};
		ZSTD_outBuffer out = {buf, sizeof(buf), 0};

		assert_non_null(cctx);
		assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0)));
		assert_int_equal(ZSTD_compressStream2(cctx, &out, &in, ZSTD_e_end), 0);
		ZSTD_freeCCtx(cctx);
		assert_int_equal(ZSTD_getFrameContentSize(buf, out.pos), ZSTD_CONTENTSIZE_UNKNOWN);
		assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ZSTD_RUNS, buf, out.pos, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "size"));
	}
	/* the frame header lies about the content size: a single-segment frame with a 1-byte size field */
	assert_int_equal(frame[4] & 0xe0, 0x20);
	memcpy(buf, frame, n);
	buf[5] = 3;
	assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ZSTD_RUNS, buf, n, &err), -EINVAL);
	buf[5] = 1;
	assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ZSTD_RUNS, buf, n, &err), -EINVAL);
	assert_int_equal(hvt_pageset_count(&s), 0);
	hvt_pageset_fini(&s);
}

/* ---- crafted roaring bitmaps (portable format: cookie, container descriptions, offsets, payloads) ---- */

static size_t roaring_one_array(uint8_t *b, uint16_t key, const uint16_t *vals, uint16_t n)
{
	size_t o = 0;

	b[o++] = 0x3a; /* SERIAL_COOKIE_NO_RUNCONTAINER = 12346 */
	b[o++] = 0x30;
	b[o++] = 0;
	b[o++] = 0;
	b[o++] = 1; /* one container */
	b[o++] = 0;
	b[o++] = 0;
	b[o++] = 0;
	b[o++] = (uint8_t)key;
	b[o++] = (uint8_t)(key >> 8);
	b[o++] = (uint8_t)(n - 1);
	b[o++] = (uint8_t)((n - 1) >> 8);
	b[o++] = 16; /* offset of the container's values */
	b[o++] = 0;
	b[o++] = 0;
	b[o++] = 0;
	for (uint16_t i = 0; i < n; i++) {
		b[o++] = (uint8_t)vals[i];
		b[o++] = (uint8_t)(vals[i] >> 8);
	}
	return o;
}

static void test_roaring_crafted(void **state)
{
	static const uint16_t sorted[] = {3, 5, 9};
	static const uint16_t unsorted[] = {5, 3, 9};
	static const uint16_t repeated[] = {3, 3, 9};
	struct hvt_err err = {{0}};
	struct hvt_pageset s;
	uint8_t b[64];
	size_t n;

	(void)state;
	assert_int_equal(hvt_pageset_init(&s, 100), 0);
	n = roaring_one_array(b, 0, sorted, 3);
	assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ROARING, b, n, &err), 0);
	assert_int_equal(hvt_pageset_count(&s), 3);
	assert_true(hvt_pageset_test(&s, 9));

	n = roaring_one_array(b, 0, unsorted, 3);
	assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ROARING, b, n, &err), -EINVAL);
	assert_int_equal(hvt_pageset_count(&s), 0);
	n = roaring_one_array(b, 0, repeated, 3);
	assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ROARING, b, n, &err), -EINVAL);

	/* key 1: pages 65536 + v, past a 100-page slot */
	n = roaring_one_array(b, 1, sorted, 3);
	assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ROARING, b, n, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "past the slot"));

	/* junk after the bitmap; a wrong cookie; a container count the bytes cannot hold */
	n = roaring_one_array(b, 0, sorted, 3);
	b[n] = 0;
	assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ROARING, b, n + 1, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "junk"));
	b[0] = 0x3c; /* neither of the two cookies */
	assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ROARING, b, n, &err), -EINVAL);
	n = roaring_one_array(b, 0, sorted, 3);
	b[4] = 0xff;
	b[5] = 0xff;
	assert_int_equal(hvt_pageset_decode(&s, HVT_CODEC_ROARING, b, n, &err), -EINVAL);
	hvt_pageset_fini(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trips),
	    cmocka_unit_test(test_round_trips_large),
	    cmocka_unit_test(test_frame_matches_single_shot),
	    cmocka_unit_test(test_large_streams),
	    cmocka_unit_test(test_codec_names_and_unknown),
	    cmocka_unit_test(test_roaring_refuses_huge_slots),
	    cmocka_unit_test(test_page_past_slot),
	    cmocka_unit_test(test_truncations),
	    cmocka_unit_test(test_byte_flips),
	    cmocka_unit_test(test_varints),
	    cmocka_unit_test(test_zstd_framing),
	    cmocka_unit_test(test_roaring_crafted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
