// SPDX-License-Identifier: MIT
/* The guest memory layout: validation, copies, JSON form and the geometry of the shared bitmaps. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "hvmtrace/error.h"
#include "hvmtrace/json_read.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/pageset.h"

void hvt_layout_fini(struct hvt_layout *l)
{
	if (!l)
		return;
	for (uint32_t i = 0; l->slots && i < l->nslots; i++)
		free(l->slots[i].extents);
	free(l->slots);
	memset(l, 0, sizeof(*l));
}

int hvt_layout_copy(struct hvt_layout *dst, const struct hvt_layout *src)
{
	*dst = *src;
	dst->slots = NULL;
	if (src->nslots == 0)
		return 0;
	dst->slots = calloc(src->nslots, sizeof(*dst->slots));
	if (!dst->slots)
		goto nomem;
	for (uint32_t i = 0; i < src->nslots; i++) {
		const struct hvt_memslot *s = &src->slots[i];

		dst->slots[i] = *s;
		dst->slots[i].extents = NULL;
		if (s->nextents == 0)
			continue;
		dst->slots[i].extents = malloc(s->nextents * sizeof(*s->extents));
		if (!dst->slots[i].extents)
			goto nomem;
		memcpy(dst->slots[i].extents, s->extents, s->nextents * sizeof(*s->extents));
	}
	return 0;
nomem:
	hvt_layout_fini(dst);
	return -ENOMEM;
}

/* ---- validation ---- */

struct span {
	uint64_t start, size;
	uint32_t index;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

/* Sorted by start, two spans overlap iff some span starts before its predecessor ends. Returns the index of
 * the later span of an overlapping pair, or -1. *other gets the earlier one. */
static int find_overlap(struct span *v, uint32_t n, uint32_t *other)
{
	qsort(v, n, sizeof(*v), span_cmp);
	for (uint32_t i = 1; i < n; i++) {
		if (v[i].start < v[i - 1].start + v[i - 1].size) {
			*other = v[i - 1].index;
			return (int)v[i].index;
		}
	}
	return -1;
}

static bool aligned(uint64_t v, uint32_t page_size)
{
	return (v & (page_size - 1)) == 0;
}

static int validate_extents(const struct hvt_layout *l, uint32_t si, struct span *spans, struct hvt_err *err)
{
	const struct hvt_memslot *s = &l->slots[si];
	const uint32_t ps = l->page_size;

	if (s->nextents > HVT_SLOT_MAX_EXTENTS)
		return hvt_err_set(err, -EINVAL, "slot %" PRIu32 ": %" PRIu32 " extents (at most %d)",
				   s->slot, s->nextents, HVT_SLOT_MAX_EXTENTS);
	if (s->nextents && !s->extents)
		return hvt_err_set(err, -EINVAL, "slot %" PRIu32 ": %" PRIu32 " extents but no extent array",
				   s->slot, s->nextents);
	for (uint32_t e = 0; e < s->nextents; e++) {
		const struct hvt_extent *x = &s->extents[e];

		if (x->size == 0 || !aligned(x->gpa, ps) || !aligned(x->hpa, ps) || !aligned(x->size, ps))
			return hvt_err_set(err, -EINVAL,
					   "slot %" PRIu32 " extent %" PRIu32 " (gpa 0x%" PRIx64
					   ", hpa 0x%" PRIx64 ", size 0x%" PRIx64
					   "): empty or not aligned to the page size %" PRIu32,
					   s->slot, e, x->gpa, x->hpa, x->size, ps);
		if (x->gpa < s->gpa || x->size > s->size || x->gpa - s->gpa > s->size - x->size)
			return hvt_err_set(err, -EINVAL,
					   "slot %" PRIu32 " extent %" PRIu32 " (gpa 0x%" PRIx64
					   ", size 0x%" PRIx64 ") is not inside its slot (gpa 0x%" PRIx64
					   ", size 0x%" PRIx64 ")",
					   s->slot, e, x->gpa, x->size, s->gpa, s->size);
		if (x->hpa + x->size < x->hpa)
			return hvt_err_set(err, -EINVAL,
					   "slot %" PRIu32 " extent %" PRIu32 ": hpa 0x%" PRIx64
					   " + size 0x%" PRIx64 " overflows",
					   s->slot, e, x->hpa, x->size);
		spans[e] = (struct span){x->gpa, x->size, e};
	}
	uint32_t other;
	int bad = find_overlap(spans, s->nextents, &other);
	if (bad >= 0)
		return hvt_err_set(err, -EINVAL,
				   "slot %" PRIu32 ": extent %d overlaps extent %" PRIu32
				   " in guest-physical space",
				   s->slot, bad, other);
	/* The same host range must not back two places either. */
	for (uint32_t e = 0; e < s->nextents; e++)
		spans[e] = (struct span){s->extents[e].hpa, s->extents[e].size, e};
	bad = find_overlap(spans, s->nextents, &other);
	if (bad >= 0)
		return hvt_err_set(err, -EINVAL,
				   "slot %" PRIu32 ": extent %d overlaps extent %" PRIu32
				   " in host-physical space",
				   s->slot, bad, other);
	return 0;
}

int hvt_layout_validate(const struct hvt_layout *l, struct hvt_err *err)
{
	const uint32_t ps = l->page_size;
	struct span *spans;
	uint32_t nspans = l->nslots;
	int rc = 0;

	if (ps < 4096 || (ps & (ps - 1)))
		return hvt_err_set(err, -EINVAL,
				   "layout: page size %" PRIu32 " is not a power of two >= 4096", ps);
	if (l->nslots > HVT_LAYOUT_MAX_SLOTS)
		return hvt_err_set(err, -EINVAL, "layout: %" PRIu32 " slots (at most %d)", l->nslots,
				   HVT_LAYOUT_MAX_SLOTS);
	if (l->nslots && !l->slots)
		return hvt_err_set(err, -EINVAL, "layout: %" PRIu32 " slots but no slot array", l->nslots);
	for (uint32_t i = 0; i < l->nslots; i++)
		if (l->slots[i].nextents > nspans && l->slots[i].nextents <= HVT_SLOT_MAX_EXTENTS)
			nspans = l->slots[i].nextents;
	spans = calloc(nspans ? nspans : 1, sizeof(*spans));
	if (!spans)
		return hvt_err_set(err, -ENOMEM, "layout: out of memory");

	for (uint32_t i = 0; i < l->nslots && !rc; i++) {
		const struct hvt_memslot *s = &l->slots[i];

		if (s->size == 0)
			rc = hvt_err_set(err, -EINVAL, "slot %" PRIu32 " (index %" PRIu32 "): size is 0",
					 s->slot, i);
		else if (!aligned(s->gpa, ps) || !aligned(s->size, ps))
			rc = hvt_err_set(err, -EINVAL,
					 "slot %" PRIu32 " (index %" PRIu32 "): gpa 0x%" PRIx64
					 " or size 0x%" PRIx64 " is not a multiple of the page size %" PRIu32,
					 s->slot, i, s->gpa, s->size, ps);
		else if (s->gpa + s->size < s->gpa)
			rc = hvt_err_set(err, -EINVAL,
					 "slot %" PRIu32 " (index %" PRIu32 "): gpa 0x%" PRIx64
					 " + size 0x%" PRIx64 " overflows",
					 s->slot, i, s->gpa, s->size);
		else if (memchr(s->backing, '\0', sizeof(s->backing)) == NULL ||
			 memchr(s->name, '\0', sizeof(s->name)) == NULL)
			rc = hvt_err_set(err, -EINVAL, "slot %" PRIu32 ": backing or name is not terminated",
					 s->slot);
		for (uint32_t j = 0; j < i && !rc; j++)
			if (l->slots[j].slot == s->slot)
				rc = hvt_err_set(err, -EINVAL,
						 "slot %" PRIu32 ": id used twice (indexes %" PRIu32
						 " and %" PRIu32 ")",
						 s->slot, j, i);
		if (!rc)
			rc = validate_extents(l, i, spans, err);
	}
	if (!rc) {
		uint32_t other;
		int bad;

		for (uint32_t i = 0; i < l->nslots; i++)
			spans[i] = (struct span){l->slots[i].gpa, l->slots[i].size, i};
		bad = find_overlap(spans, l->nslots, &other);
		if (bad >= 0)
			rc = hvt_err_set(err, -EINVAL,
					 "slot %" PRIu32 " (gpa 0x%" PRIx64 ") overlaps slot %" PRIu32
					 " (gpa 0x%" PRIx64 ", size 0x%" PRIx64 ")",
					 l->slots[bad].slot, l->slots[bad].gpa, l->slots[other].slot,
					 l->slots[other].gpa, l->slots[other].size);
	}
	free(spans);
	return rc;
}

/* ---- JSON ---- */

static void add_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

struct json_object *hvt_layout_to_json(const struct hvt_layout *l)
{
	struct json_object *o = json_object_new_object();
	struct json_object *slots = json_object_new_array();

	add_u64(o, "generation", l->generation);
	add_u64(o, "page_size", l->page_size);
	for (uint32_t i = 0; i < l->nslots; i++) {
		const struct hvt_memslot *s = &l->slots[i];
		struct json_object *js = json_object_new_object();

		add_u64(js, "slot", s->slot);
		add_u64(js, "gpa", s->gpa);
		add_u64(js, "size", s->size);
		json_object_object_add(js, "backing", json_object_new_string(s->backing));
		if (s->name[0])
			json_object_object_add(js, "name", json_object_new_string(s->name));
		if (s->nextents) {
			struct json_object *ext = json_object_new_array();

			for (uint32_t e = 0; e < s->nextents; e++) {
				const struct hvt_extent *x = &s->extents[e];
				struct json_object *je = json_object_new_object();

				add_u64(je, "gpa", x->gpa);
				add_u64(je, "hpa", x->hpa);
				add_u64(je, "size", x->size);
				json_object_object_add(je, "channel", json_object_new_string(x->channel));
				json_object_array_add(ext, je);
			}
			json_object_object_add(js, "extents", ext);
		}
		json_object_array_add(slots, js);
	}
	json_object_object_add(o, "slots", slots);
	return o;
}

static int extent_from_json(struct hvt_extent *x, const struct hvt_json_in *in)
{
	int rc;

	if ((rc = hvt_json_uint(in, "gpa", 0, UINT64_MAX, &x->gpa)) ||
	    (rc = hvt_json_uint(in, "hpa", 0, UINT64_MAX, &x->hpa)) ||
	    (rc = hvt_json_uint(in, "size", 0, UINT64_MAX, &x->size)))
		return rc;
	return HVT_JSON_OPT(hvt_json_strbuf, in, "channel", x->channel, sizeof(x->channel), false);
}

static int slot_from_json(struct hvt_memslot *s, const struct hvt_json_in *slots, uint32_t index)
{
	struct hvt_json_in in, ext;
	size_t n;
	int rc;

	if ((rc = hvt_json_item_object(slots, index, &in)))
		return rc;
	hvt_json_rename(&in, "layout: slots[%" PRIu32 "]", index);
	if ((rc = hvt_json_u32(&in, "slot", 0, UINT32_MAX, &s->slot)))
		return rc;
	hvt_json_rename(&in, "layout: slots[%" PRIu32 "] (slot %" PRIu32 ")", index, s->slot);
	if ((rc = hvt_json_uint(&in, "gpa", 0, UINT64_MAX, &s->gpa)) ||
	    (rc = hvt_json_uint(&in, "size", 0, UINT64_MAX, &s->size)) ||
	    (rc = hvt_json_strbuf(&in, "backing", s->backing, sizeof(s->backing), false)) ||
	    (rc = HVT_JSON_OPT(hvt_json_strbuf, &in, "name", s->name, sizeof(s->name), false)))
		return rc;
	if (!hvt_json_has(&in, "extents"))
		return 0;
	if ((rc = hvt_json_array(&in, "extents", HVT_SLOT_MAX_EXTENTS, &ext, &n)) || n == 0)
		return rc;
	hvt_json_rename(&ext, "%s extents", in.where);
	s->nextents = (uint32_t)n;
	s->extents = calloc(s->nextents, sizeof(*s->extents));
	if (!s->extents)
		return hvt_err_set(in.err, -ENOMEM, "layout: out of memory");
	for (uint32_t e = 0; e < s->nextents; e++) {
		struct hvt_json_in x;

		if ((rc = hvt_json_item_object(&ext, e, &x)))
			return rc;
		hvt_json_rename(&x, "%s extents[%" PRIu32 "]", in.where, e);
		if ((rc = extent_from_json(&s->extents[e], &x)))
			return rc;
	}
	return 0;
}

int hvt_layout_from_json(struct hvt_layout *l, struct json_object *o, struct hvt_err *err)
{
	struct hvt_json_in in, slots;
	size_t n;
	int rc;

	memset(l, 0, sizeof(*l));
	if (!o || !json_object_is_type(o, json_type_object))
		return hvt_err_set(err, -EINVAL, "layout: not a JSON object");
	hvt_json_in_init(&in, o, -EINVAL, err, "layout: top level");
	if ((rc = hvt_json_uint(&in, "generation", 0, UINT64_MAX, &l->generation)) ||
	    (rc = hvt_json_u32(&in, "page_size", 0, UINT32_MAX, &l->page_size)) ||
	    (rc = hvt_json_array(&in, "slots", HVT_LAYOUT_MAX_SLOTS, &slots, &n)))
		return rc;
	hvt_json_rename(&slots, "layout: slots");
	l->nslots = (uint32_t)n;
	if (l->nslots) {
		l->slots = calloc(l->nslots, sizeof(*l->slots));
		if (!l->slots) {
			l->nslots = 0;
			return hvt_err_set(err, -ENOMEM, "layout: out of memory");
		}
	}
	for (uint32_t i = 0; i < l->nslots && !rc; i++)
		rc = slot_from_json(&l->slots[i], &slots, i);
	if (!rc)
		rc = hvt_layout_validate(l, err);
	if (rc)
		hvt_layout_fini(l);
	return rc;
}

/* ---- lookups and bitmap geometry ---- */

uint64_t hvt_layout_total_pages(const struct hvt_layout *l)
{
	uint64_t n = 0;

	for (uint32_t i = 0; l->page_size && i < l->nslots; i++)
		n += hvt_memslot_npages(l, &l->slots[i]);
	return n;
}

int hvt_layout_find_gfn(const struct hvt_layout *l, uint64_t gfn, uint64_t *page)
{
	if (l->page_size == 0)
		return -1;
	for (uint32_t i = 0; i < l->nslots; i++) {
		const struct hvt_memslot *s = &l->slots[i];
		uint64_t first = hvt_memslot_first_gfn(l, s);

		if (gfn >= first && gfn - first < hvt_memslot_npages(l, s)) {
			if (page)
				*page = gfn - first;
			return (int)i;
		}
	}
	return -1;
}

uint64_t hvt_layout_bitmap_offset(const struct hvt_layout *l, uint32_t index)
{
	uint64_t off = 0;

	for (uint32_t i = 0; l->page_size && i < index && i < l->nslots; i++)
		off += hvt_pageset_nwords(hvt_memslot_npages(l, &l->slots[i])) * 8;
	return off;
}

uint64_t hvt_layout_bitmap_bytes(const struct hvt_layout *l)
{
	return hvt_layout_bitmap_offset(l, l->nslots);
}
