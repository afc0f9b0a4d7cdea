// SPDX-License-Identifier: MIT
/*
 * The two on-disk encodings of a page set (docs/formats.md, "Page-set encoding"). Decoders treat their
 * input as hostile: they never read past it, accept only the canonical form the encoders produce, and refuse
 * any page at or past the slot's end. They decode into runs (pageset_runs.h); a bitmap is filled from those.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <roaring/roaring.h>
#include <zstd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/pageset.h"
#include "pageset_runs.h"

/* Chosen by bench/pageset_codec.c; the figures and the reasoning are in docs/formats.md. */
const enum hvt_codec hvt_codec_default = HVT_CODEC_ZSTD_RUNS;

/* Level 1: the varint stream is already compact, higher levels gain little and cost encode time. */
#define ZSTD_RUNS_LEVEL 1

const char *hvt_codec_name(enum hvt_codec c)
{
	switch (c) {
	case HVT_CODEC_ROARING:
		return "roaring";
	case HVT_CODEC_ZSTD_RUNS:
		return "zstd-runs";
	}
	return "unknown";
}

/* ---- roaring ---- */

static int roaring_encode(const struct hvt_pageset *s, uint8_t **out, size_t *outlen)
{
	struct hvt_run run;
	uint64_t pos = 0;
	roaring_bitmap_t *r;
	size_t n;

	/* CRoaring's 32-bit API: every page index must fit in 32 bits. */
	if (s->npages > (uint64_t)1 << 32)
		return -EINVAL;
	r = roaring_bitmap_create();
	if (!r)
		return -ENOMEM;
	while (hvt_pageset_next_run(s, &pos, &run))
		roaring_bitmap_add_range(r, run.first, run.first + run.count);
	roaring_bitmap_run_optimize(r);
	n = roaring_bitmap_portable_size_in_bytes(r);
	*out = malloc(n);
	if (!*out) {
		roaring_bitmap_free(r);
		return -ENOMEM;
	}
	*outlen = roaring_bitmap_portable_serialize(r, (char *)*out);
	roaring_bitmap_free(r);
	return 0;
}

/* Where decoded runs go: appended to out as base + page, for a set of npages pages. */
struct run_sink {
	struct hvt_runs *out;
	uint64_t base;
	uint64_t npages;
	uint64_t pages; /* in the runs appended */
};

static inline int sink_run(struct run_sink *k, uint64_t first, uint64_t count)
{
	k->pages += count;
	return hvt_runs_push(k->out, k->base + first, count);
}

/* Collects the values of a deserialised bitmap into runs, refusing anything a valid bitmap cannot hold. */
struct roaring_sink {
	struct run_sink *sink;
	uint64_t next_min; /* values must increase strictly */
	uint64_t run_first, run_end;
	bool bad, nomem;
	uint32_t bad_value;
};

static bool roaring_visit(uint32_t v, void *arg)
{
	struct roaring_sink *k = arg;

	/* Deserialisation bounds the reads, not the contents: unsorted or overlapping containers and
	 * out-of-range values are caught here, which also bounds the iteration to npages values. */
	if (v < k->next_min || v >= k->sink->npages) {
		k->bad = true;
		k->bad_value = v;
		return false;
	}
	if (v != k->run_end) {
		if (k->run_end > k->run_first && sink_run(k->sink, k->run_first, k->run_end - k->run_first)) {
			k->nomem = true;
			return false;
		}
		k->run_first = v;
	}
	k->run_end = (uint64_t)v + 1;
	k->next_min = k->run_end;
	return true;
}

static int roaring_decode(struct run_sink *sink, const uint8_t *in, size_t inlen, struct hvt_err *err)
{
	struct roaring_sink k = {.sink = sink};
	roaring_bitmap_t *r;
	size_t used;

	if (inlen < 8)
		return hvt_err_set(err, -EINVAL, "roaring: %zu bytes is too short for a bitmap", inlen);
	used = roaring_bitmap_portable_deserialize_size((const char *)in, inlen);
	if (used == 0)
		return hvt_err_set(err, -EINVAL, "roaring: not a valid portable bitmap (%zu bytes)", inlen);
	if (used != inlen)
		return hvt_err_set(err, -EINVAL, "roaring: %zu bytes of junk after the bitmap", inlen - used);
	r = roaring_bitmap_portable_deserialize_safe((const char *)in, inlen);
	if (!r)
		return hvt_err_set(err, -EINVAL, "roaring: cannot deserialise the bitmap (%zu bytes)", inlen);
	roaring_iterate(r, roaring_visit, &k);
	roaring_bitmap_free(r);
	if (k.nomem)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	if (k.bad) {
		if (k.bad_value >= sink->npages)
			return hvt_err_set(err, -EINVAL, "roaring: page %u is past the slot's %llu pages",
					   k.bad_value, (unsigned long long)sink->npages);
		return hvt_err_set(err, -EINVAL, "roaring: page %u out of order", k.bad_value);
	}
	if (k.run_end > k.run_first && sink_run(sink, k.run_first, k.run_end - k.run_first))
		return hvt_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* ---- zstd'd runs ---- */

/*
 * zstd contexts are kept per thread: creating one per call costs ~10 µs (the decompression context is
 * ~96 KiB, allocated with mmap), reusing it ~1 µs, and the tracer encodes several sets per interval.
 * The key's destructor frees them when a thread exits; the thread-local pointer keeps them reachable.
 */
struct zstd_ctxs {
	ZSTD_CCtx *c;
	ZSTD_DCtx *d;
};

static pthread_key_t zstd_key;
static pthread_once_t zstd_key_once = PTHREAD_ONCE_INIT;
static _Thread_local struct zstd_ctxs *zstd_tls;

static void zstd_ctxs_free(void *p)
{
	struct zstd_ctxs *z = p;

	ZSTD_freeCCtx(z->c);
	ZSTD_freeDCtx(z->d);
	free(z);
	zstd_tls = NULL;
}

static void zstd_key_create(void)
{
	if (pthread_key_create(&zstd_key, zstd_ctxs_free))
		abort(); /* only fails when the process is out of keys: a bug, not a condition */
}

static struct zstd_ctxs *zstd_ctxs_get(void)
{
	struct zstd_ctxs *z = zstd_tls;

	if (z)
		return z;
	pthread_once(&zstd_key_once, zstd_key_create);
	z = calloc(1, sizeof(*z));
	if (!z)
		return NULL;
	z->c = ZSTD_createCCtx();
	z->d = ZSTD_createDCtx();
	if (!z->c || !z->d || pthread_setspecific(zstd_key, z)) {
		ZSTD_freeCCtx(z->c);
		ZSTD_freeDCtx(z->d);
		free(z);
		return NULL;
	}
	zstd_tls = z;
	return z;
}

struct growbuf {
	uint8_t *p;
	size_t len, cap;
};

static int put_varint(struct growbuf *b, uint64_t v)
{
	if (b->cap - b->len < 10) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		uint8_t *p = realloc(b->p, cap);

		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	while (v >= 0x80) {
		b->p[b->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->p[b->len++] = (uint8_t)v;
	return 0;
}

static int zstd_runs_encode(const struct hvt_pageset *s, uint8_t **out, size_t *outlen)
{
	struct zstd_ctxs *z = zstd_ctxs_get();
	struct growbuf b = {0};
	struct hvt_run run;
	uint64_t pos = 0, prev_end = 0;
	size_t bound, n;
	int rc = 0;

	if (!z)
		return -ENOMEM;
	while (!rc && hvt_pageset_next_run(s, &pos, &run)) {
		rc = put_varint(&b, run.first - prev_end);
		if (!rc)
			rc = put_varint(&b, run.count - 1);
		prev_end = run.first + run.count;
	}
	if (rc)
		goto out;
	bound = ZSTD_compressBound(b.len);
	*out = malloc(bound);
	if (!*out) {
		rc = -ENOMEM;
		goto out;
	}
	/* Single-shot compression records the content size in the frame, which the decoder requires. */
	n = ZSTD_compressCCtx(z->c, *out, bound, b.p ? b.p : (const void *)"", b.len, ZSTD_RUNS_LEVEL);
	if (ZSTD_isError(n)) {
		free(*out);
		*out = NULL;
		rc = -ENOMEM;
		goto out;
	}
	*outlen = n;
out:
	free(b.p);
	return rc;
}

/* Reads one canonical LEB128 varint: at most 10 bytes, no overflow past 64 bits, no redundant zero bytes.
 * Inlined, so that the position and the value stay in registers. */
static inline __attribute__((always_inline)) int get_varint(const uint8_t **p, const uint8_t *end,
							    uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned i = 0; i < 10; i++) {
		uint8_t byte;

		if (*p == end)
			return -1;
		byte = *(*p)++;
		if (i == 9 && byte > 1)
			return -1;
		x |= (uint64_t)(byte & 0x7f) << (7 * i);
		if (!(byte & 0x80)) {
			if (byte == 0 && i > 0)
				return -1;
			*v = x;
			return 0;
		}
	}
	return -1;
}

/*
 * The varint stream into runs. The hot loop keeps the output array, its length, its capacity and the page
 * total in locals: stores through out would make the compiler reload them for every run.
 */
static int parse_runs(struct run_sink *k, const uint8_t *p, const uint8_t *end, struct hvt_err *err)
{
	struct hvt_runs *out = k->out;
	uint64_t prev_end = 0, gap, len1, npages = k->npages, base = k->base, pages = 0;
	size_t n0 = out->n, n = n0, cap = out->cap;
	struct hvt_run *v = out->v;
	int rc = 0;

	while (p < end) {
		/* one-byte varints (short gaps and runs) are the common case: read them inline */
		if (end - p >= 2 && !((p[0] | p[1]) & 0x80)) {
			gap = p[0];
			len1 = p[1];
			p += 2;
		} else if (get_varint(&p, end, &gap) || get_varint(&p, end, &len1)) {
			rc = hvt_err_set(err, -EINVAL, "zstd-runs: run %llu: truncated or overlong varint",
					 (unsigned long long)(n - n0));
			break;
		}
		if (n > n0 && gap == 0) {
			rc = hvt_err_set(err, -EINVAL, "zstd-runs: run %llu touches the previous run",
					 (unsigned long long)(n - n0));
			break;
		}
		if (gap >= npages - prev_end || len1 >= npages - prev_end - gap) {
			rc = hvt_err_set(err, -EINVAL, "zstd-runs: run %llu runs past the slot's %llu pages",
					 (unsigned long long)(n - n0), (unsigned long long)npages);
			break;
		}
		if (n == cap) { /* as hvt_runs_push grows */
			size_t more = cap ? cap * 2 : 1024;

			if (!(v = realloc(out->v, more * sizeof(*v)))) {
				rc = hvt_err_set(err, -ENOMEM, "out of memory");
				break;
			}
			out->v = v;
			out->cap = cap = more;
		}
		v[n++] = (struct hvt_run){base + prev_end + gap, len1 + 1};
		pages += len1 + 1;
		prev_end += gap + len1 + 1;
	}
	out->n = n;
	k->pages += pages;
	return rc;
}

static int zstd_runs_decode(struct run_sink *k, const uint8_t *in, size_t inlen, struct hvt_err *err)
{
	struct zstd_ctxs *z;
	unsigned long long size;
	size_t framelen, n;
	uint8_t *buf;
	int rc;

	/* Only a regular frame (no skippable frames), which must be the whole input. */
	if (inlen < 4 || in[0] != 0x28 || in[1] != 0xb5 || in[2] != 0x2f || in[3] != 0xfd)
		return hvt_err_set(err, -EINVAL, "zstd-runs: not a zstd frame");
	framelen = ZSTD_findFrameCompressedSize(in, inlen);
	if (ZSTD_isError(framelen))
		return hvt_err_set(err, -EINVAL, "zstd-runs: %s", ZSTD_getErrorName(framelen));
	if (framelen != inlen)
		return hvt_err_set(err, -EINVAL, "zstd-runs: %zu bytes of junk after the frame",
				   inlen - framelen);
	/*
	 * Each run costs at least as many pages as its two varints take bytes (the first run at most one byte
	 * more), so a stream for npages pages is at most npages + 1 bytes: that bounds the allocation.
	 */
	size = ZSTD_getFrameContentSize(in, inlen);
	if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR)
		return hvt_err_set(err, -EINVAL, "zstd-runs: the frame does not declare its size");
	if (size > k->npages && size - k->npages > 1)
		return hvt_err_set(err, -EINVAL,
				   "zstd-runs: %llu bytes of runs is more than %llu pages allow", size,
				   (unsigned long long)k->npages);
	z = zstd_ctxs_get();
	if (!z || size > SIZE_MAX - 1)
		return -ENOMEM;
	buf = malloc((size_t)size + 1);
	if (!buf)
		return -ENOMEM;
	n = ZSTD_decompressDCtx(z->d, buf, (size_t)size, in, inlen);
	if (ZSTD_isError(n))
		rc = hvt_err_set(err, -EINVAL, "zstd-runs: %s", ZSTD_getErrorName(n));
	else if (n != size)
		rc = hvt_err_set(err, -EINVAL, "zstd-runs: frame holds %zu bytes, not the %llu it declares",
				 n, size);
	else
		rc = parse_runs(k, buf, buf + n, err);
	free(buf);
	return rc;
}

/* ---- dispatch ---- */

int hvt_pageset_encode(const struct hvt_pageset *s, enum hvt_codec c, uint8_t **out, size_t *outlen)
{
	*out = NULL;
	*outlen = 0;
	switch (c) {
	case HVT_CODEC_ROARING:
		return roaring_encode(s, out, outlen);
	case HVT_CODEC_ZSTD_RUNS:
		return zstd_runs_encode(s, out, outlen);
	}
	return -EINVAL;
}

static int decode_into(struct run_sink *k, enum hvt_codec c, const uint8_t *in, size_t inlen,
		       struct hvt_err *err)
{
	switch (c) {
	case HVT_CODEC_ROARING:
		return roaring_decode(k, in, inlen, err);
	case HVT_CODEC_ZSTD_RUNS:
		return zstd_runs_decode(k, in, inlen, err);
	}
	return hvt_err_set(err, -EINVAL, "unknown page-set codec %d", (int)c);
}

int hvt_pageset_decode_runs(struct hvt_runs *out, uint64_t base, uint64_t npages, enum hvt_codec c,
			    const uint8_t *in, size_t inlen, struct hvt_err *err)
{
	struct run_sink k = {.out = out, .base = base, .npages = npages};
	size_t n0 = out->n;
	int rc = decode_into(&k, c, in, inlen, err);

	if (rc) {
		out->n = n0;
		return rc;
	}
	out->pages += k.pages;
	return 0;
}

/* The runs, set in the bitmap: no half-decoded set escapes, as the runs are only set once all are read. */
int hvt_pageset_decode(struct hvt_pageset *s, enum hvt_codec c, const uint8_t *in, size_t inlen,
		       struct hvt_err *err)
{
	struct hvt_runs runs = {0};
	int rc = hvt_pageset_decode_runs(&runs, 0, s->npages, c, in, inlen, err);

	hvt_pageset_clear(s);
	if (!rc)
		hvt_pageset_set_runs(s, &runs, 0, runs.n, 0);
	free(runs.v);
	return rc;
}
