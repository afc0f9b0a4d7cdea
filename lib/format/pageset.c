// SPDX-License-Identifier: MIT
/* Page sets as bitmaps of 64-bit words with a mark per word (pageset.h); every operation works a word at a
 * time, and those that walk a set walk its marked words only. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/pageset.h"
#include "pageset_runs.h"

#define ALL_ONES (~(uint64_t)0)

static size_t nwords(const struct hvt_pageset *s)
{
	return (size_t)hvt_pageset_nwords(s->npages);
}

static size_t nmarks(const struct hvt_pageset *s)
{
	return (size_t)hvt_pageset_nmarks(s->npages);
}

static void mark(struct hvt_pageset *s, size_t word)
{
	s->marks[word / 64] |= (uint64_t)1 << (word % 64);
}

/* Sets bits first..last (inclusive) of an array of words: the pages of a run, or the marks of its words. */
static void set_bits(uint64_t *w, uint64_t first, uint64_t last)
{
	size_t w0 = (size_t)(first / 64), w1 = (size_t)(last / 64);
	uint64_t lo = ALL_ONES << (first % 64), hi = ALL_ONES >> (63 - last % 64);

	if (w0 == w1) {
		w[w0] |= lo & hi;
		return;
	}
	w[w0] |= lo;
	memset(&w[w0 + 1], 0xff, (w1 - w0 - 1) * sizeof(uint64_t));
	w[w1] |= hi;
}

size_t hvt_pageset_next_marked(const struct hvt_pageset *s, size_t word)
{
	size_t n = nwords(s), m = word / 64, nm = nmarks(s);
	uint64_t bits;

	if (word >= n)
		return n;
	bits = s->marks[m] & (ALL_ONES << (word % 64));
	while (!bits) {
		if (++m >= nm)
			return n;
		bits = s->marks[m];
	}
	word = m * 64 + (size_t)__builtin_ctzll(bits);
	return word < n ? word : n;
}

int hvt_pageset_init(struct hvt_pageset *s, uint64_t npages)
{
	uint64_t n, m;

	s->npages = 0;
	s->words = s->marks = NULL;
	if (npages > UINT64_MAX - 63)
		return -ENOMEM;
	n = hvt_pageset_nwords(npages);
	m = hvt_pageset_nmarks(npages);
	if (n > SIZE_MAX / sizeof(uint64_t))
		return -ENOMEM;
	/* At least one word, so an empty slot still has a valid pointer. */
	s->words = calloc(n ? (size_t)n : 1, sizeof(uint64_t));
	s->marks = calloc(m ? (size_t)m : 1, sizeof(uint64_t));
	if (!s->words || !s->marks) {
		free(s->words);
		free(s->marks);
		s->words = s->marks = NULL;
		return -ENOMEM;
	}
	s->npages = npages;
	return 0;
}

void hvt_pageset_fini(struct hvt_pageset *s)
{
	free(s->words);
	free(s->marks);
	s->words = s->marks = NULL;
	s->npages = 0;
}

void hvt_pageset_clear(struct hvt_pageset *s)
{
	size_t nm = nmarks(s);

	for (size_t m = 0; m < nm; m++) {
		for (uint64_t bits = s->marks[m]; bits; bits &= bits - 1)
			s->words[m * 64 + (size_t)__builtin_ctzll(bits)] = 0;
		s->marks[m] = 0;
	}
}

/*
 * Words from src (little-endian; src may be the set's own words) into the set, bits past npages dropped, and
 * their marks computed as they pass: one pass over the bitmap, where a copy and then a scan for the marks
 * took two (a TiB guest's dirty log: 32 MiB each).
 */
static void load_words(struct hvt_pageset *s, const void *src)
{
	const size_t n = nwords(s), nm = nmarks(s);
	const unsigned tail = (unsigned)(s->npages % 64);
	const uint64_t last_mask = tail ? ((uint64_t)1 << tail) - 1 : ALL_ONES;
	const uint8_t *p = src;

	for (size_t m = 0; m < nm; m++) {
		size_t end = (m + 1) * 64 < n ? (m + 1) * 64 : n;
		uint64_t bits = 0;

		for (size_t i = m * 64; i < end; i++) {
			uint64_t w;

			memcpy(&w, p + 8 * i, sizeof(w));
			w = le64toh(w) & (i == n - 1 ? last_mask : ALL_ONES);
			s->words[i] = w;
			bits |= (uint64_t)(w != 0) << (i % 64);
		}
		s->marks[m] = bits;
	}
}

void hvt_pageset_remark(struct hvt_pageset *s)
{
	load_words(s, s->words);
}

int hvt_pageset_copy(struct hvt_pageset *dst, const struct hvt_pageset *src)
{
	int rc = hvt_pageset_init(dst, src->npages);

	if (rc)
		return rc;
	memcpy(dst->words, src->words, nwords(src) * sizeof(uint64_t));
	memcpy(dst->marks, src->marks, nmarks(src) * sizeof(uint64_t));
	return 0;
}

void hvt_pageset_set(struct hvt_pageset *s, uint64_t page)
{
	/* Out-of-range pages are ignored rather than written past the bitmap. */
	if (page < s->npages) {
		s->words[page / 64] |= (uint64_t)1 << (page % 64);
		mark(s, (size_t)(page / 64));
	}
}

void hvt_pageset_set_range(struct hvt_pageset *s, uint64_t first, uint64_t count)
{
	if (first >= s->npages || count == 0)
		return;
	if (count > s->npages - first)
		count = s->npages - first;
	set_bits(s->marks, first / 64, (first + count - 1) / 64);
	set_bits(s->words, first, first + count - 1);
}

void hvt_pageset_set_runs(struct hvt_pageset *s, const struct hvt_runs *r, size_t begin, size_t end,
			  uint64_t base)
{
	for (size_t i = begin; i < end; i++) {
		uint64_t first = r->v[i].first - base, count = r->v[i].count;
		unsigned bit = (unsigned)(first % 64);

		/* most runs of a scattered set fit in one word: set those inline, leave the rest to set_range
		 */
		if (bit + count <= 64) {
			s->words[first / 64] |= (count == 64 ? ALL_ONES : ((uint64_t)1 << count) - 1) << bit;
			mark(s, (size_t)(first / 64));
		} else {
			hvt_pageset_set_range(s, first, count);
		}
	}
}

bool hvt_pageset_test(const struct hvt_pageset *s, uint64_t page)
{
	return page < s->npages && (s->words[page / 64] >> (page % 64)) & 1;
}

/* The popcnt instruction is not in the x86-64 baseline; pick it at load time where the CPU has it. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("popcnt", "default")))
#endif
uint64_t
hvt_pageset_count(const struct hvt_pageset *s)
{
	size_t nm = nmarks(s);
	uint64_t total = 0;

	for (size_t m = 0; m < nm; m++)
		for (uint64_t bits = s->marks[m]; bits; bits &= bits - 1)
			total +=
			    (uint64_t)__builtin_popcountll(s->words[m * 64 + (size_t)__builtin_ctzll(bits)]);
	return total;
}

bool hvt_pageset_equal(const struct hvt_pageset *a, const struct hvt_pageset *b)
{
	return a->npages == b->npages && !memcmp(a->words, b->words, nwords(a) * sizeof(uint64_t));
}

bool hvt_pageset_is_subset(const struct hvt_pageset *a, const struct hvt_pageset *b)
{
	size_t n = nwords(a);

	if (a->npages != b->npages)
		return false;
	for (size_t i = hvt_pageset_next_marked(a, 0); i < n; i = hvt_pageset_next_marked(a, i + 1))
		if (a->words[i] & ~b->words[i])
			return false;
	return true;
}

void hvt_pageset_load_le(struct hvt_pageset *s, const void *bitmap)
{
	load_words(s, bitmap);
}

int hvt_pageset_union(struct hvt_pageset *dst, const struct hvt_pageset *src)
{
	uint64_t added;

	return hvt_pageset_union_count(dst, src, &added);
}

int hvt_pageset_union_count(struct hvt_pageset *dst, const struct hvt_pageset *src, uint64_t *added)
{
	size_t n = nwords(dst);
	uint64_t total = 0;

	if (dst->npages != src->npages)
		return -EINVAL;
	for (size_t i = hvt_pageset_next_marked(src, 0); i < n; i = hvt_pageset_next_marked(src, i + 1)) {
		total += (uint64_t)__builtin_popcountll(src->words[i] & ~dst->words[i]);
		dst->words[i] |= src->words[i];
	}
	for (size_t m = 0; m < nmarks(dst); m++)
		dst->marks[m] |= src->marks[m];
	*added = total;
	return 0;
}

int hvt_pageset_intersect(struct hvt_pageset *dst, const struct hvt_pageset *src)
{
	size_t n = nwords(dst);

	if (dst->npages != src->npages)
		return -EINVAL;
	for (size_t i = hvt_pageset_next_marked(dst, 0); i < n; i = hvt_pageset_next_marked(dst, i + 1))
		dst->words[i] &= src->words[i];
	return 0;
}

int hvt_pageset_subtract(struct hvt_pageset *dst, const struct hvt_pageset *src)
{
	size_t n = nwords(dst);

	if (dst->npages != src->npages)
		return -EINVAL;
	for (size_t i = hvt_pageset_next_marked(dst, 0); i < n; i = hvt_pageset_next_marked(dst, i + 1))
		dst->words[i] &= ~src->words[i];
	return 0;
}

/*
 * Finds the first set bit at or after pos, then the first clear bit after that. The first search skips
 * unmarked words by their marks, the second whole all-one words (each marked); both use ctz inside a word,
 * so a run costs a word or two and the gap before it a mark word per 4096 pages. Bits past npages are zero,
 * so a run never extends past the slot.
 */
bool hvt_pageset_next_run(const struct hvt_pageset *s, uint64_t *pos, struct hvt_run *run)
{
	size_t n = nwords(s);
	uint64_t p = *pos, first, end, w;
	size_t i;

	if (p >= s->npages)
		return false;
	i = (size_t)(p / 64);
	w = s->words[i] & (ALL_ONES << (p % 64));
	while (!w) {
		i = hvt_pageset_next_marked(s, i + 1);
		if (i >= n) {
			*pos = s->npages;
			return false;
		}
		w = s->words[i];
	}
	first = (uint64_t)i * 64 + (uint64_t)__builtin_ctzll(w);

	w = ~s->words[i] & (ALL_ONES << (first % 64));
	while (!w) {
		if (++i >= n)
			break;
		w = ~s->words[i];
	}
	end = i >= n ? s->npages : (uint64_t)i * 64 + (uint64_t)__builtin_ctzll(w);
	if (end > s->npages)
		end = s->npages;

	run->first = first;
	run->count = end - first;
	*pos = end;
	return true;
}
