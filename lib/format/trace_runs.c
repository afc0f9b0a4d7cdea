// SPDX-License-Identifier: MIT
/* An INTERVAL record read as runs of GFNs (trace_runs.h); the checks follow hvt_interval_decode. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "trace_format.h"
#include "trace_decode.h"

static int read_set(struct hvt_cursor *c, struct hvt_runs *out, const struct hvt_layout *l, uint32_t slot,
		    struct hvt_err *err)
{
	const struct hvt_memslot *s = &l->slots[slot];
	uint32_t codec = hvt_cursor_u32(c), len = hvt_cursor_u32(c);
	uint64_t count = hvt_cursor_u64(c), before = out->pages;
	const uint8_t *bytes = hvt_cursor_take(c, len);
	int rc;

	if (!bytes)
		return hvt_err_set(err, -EINVAL, "set runs past the end of the payload");
	rc = hvt_pageset_decode_runs(out, hvt_memslot_first_gfn(l, s), hvt_memslot_npages(l, s),
				     (enum hvt_codec)codec, bytes, len, err);
	if (rc)
		return rc;
	if (out->pages - before != count)
		return hvt_err_set(err, -EINVAL, "set holds %llu pages, its header says %llu",
				   (unsigned long long)(out->pages - before), (unsigned long long)count);
	return 0;
}

static int cmp_run(const void *a, const void *b)
{
	const struct hvt_run *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/* Slots in layout order need not ascend in guest-physical space; the runs must. */
static void sort_if_needed(struct hvt_runs *r)
{
	for (size_t i = 1; i < r->n; i++)
		if (r->v[i].first < r->v[i - 1].first) {
			qsort(r->v, r->n, sizeof(*r->v), cmp_run);
			return;
		}
}

/* A written page is accessed; what hvt_interval_decode checks for WNA_COUNTED, on runs. */
static bool runs_subset(const struct hvt_runs *a, const struct hvt_runs *b)
{
	size_t j = 0;

	for (size_t i = 0; i < a->n; i++) {
		while (j < b->n && b->v[j].first + b->v[j].count <= a->v[i].first)
			j++;
		if (j == b->n || b->v[j].first > a->v[i].first ||
		    b->v[j].first + b->v[j].count < a->v[i].first + a->v[i].count)
			return false;
	}
	return true;
}

static int decode(struct hvt_iv_runs *ir, const struct hvt_layout *l, const uint8_t *payload, size_t len,
		  struct hvt_err *err)
{
	/* the reader checked the fixed part's size and the slot count against l when it opened the trace */
	struct hvt_interval *iv = &ir->hdr;
	struct hvt_cursor c = {.p = payload, .left = len};
	size_t fixed;
	struct hvt_channel_bytes *channels = iv->channels; /* kept across reads (ch_cap) */
	uint32_t sets, nch;
	int rc;

	rc = hvt_interval_decode_fixed(iv, payload, len, &fixed, &nch, err);
	iv->channels = channels;
	if (rc)
		return rc;
	sets = iv->flags & HVT_IV_SET_FLAGS;
	hvt_cursor_take(&c, fixed);
	rc = hvt_interval_decode_channels(iv, &c, nch, &ir->ch_cap, err);
	for (uint32_t i = 0; !rc && i < iv->nslots; i++) {
		uint32_t present = hvt_cursor_u32(&c);

		if (c.bad)
			return hvt_err_set(err, -EINVAL, "slot %u runs past the end of the payload", i);
		if (present != sets)
			return hvt_err_set(err, -EINVAL,
					   "slot %u holds sets 0x%x, the interval flags say 0x%x", i, present,
					   sets);
		if ((sets & HVT_IV_WRITTEN) && (rc = read_set(&c, &ir->set[0], l, i, err)))
			return hvt_err_prefix(err, rc, "slot %u written: ", i);
		if ((sets & HVT_IV_ACCESSED) && (rc = read_set(&c, &ir->set[1], l, i, err)))
			return hvt_err_prefix(err, rc, "slot %u accessed: ", i);
	}
	if (rc)
		return rc;
	if (c.left)
		return hvt_err_set(err, -EINVAL, "%zu bytes of junk after the last slot", c.left);
	sort_if_needed(&ir->set[0]);
	sort_if_needed(&ir->set[1]);
	if ((iv->flags & HVT_IV_WNA_COUNTED) && iv->written_not_accessed > ir->set[0].pages)
		return hvt_err_set(
		    err, -EINVAL, "field written_not_accessed: %llu is more than the %llu written pages",
		    (unsigned long long)iv->written_not_accessed, (unsigned long long)ir->set[0].pages);
	if ((iv->flags & HVT_IV_WNA_COUNTED) && !runs_subset(&ir->set[0], &ir->set[1]))
		return hvt_err_set(err, -EINVAL, "flag WNA_COUNTED, but a written page is not accessed");
	return 0;
}

int hvt_iv_runs_decode(struct hvt_iv_runs *ir, const struct hvt_layout *l, const uint8_t *payload, size_t len,
		       struct hvt_err *err)
{
	int rc;

	ir->set[0].n = ir->set[1].n = 0;
	ir->set[0].pages = ir->set[1].pages = 0;
	ir->hdr.nchannels = 0;
	if (len < HVT_IV_FIXED_SIZE || hvt_get_le32(payload + 64) != l->nslots)
		return hvt_err_set(err, -EINVAL, "interval payload does not fit its layout");
	rc = decode(ir, l, payload, len, err);
	if (rc)
		ir->set[0].n = ir->set[1].n = 0;
	return rc;
}

int hvt_trace_read_runs(struct hvt_trace_reader *r, uint64_t i, struct hvt_iv_runs *ir, struct hvt_err *err)
{
	const struct hvt_layout *l;
	const uint8_t *payload;
	size_t len;
	int rc = hvt_trace_read_payload(r, i, &payload, &len, &l, err);

	if (rc)
		return rc;
	rc = hvt_iv_runs_decode(ir, l, payload, len, err);
	if (!rc)
		rc = hvt_trace_check_interval_meta(r, &ir->hdr, err);
	if (rc)
		hvt_trace_interval_err(r, i, rc, err);
	return rc;
}

void hvt_iv_runs_fini(struct hvt_iv_runs *ir)
{
	free(ir->set[0].v);
	free(ir->set[1].v);
	free(ir->hdr.channels);
	memset(ir, 0, sizeof(*ir));
}

void hvt_runs_range(const struct hvt_runs *r, uint64_t first, uint64_t end, size_t *begin, size_t *end_index)
{
	size_t lo = 0, hi = r->n;

	/* the first run that ends after first */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->v[mid].first + r->v[mid].count <= first)
			lo = mid + 1;
		else
			hi = mid;
	}
	*begin = lo;
	hi = r->n;
	/* the first run that starts at or after end */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->v[mid].first < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	*end_index = lo;
}
