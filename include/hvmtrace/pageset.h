/* SPDX-License-Identifier: MIT */
/*
 * Page sets: the pages of one memslot, as a bitmap. Bit i is page i of the slot (its GFN is the slot's
 * first GFN + i). Words are 64-bit and little-endian, bit 0 of word 0 is page 0: the same layout as KVM's
 * dirty log and as the shared bitmaps of the attach protocol, so a harvested bitmap loads with one copy.
 * Bits past npages are always zero.
 *
 * Beside the bitmap, a mark per word (bit i of marks: word i may hold a set page) lets every walk skip the
 * words that hold none, so clearing, counting and encoding a set cost what it holds (and a bit per 64 pages
 * to find it), not the slot's size: a TiB guest writing a few thousand pages an interval costs the tracer
 * that, not four passes over 32 MiB (issue 25). An unmarked word is always zero; a marked one may be zero
 * (a bit cleared since). Who fills words other than through these functions (KVM_AD_HARVEST writes them)
 * calls hvt_pageset_remark afterwards.
 */
#ifndef HVMTRACE_PAGESET_H
#define HVMTRACE_PAGESET_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct hvt_err;

struct hvt_pageset {
	uint64_t npages;
	uint64_t *words; /* hvt_pageset_nwords(npages) words */
	uint64_t *marks; /* hvt_pageset_nmarks(npages) words: bit i set when words[i] may be non-zero */
};

/* A maximal run of consecutive set pages. */
struct hvt_run {
	uint64_t first;
	uint64_t count;
};

/*
 * Page sets as runs, the form readers take (a bitmap costs a bit per page of its slot whatever it holds):
 * ascending, disjoint and not adjacent within one set. Page i of a set is base + i, where the appender
 * chose base (the trace reader: the slot's first GFN, trace_runs.h). pages is the runs' total.
 */
struct hvt_runs {
	struct hvt_run *v;
	size_t n, cap;
	uint64_t pages;
};

/* Appends a run (after the runs already there, as their order asks); 0 or -ENOMEM. Inline: the decoder
 * and the analyses call it once per run. */
static inline int hvt_runs_push(struct hvt_runs *r, uint64_t first, uint64_t count)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 1024;
		struct hvt_run *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (struct hvt_run){first, count};
	return 0;
}

static inline uint64_t hvt_pageset_nwords(uint64_t npages)
{
	return (npages + 63) / 64;
}

static inline uint64_t hvt_pageset_nmarks(uint64_t npages)
{
	return (hvt_pageset_nwords(npages) + 63) / 64;
}

/* The bytes a set of npages pages allocates: its bitmap and its marks (record's memory budget counts them).
 */
static inline uint64_t hvt_pageset_bytes(uint64_t npages)
{
	uint64_t words = hvt_pageset_nwords(npages), marks = hvt_pageset_nmarks(npages);

	return 8 * ((words ? words : 1) + (marks ? marks : 1));
}

int hvt_pageset_init(struct hvt_pageset *s, uint64_t npages); /* all clear; -ENOMEM */
void hvt_pageset_fini(struct hvt_pageset *s);
void hvt_pageset_clear(struct hvt_pageset *s); /* costs the marked words, and a word per 4096 pages */
/* Marks exactly the non-zero words, after the words were written directly (one pass over the bitmap). */
void hvt_pageset_remark(struct hvt_pageset *s);
int hvt_pageset_copy(struct hvt_pageset *dst, const struct hvt_pageset *src); /* dst uninitialised */

void hvt_pageset_set(struct hvt_pageset *s, uint64_t page); /* page < npages */
void hvt_pageset_set_range(struct hvt_pageset *s, uint64_t first, uint64_t count);
bool hvt_pageset_test(const struct hvt_pageset *s, uint64_t page);
uint64_t hvt_pageset_count(const struct hvt_pageset *s);
bool hvt_pageset_equal(const struct hvt_pageset *a, const struct hvt_pageset *b);
bool hvt_pageset_is_subset(const struct hvt_pageset *a, const struct hvt_pageset *b); /* a ⊆ b */

/* Loads a little-endian bitmap of hvt_pageset_nwords(s->npages) words (e.g. from the shared memfd);
 * bits past npages are dropped. */
void hvt_pageset_load_le(struct hvt_pageset *s, const void *bitmap);

/* dst |= src, dst &= src, dst &= ~src. -EINVAL when the sets differ in size. */
int hvt_pageset_union(struct hvt_pageset *dst, const struct hvt_pageset *src);
int hvt_pageset_intersect(struct hvt_pageset *dst, const struct hvt_pageset *src);
int hvt_pageset_subtract(struct hvt_pageset *dst, const struct hvt_pageset *src);
/* dst |= src, and *added = the pages of src that dst lacked before. -EINVAL when the sets differ in size
 * (dst unchanged). */
int hvt_pageset_union_count(struct hvt_pageset *dst, const struct hvt_pageset *src, uint64_t *added);

/*
 * Iterates maximal runs in ascending order. Start with *pos = 0; each call fills *run and returns true,
 * or returns false when no run is left.
 */
bool hvt_pageset_next_run(const struct hvt_pageset *s, uint64_t *pos, struct hvt_run *run);

/*
 * On-disk encodings of a page set (trace records carry the codec id, so readers accept both).
 * HVT_CODEC_ROARING: the portable Roaring serialisation of the set page indexes (run-optimised, as CRoaring
 * writes it).
 * HVT_CODEC_ZSTD_RUNS: the runs as LEB128 varints (gap since the previous run's end, length - 1),
 * compressed with zstd. The writer's default was chosen by measurement: see bench/ and docs/formats.md.
 */
enum hvt_codec {
	HVT_CODEC_ROARING = 1,
	HVT_CODEC_ZSTD_RUNS = 2,
};
extern const enum hvt_codec hvt_codec_default;

const char *hvt_codec_name(enum hvt_codec c);

/* Encodes s into a malloc'd buffer. 0, -ENOMEM, -EINVAL (unknown codec, or a set too large for the codec). */
int hvt_pageset_encode(const struct hvt_pageset *s, enum hvt_codec c, uint8_t **out, size_t *outlen);

/* The most bytes codec c takes for any set of npages pages; 0 if it cannot encode such a set. */
uint64_t hvt_pageset_encode_bound(uint64_t npages, enum hvt_codec c);

/*
 * Encodes s into dst, cap bytes, and sets *len; allocates nothing beyond the codec's fixed state (zstd-runs
 * compresses as it reads the runs). 0, -ENOSPC (cap is too small: hvt_pageset_encode_bound always suffices),
 * -ENOMEM, -EINVAL (unknown codec, or a set too large for the codec).
 */
int hvt_pageset_encode_into(const struct hvt_pageset *s, enum hvt_codec c, uint8_t *dst, size_t cap,
			    size_t *len);

/*
 * The writer's choice (docs/formats.md, "Page-set encoding"): hvt_codec_default, zstd-runs, except for a set
 * whose runs' varints could make a frame larger than roaring's worst case (about a bit per page: more than
 * a run or gap start every 16 pages or so), which roaring encodes. The choice is made from the runs, counted
 * before anything is compressed, so a set never takes more than hvt_pageset_encode_auto_bound: the smaller
 * of the two codecs' worst cases (npages / 8 bytes and a little for a large slot, where zstd-runs' alone is
 * npages). Slots where zstd-runs' worst case is the smaller (under about 8,000 pages) or roaring cannot
 * encode (past 2^32 pages) are always zstd-runs, whatever hvt_codec_default. *c is the codec used; the
 * return codes are hvt_pageset_encode_into's.
 */
uint64_t hvt_pageset_encode_auto_bound(uint64_t npages);
int hvt_pageset_encode_auto_into(const struct hvt_pageset *s, uint8_t *dst, size_t cap, size_t *len,
				 enum hvt_codec *c);

/*
 * Decodes into s, which must already be initialised with the slot's npages (its old contents are
 * replaced). Never reads past in+inlen; corrupt input or a page index >= npages gives -EINVAL with a
 * message in err.
 */
int hvt_pageset_decode(struct hvt_pageset *s, enum hvt_codec c, const uint8_t *in, size_t inlen,
		       struct hvt_err *err);

#endif
