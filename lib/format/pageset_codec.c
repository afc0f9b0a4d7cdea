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
#include <zstd_errors.h>

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

/*
 * The portable format (docs/formats.md, "Codec 1"), written straight from the bitmap with nothing allocated:
 * a CRoaring bitmap of a dense set takes as much heap as its serialisation, which record's budget would have
 * to count twice. Containers are chosen as CRoaring 0.2.66 builds them from the runs and run-optimises them,
 * so the bytes are the ones it wrote (tests/unit/test_codec.c compares them).
 */
#define RR_PAGES        65536u /* pages per container: the low 16 bits of a page index */
#define RR_WORDS        (RR_PAGES / 64)
#define RR_ARRAY_MAX    4096u /* the most values an array container holds; more are a bitset */
#define RR_BITSET_BYTES 8192u
#define RR_COOKIE       12347u /* with run containers: the container count - 1 in the high 16 bits */
#define RR_COOKIE_PLAIN 12346u /* without: the count follows as a u32 */
#define RR_OFFSETS_FROM 4u     /* with run containers, fewer containers than this carry no offsets */

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, (uint16_t)v);
	put_le16(p + 2, (uint16_t)(v >> 16));
}

/* One container of a set: its words in the bitmap, what it holds, and the form it is written in. */
struct rr_container {
	const uint64_t *w;
	uint32_t nwords; /* fewer than RR_WORDS in a slot's last container */
	uint32_t card, nruns;
	bool run;
};

static bool rr_bit(const struct rr_container *c, uint32_t i)
{
	return i / 64 < c->nwords && (c->w[i / 64] >> (i % 64) & 1);
}

/* The first page of the container at or after i that is set (v) or clear (!v); RR_PAGES if none. */
static uint32_t rr_find(const struct rr_container *c, uint32_t i, bool v)
{
	while (i < RR_PAGES) {
		uint32_t wi = i / 64;
		uint64_t w = wi < c->nwords ? c->w[wi] : 0;

		w = (v ? w : ~w) & (~0ull << (i % 64));
		if (w)
			return wi * 64 + (uint32_t)__builtin_ctzll(w);
		i = (wi + 1) * 64;
	}
	return RR_PAGES;
}

/*
 * Container k of s, or false if it is empty (the format leaves it out). CRoaring keeps the smaller of a run
 * container and an array (2 bytes a value, and 2 more as it counts them) or a bitset, so no container takes
 * more than a bitset's 8 KiB; at a tie between run and array the form it started in stays, and a container
 * starts as an array when its first run (clipped to the container) is one page.
 */
static bool rr_container(const struct hvt_pageset *s, uint64_t k, struct rr_container *c)
{
	uint64_t nwords = hvt_pageset_nwords(s->npages), carry = 0;
	uint32_t first = 0, plain, as_run;

	c->w = s->words + k * RR_WORDS;
	c->nwords = (uint32_t)(nwords - k * RR_WORDS < RR_WORDS ? nwords - k * RR_WORDS : RR_WORDS);
	c->card = c->nruns = 0;
	if (hvt_pageset_next_marked(s, (size_t)(k * RR_WORDS)) >= k * RR_WORDS + c->nwords)
		return false; /* no word of it marked: empty, found at a mark word per 4096 pages */
	for (uint32_t i = 0; i < c->nwords; i++) {
		uint64_t w = c->w[i];

		if (!w) { /* most words of a sparse set */
			carry = 0;
			continue;
		}
		if (!c->card)
			first = i * 64 + (uint32_t)__builtin_ctzll(w);
		c->card += (uint32_t)__builtin_popcountll(w);
		c->nruns += (uint32_t)__builtin_popcountll(w & ~(w << 1 | carry));
		carry = w >> 63;
	}
	if (!c->card)
		return false;
	plain =
	    c->card <= RR_ARRAY_MAX && 2 * c->card + 2 < RR_BITSET_BYTES ? 2 * c->card + 2 : RR_BITSET_BYTES;
	as_run = 2 + 4 * c->nruns;
	c->run = as_run < plain || (as_run == plain && rr_bit(c, first + 1));
	return true;
}

static size_t rr_body_size(const struct rr_container *c)
{
	if (c->run)
		return 2 + 4 * (size_t)c->nruns;
	return c->card <= RR_ARRAY_MAX ? 2 * (size_t)c->card : RR_BITSET_BYTES;
}

static void rr_write_body(const struct rr_container *c, uint8_t *p)
{
	if (c->run) {
		uint32_t end = 0;

		put_le16(p, (uint16_t)c->nruns);
		for (uint32_t r = 0; r < c->nruns; r++) {
			uint32_t first = rr_find(c, end, true);

			end = rr_find(c, first, false);
			put_le16(p + 2 + 4 * r, (uint16_t)first);
			put_le16(p + 4 + 4 * r, (uint16_t)(end - first - 1));
		}
	} else if (c->card <= RR_ARRAY_MAX) {
		for (uint32_t i = 0; i < c->nwords; i++)
			for (uint64_t w = c->w[i]; w; w &= w - 1, p += 2)
				put_le16(p, (uint16_t)(i * 64 + (uint32_t)__builtin_ctzll(w)));
	} else {
		for (uint32_t i = 0; i < RR_WORDS; i++) {
			uint64_t w = i < c->nwords ? c->w[i] : 0;

			put_le32(p + 8 * i, (uint32_t)w);
			put_le32(p + 8 * i + 4, (uint32_t)(w >> 32));
		}
	}
}

static int roaring_encode_into(const struct hvt_pageset *s, uint8_t *dst, size_t cap, size_t *len)
{
	uint64_t ncont = (s->npages + RR_PAGES - 1) / RR_PAGES, total = 0, n = 0;
	struct rr_container c;
	bool hasrun = false, offsets;
	size_t header, body, i = 0;
	uint8_t *keys;

	/* 32-bit page indexes, as CRoaring's 32-bit bitmaps have. */
	if (s->npages > (uint64_t)1 << 32)
		return -EINVAL;
	/* First the containers' forms and sizes: the header, which comes first, depends on them. */
	for (uint64_t k = 0; k < ncont; k++)
		if (rr_container(s, k, &c)) {
			n++;
			hasrun |= c.run;
			total += rr_body_size(&c);
		}
	offsets = !hasrun || n >= RR_OFFSETS_FROM;
	header = hasrun ? 4 + (n + 7) / 8 + 4 * n : 8 + 4 * n;
	header += offsets ? 4 * n : 0;
	if (header + total > cap)
		return -ENOSPC;
	if (hasrun) {
		put_le32(dst, RR_COOKIE | (uint32_t)(n - 1) << 16);
		memset(dst + 4, 0, (n + 7) / 8);
		keys = dst + 4 + (n + 7) / 8;
	} else {
		put_le32(dst, RR_COOKIE_PLAIN);
		put_le32(dst + 4, (uint32_t)n);
		keys = dst + 8;
	}
	body = header;
	for (uint64_t k = 0; k < ncont; k++) {
		if (!rr_container(s, k, &c))
			continue;
		if (c.run)
			dst[4 + i / 8] |= (uint8_t)(1u << (i % 8));
		put_le16(keys + 4 * i, (uint16_t)k);
		put_le16(keys + 4 * i + 2, (uint16_t)(c.card - 1));
		if (offsets)
			put_le32(keys + 4 * n + 4 * i, (uint32_t)body);
		rr_write_body(&c, dst + body);
		body += rr_body_size(&c);
		i++;
	}
	*len = body;
	return 0;
}

/*
 * The portable format's worst case: a cookie and a size, and per container of 65536 pages a key, a
 * cardinality, an offset, a bit of the run flags and at most 8 KiB of contents (a run container is kept only
 * when smaller than the others, an array only up to 4096 values).
 */
static uint64_t roaring_bound(uint64_t npages)
{
	uint64_t containers = (npages + RR_PAGES - 1) / RR_PAGES;

	if (npages > (uint64_t)1 << 32)
		return 0; /* 32-bit page indexes cannot hold such a set */
	return 16 + containers * (RR_BITSET_BYTES + 4 + 4 + 1);
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
	uint8_t *varints; /* the encoder's VARINT_SCRATCH bytes, made at its first use */
};

static pthread_key_t zstd_key;
static pthread_once_t zstd_key_once = PTHREAD_ONCE_INIT;
static _Thread_local struct zstd_ctxs *zstd_tls;

static void zstd_ctxs_free(void *p)
{
	struct zstd_ctxs *z = p;

	ZSTD_freeCCtx(z->c);
	ZSTD_freeDCtx(z->d);
	free(z->varints);
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

/* How many bytes v takes as a LEB128 varint. */
static unsigned varint_len(uint64_t v)
{
	unsigned n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static unsigned put_varint(uint8_t *p, uint64_t v)
{
	unsigned n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Where a walk over a set's runs stands: the next page to look at, the end of the last run. */
struct runs_walk {
	uint64_t pos, prev_end;
};

/*
 * Writes the varints of the runs from w on into buf until fewer than 20 bytes (two varints) are left or
 * the runs end; returns the bytes written, and w where it stopped.
 */
static size_t put_runs(const struct hvt_pageset *s, struct runs_walk *w, uint8_t *buf, size_t cap)
{
	struct hvt_run run;
	size_t used = 0;

	while (cap - used >= 20 && hvt_pageset_next_run(s, &w->pos, &run)) {
		used += put_varint(buf + used, run.first - w->prev_end);
		used += put_varint(buf + used, run.count - 1);
		w->prev_end = run.first + run.count;
	}
	return used;
}

/* Bytes of the varints of the runs from w on, written nowhere; the count stops once past stop. */
static uint64_t count_runs(const struct hvt_pageset *s, struct runs_walk w, uint64_t stop)
{
	struct hvt_run run;
	uint64_t n = 0;

	while (n <= stop && hvt_pageset_next_run(s, &w.pos, &run)) {
		n += varint_len(run.first - w.prev_end) + varint_len(run.count - 1);
		w.prev_end = run.first + run.count;
	}
	return n;
}

static int zstd_errno(size_t code)
{
	switch (ZSTD_getErrorCode(code)) {
	case ZSTD_error_dstSize_tooSmall:
		return -ENOSPC;
	case ZSTD_error_memory_allocation:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

/* Compresses n bytes of the stream into out; with ZSTD_e_end, ends the frame. -ENOSPC when out is full. */
static int zstd_feed(ZSTD_CCtx *c, ZSTD_outBuffer *out, const uint8_t *p, size_t n, ZSTD_EndDirective end)
{
	ZSTD_inBuffer in = {p, n, 0};
	size_t left;

	for (;;) {
		size_t in_before = in.pos, out_before = out->pos;

		left = ZSTD_compressStream2(c, out, &in, end);
		if (ZSTD_isError(left))
			return zstd_errno(left);
		if (in.pos == in.size && (end != ZSTD_e_end || left == 0))
			return 0;
		if (in.pos == in_before && out->pos == out_before)
			return -ENOSPC; /* no progress: the output is full */
	}
}

/* Varints gathered before compressing: a stream that fits is compressed in one call, as it always was. */
#define VARINT_SCRATCH (1u << 20)

/*
 * The runs' varints go straight into dst, with no copy of the whole stream or of the compressed frame
 * (record's memory budget counts dst only, at the worst case). A stream of up to VARINT_SCRATCH bytes is
 * gathered and compressed in one call: one walk over the set, and the single-shot frame. A longer one is
 * streamed through zstd: the frame declares its content size (the decoder requires it), so the rest of the
 * stream is counted first, then the gathered part and the rest go through the streaming compressor.
 * With a limit, a stream whose frame could take more than limit bytes is not compressed: -E2BIG.
 */
static int zstd_runs_encode_into(const struct hvt_pageset *s, uint8_t *dst, size_t cap, size_t *len,
				 uint64_t limit)
{
	struct zstd_ctxs *z = zstd_ctxs_get();
	struct runs_walk w = {0, 0};
	ZSTD_outBuffer out = {dst, cap, 0};
	uint64_t rest = 0;
	size_t used, r;
	int rc;

	if (!z || (!z->varints && !(z->varints = malloc(VARINT_SCRATCH))))
		return -ENOMEM;
	used = put_runs(s, &w, z->varints, VARINT_SCRATCH);
	/* The scratch filled up: there may be more. A frame is never smaller than its stream, so past the
	 * limit the count can stop. */
	if (used > VARINT_SCRATCH - 20)
		rest = count_runs(s, w, limit ? limit - (limit < used ? limit : used) : UINT64_MAX);
	if (limit && ZSTD_compressBound(used + rest) > limit)
		return -E2BIG;
	if (!rest) {
		r = ZSTD_compressCCtx(z->c, dst, cap, z->varints, used, ZSTD_RUNS_LEVEL);
		if (ZSTD_isError(r))
			return zstd_errno(r);
		*len = r;
		return 0;
	}
	ZSTD_CCtx_reset(z->c, ZSTD_reset_session_and_parameters);
	r = ZSTD_CCtx_setParameter(z->c, ZSTD_c_compressionLevel, ZSTD_RUNS_LEVEL);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setPledgedSrcSize(z->c, used + rest);
	if (ZSTD_isError(r))
		return zstd_errno(r);
	/* zstd copies what it is fed into its own window: the scratch is free again once a call returns */
	do {
		rc = zstd_feed(z->c, &out, z->varints, used, ZSTD_e_continue);
		if (rc)
			return rc;
	} while ((used = put_runs(s, &w, z->varints, VARINT_SCRATCH)) > 0);
	rc = zstd_feed(z->c, &out, NULL, 0, ZSTD_e_end);
	if (rc)
		return rc;
	*len = out.pos;
	return 0;
}

/*
 * Each run costs at least as many pages as its two varints take bytes (the first run at most one byte more),
 * so the stream of a set of npages pages is at most npages + 1 bytes; zstd's frame of it, at most its bound.
 */
static uint64_t zstd_runs_bound(uint64_t npages)
{
	size_t bound = ZSTD_compressBound((size_t)npages + 1);

	return ZSTD_isError(bound) ? 0 : bound;
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

uint64_t hvt_pageset_encode_bound(uint64_t npages, enum hvt_codec c)
{
	switch (c) {
	case HVT_CODEC_ROARING:
		return roaring_bound(npages);
	case HVT_CODEC_ZSTD_RUNS:
		return zstd_runs_bound(npages);
	}
	return 0;
}

int hvt_pageset_encode_into(const struct hvt_pageset *s, enum hvt_codec c, uint8_t *dst, size_t cap,
			    size_t *len)
{
	*len = 0;
	switch (c) {
	case HVT_CODEC_ROARING:
		return roaring_encode_into(s, dst, cap, len);
	case HVT_CODEC_ZSTD_RUNS:
		return zstd_runs_encode_into(s, dst, cap, len, 0);
	}
	return -EINVAL;
}

/*
 * Where zstd-runs' worst case (a varint byte per page) is above roaring's (a bit per page), the writer caps
 * a set at roaring's: 0 where it does not (small slots, and slots past roaring's 32-bit page indexes).
 */
static uint64_t auto_cap(uint64_t npages)
{
	uint64_t r = roaring_bound(npages);

	return r && r < zstd_runs_bound(npages) ? r : 0;
}

uint64_t hvt_pageset_encode_auto_bound(uint64_t npages)
{
	uint64_t cap = auto_cap(npages);

	return cap ? cap : zstd_runs_bound(npages);
}

int hvt_pageset_encode_auto_into(const struct hvt_pageset *s, uint8_t *dst, size_t cap, size_t *len,
				 enum hvt_codec *c)
{
	uint64_t limit = auto_cap(s->npages);
	int rc;

	*len = 0;
	*c = HVT_CODEC_ROARING;
	if (hvt_codec_default == HVT_CODEC_ROARING && limit)
		return roaring_encode_into(s, dst, cap, len);
	*c = HVT_CODEC_ZSTD_RUNS;
	/* decided from the runs' varints, counted before any is compressed */
	rc = zstd_runs_encode_into(s, dst, cap, len, limit);
	if (rc != -E2BIG)
		return rc;
	*c = HVT_CODEC_ROARING;
	return roaring_encode_into(s, dst, cap, len);
}

int hvt_pageset_encode(const struct hvt_pageset *s, enum hvt_codec c, uint8_t **out, size_t *outlen)
{
	uint64_t bound = hvt_pageset_encode_bound(s->npages, c);
	uint8_t *shrunk;
	int rc;

	*out = NULL;
	*outlen = 0;
	if (!bound)
		return -EINVAL;
	*out = malloc(bound);
	if (!*out)
		return -ENOMEM;
	rc = hvt_pageset_encode_into(s, c, *out, (size_t)bound, outlen);
	if (rc) {
		free(*out);
		*out = NULL;
		*outlen = 0;
		return rc;
	}
	shrunk = realloc(*out, *outlen ? *outlen : 1);
	if (shrunk)
		*out = shrunk;
	return 0;
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
