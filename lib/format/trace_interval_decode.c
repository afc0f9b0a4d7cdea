// SPDX-License-Identifier: MIT
/*
 * The one decoder of an INTERVAL record payload (docs/formats.md): the fixed part, the channels, then each
 * slot's sets as runs of GFNs (struct hvt_iv_runs, trace_runs.h), the form every reading command takes.
 * Every check of a payload is made here. The bitmap form (hvt_interval_decode, hvt_trace_read_interval) is
 * these runs set in bitmaps (hvt_interval_from_runs), which checks nothing of its own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/trace_runs.h"
#include "pageset_runs.h"
#include "trace_decode.h"
#include "trace_format.h"

int hvt_interval_parse_head(const uint8_t *payload, size_t len, struct hvt_interval_head *h,
			    struct hvt_err *err)
{
	if (len < HVT_IV_FIXED_SIZE)
		return hvt_err_set(err, -EINVAL,
				   "interval payload of %zu bytes is shorter than its fixed part", len);
	h->seq = hvt_get_le64(payload);
	h->t_start_ns = hvt_get_le64(payload + 8);
	h->generation = hvt_get_le64(payload + 40);
	h->nslots = hvt_get_le32(payload + 64);
	return 0;
}

/* The fixed part into iv (scalars only, no sets; iv is zeroed first), its flags checked; *fixed is its
 * size and *nch the channel count that follows. */
static int decode_fixed(struct hvt_interval *iv, const uint8_t *payload, size_t len, size_t *fixed,
			uint32_t *nch, struct hvt_err *err)
{
	struct hvt_interval_head h = {0};
	uint32_t flags;
	int rc;

	memset(iv, 0, sizeof(*iv));
	rc = hvt_interval_parse_head(payload, len, &h, err);
	if (rc)
		return rc;
	flags = hvt_get_le32(payload + 56);
	*nch = hvt_get_le32(payload + 68);
	if (flags & ~HVT_IV_KNOWN_FLAGS)
		return hvt_err_set(err, -EINVAL, "unknown interval flags 0x%x", flags & ~HVT_IV_KNOWN_FLAGS);
	if (*nch && !(flags & HVT_IV_BANDWIDTH))
		return hvt_err_set(err, -EINVAL, "%u channels without the bandwidth flag", *nch);
	if ((flags & HVT_IV_BW_TOTAL) && !(flags & HVT_IV_BANDWIDTH))
		return hvt_err_set(err, -EINVAL, "flag BW_TOTAL without BANDWIDTH");
	if ((flags & HVT_IV_WNA_COUNTED) && (flags & HVT_IV_SET_FLAGS) != HVT_IV_SET_FLAGS)
		return hvt_err_set(err, -EINVAL, "flag WNA_COUNTED without both written and accessed sets");
	if ((flags & HVT_IV_TRACER_BUSY) && !(flags & HVT_IV_TRACER_CPU))
		return hvt_err_set(err, -EINVAL, "flag TRACER_BUSY without TRACER_CPU");
	if ((flags & HVT_IV_LAYOUT_REFUSED) && ((flags & HVT_IV_SET_FLAGS) || !(flags & HVT_IV_FINAL)))
		return hvt_err_set(err, -EINVAL,
				   "flag LAYOUT_REFUSED on an interval with sets, or not final");
	if (hvt_get_le64(payload + 16) < h.t_start_ns)
		return hvt_err_set(err, -EINVAL, "field t_end_ns: %llu is before t_start_ns %llu",
				   (unsigned long long)hvt_get_le64(payload + 16),
				   (unsigned long long)h.t_start_ns);
	*fixed = hvt_iv_fixed_size(flags);
	if (len < *fixed)
		return hvt_err_set(err, -EINVAL,
				   "interval payload of %zu bytes is shorter than its fixed part of %zu", len,
				   *fixed);
	iv->seq = h.seq;
	iv->t_start_ns = h.t_start_ns;
	iv->t_end_ns = hvt_get_le64(payload + 16);
	iv->wall_start_ns = (int64_t)hvt_get_le64(payload + 24);
	iv->harvest_ns = hvt_get_le64(payload + 32);
	iv->generation = h.generation;
	iv->lost_pages = hvt_get_le64(payload + 48);
	iv->flags = flags;
	iv->missed_deadlines = hvt_get_le32(payload + 60);
	iv->nslots = h.nslots;
	if (flags & HVT_IV_WNA_COUNTED)
		iv->written_not_accessed = hvt_get_le64(payload + HVT_IV_FIXED_SIZE);
	if (flags & HVT_IV_TRACER_CPU)
		iv->tracer_cpu_ns = hvt_get_le64(payload + hvt_iv_cpu_offset(flags));
	if (flags & HVT_IV_RING_FULL)
		iv->ring_full = hvt_get_le64(payload + hvt_iv_ring_offset(flags));
	return 0;
}

/* The channel entries that follow the fixed part into iv->channels, grown with realloc when nch exceeds *cap
 * (its room), each checked. */
static int decode_channels(struct hvt_interval *iv, struct hvt_cursor *c, uint32_t nch, size_t *cap,
			   struct hvt_err *err)
{
	/* bound the allocation by what the payload can hold before trusting the count */
	if (nch > c->left / HVT_IV_CHANNEL_SIZE)
		return hvt_err_set(err, -EINVAL, "%u channels run past the end of the payload", nch);
	if (nch > *cap) {
		struct hvt_channel_bytes *v = realloc(iv->channels, nch * sizeof(*v));

		if (!v)
			return hvt_err_set(err, -ENOMEM, "out of memory");
		iv->channels = v;
		*cap = nch;
	}
	iv->nchannels = nch;
	for (uint32_t i = 0; i < nch; i++) {
		iv->channels[i].channel = hvt_cursor_u32(c);
		if (hvt_cursor_u32(c) != 0)
			return hvt_err_set(err, -EINVAL, "channel %u: reserved field is not zero", i);
		iv->channels[i].read_bytes = hvt_cursor_u64(c);
		iv->channels[i].write_bytes = hvt_cursor_u64(c);
		if ((iv->flags & HVT_IV_BW_TOTAL) && iv->channels[i].write_bytes)
			return hvt_err_set(err, -EINVAL, "channel %u: total-bytes interval with write bytes",
					   i);
	}
	return 0;
}

/*
 * One set of a slot block: its header, then the encoded set, appended to out as GFNs of the slot. A slot's
 * runs ascend (the decoders see to it); *unsorted is set when they begin below the runs before them.
 */
static int decode_set(struct hvt_cursor *c, struct hvt_runs *out, const struct hvt_layout *l, uint32_t slot,
		      bool *unsorted, struct hvt_err *err)
{
	const struct hvt_memslot *s = &l->slots[slot];
	uint32_t codec = hvt_cursor_u32(c), len = hvt_cursor_u32(c);
	uint64_t count = hvt_cursor_u64(c), before = out->pages;
	size_t n0 = out->n;
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
	if (n0 && out->n > n0 && out->v[n0].first < out->v[n0 - 1].first)
		*unsorted = true;
	return 0;
}

static int cmp_run(const void *a, const void *b)
{
	const struct hvt_run *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/* Runs [a0, a1) of a lie inside runs [b0, b1) of b. */
static bool runs_subset(const struct hvt_runs *a, size_t a0, size_t a1, const struct hvt_runs *b, size_t b0,
			size_t b1)
{
	for (size_t i = a0, j = b0; i < a1; i++) {
		while (j < b1 && b->v[j].first + b->v[j].count <= a->v[i].first)
			j++;
		if (j == b1 || b->v[j].first > a->v[i].first ||
		    b->v[j].first + b->v[j].count < a->v[i].first + a->v[i].count)
			return false;
	}
	return true;
}

/* What HVT_IV_WNA_COUNTED promises of the sets (decode_fixed checks that both are there): written ⊆ accessed,
 * slot by slot, so that the message names the first slot in layout order that breaks it. */
static int check_written_in_accessed(const struct hvt_iv_runs *ir, const struct hvt_layout *l,
				     struct hvt_err *err)
{
	for (uint32_t i = 0; i < l->nslots; i++) {
		uint64_t first = hvt_memslot_first_gfn(l, &l->slots[i]);
		uint64_t end = first + hvt_memslot_npages(l, &l->slots[i]);
		size_t w0, w1, a0, a1;

		hvt_runs_range(&ir->set[0], first, end, &w0, &w1);
		hvt_runs_range(&ir->set[1], first, end, &a0, &a1);
		if (!runs_subset(&ir->set[0], w0, w1, &ir->set[1], a0, a1))
			return hvt_err_set(
			    err, -EINVAL, "slot %u: flag WNA_COUNTED, but a written page is not accessed", i);
	}
	return 0;
}

static int decode_slots(struct hvt_iv_runs *ir, const struct hvt_layout *l, struct hvt_cursor *c,
			struct hvt_err *err)
{
	uint32_t sets = ir->hdr.flags & HVT_IV_SET_FLAGS;
	bool unsorted[2] = {false, false};
	int rc;

	for (uint32_t i = 0; i < ir->hdr.nslots; i++) {
		uint32_t present = hvt_cursor_u32(c);

		if (c->bad)
			return hvt_err_set(err, -EINVAL, "slot %u runs past the end of the payload", i);
		if (present != sets)
			return hvt_err_set(err, -EINVAL,
					   "slot %u holds sets 0x%x, the interval flags say 0x%x", i, present,
					   sets);
		if ((sets & HVT_IV_WRITTEN) && (rc = decode_set(c, &ir->set[0], l, i, &unsorted[0], err)))
			return hvt_err_prefix(err, rc, "slot %u written: ", i);
		if ((sets & HVT_IV_ACCESSED) && (rc = decode_set(c, &ir->set[1], l, i, &unsorted[1], err)))
			return hvt_err_prefix(err, rc, "slot %u accessed: ", i);
	}
	if (c->left)
		return hvt_err_set(err, -EINVAL, "%zu bytes of junk after the last slot", c->left);
	/* slots in layout order need not ascend in guest-physical space; the runs must */
	for (int k = 0; k < 2; k++)
		if (unsorted[k])
			qsort(ir->set[k].v, ir->set[k].n, sizeof(*ir->set[k].v), cmp_run);
	return 0;
}

static int decode(struct hvt_iv_runs *ir, const struct hvt_layout *l, const uint8_t *payload, size_t len,
		  struct hvt_err *err)
{
	struct hvt_interval *iv = &ir->hdr;
	struct hvt_cursor c = {.p = payload, .left = len};
	struct hvt_channel_bytes *channels = iv->channels; /* kept across reads (ch_cap) */
	size_t fixed = 0;
	uint32_t nch = 0;
	int rc;

	rc = decode_fixed(iv, payload, len, &fixed, &nch, err);
	iv->channels = channels;
	if (rc)
		return rc;
	if (iv->generation != l->generation || iv->nslots != l->nslots)
		return hvt_err_set(err, -EINVAL,
				   "interval has %u slots of generation %llu, the layout %u of %llu",
				   iv->nslots, (unsigned long long)iv->generation, l->nslots,
				   (unsigned long long)l->generation);
	hvt_cursor_take(&c, fixed);
	rc = decode_channels(iv, &c, nch, &ir->ch_cap, err);
	if (!rc)
		rc = decode_slots(ir, l, &c, err);
	if (rc)
		return rc;
	if ((iv->flags & HVT_IV_WNA_COUNTED) && (rc = check_written_in_accessed(ir, l, err)))
		return rc;
	if ((iv->flags & HVT_IV_WNA_COUNTED) && iv->written_not_accessed > ir->set[0].pages)
		return hvt_err_set(
		    err, -EINVAL, "field written_not_accessed: %llu is more than the %llu written pages",
		    (unsigned long long)iv->written_not_accessed, (unsigned long long)ir->set[0].pages);
	return 0;
}

int hvt_iv_runs_decode(struct hvt_iv_runs *ir, const struct hvt_layout *l, const uint8_t *payload, size_t len,
		       struct hvt_err *err)
{
	int rc;

	ir->set[0].n = ir->set[1].n = 0;
	ir->set[0].pages = ir->set[1].pages = 0;
	ir->hdr.nchannels = 0;
	rc = decode(ir, l, payload, len, err);
	if (rc)
		ir->set[0].n = ir->set[1].n = 0;
	return rc;
}

int hvt_interval_from_runs(struct hvt_interval *iv, const struct hvt_iv_runs *ir, const struct hvt_layout *l,
			   struct hvt_err *err)
{
	struct hvt_pageset *sets[2];
	size_t begin, end;

	if (hvt_interval_init(iv, l, ir->hdr.flags))
		return hvt_err_set(err, -ENOMEM, "out of memory for the sets of %u slots", l->nslots);
	sets[0] = iv->written;
	sets[1] = iv->accessed;
	*iv = ir->hdr;
	iv->written = sets[0];
	iv->accessed = sets[1];
	iv->channels = NULL;
	if (iv->nchannels) {
		iv->channels = malloc(iv->nchannels * sizeof(*iv->channels));
		if (!iv->channels) {
			hvt_interval_fini(iv);
			return hvt_err_set(err, -ENOMEM, "out of memory");
		}
		memcpy(iv->channels, ir->hdr.channels, iv->nchannels * sizeof(*iv->channels));
	}
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; sets[k] && i < l->nslots; i++) {
			uint64_t first = hvt_memslot_first_gfn(l, &l->slots[i]);

			hvt_runs_range(&ir->set[k], first, first + sets[k][i].npages, &begin, &end);
			hvt_pageset_set_runs(&sets[k][i], &ir->set[k], begin, end, first);
		}
	return 0;
}

int hvt_interval_decode(struct hvt_interval *iv, const struct hvt_layout *l, const uint8_t *payload,
			size_t len, struct hvt_err *err)
{
	struct hvt_iv_runs ir = {0};
	int rc = hvt_iv_runs_decode(&ir, l, payload, len, err);

	memset(iv, 0, sizeof(*iv));
	if (!rc)
		rc = hvt_interval_from_runs(iv, &ir, l, err);
	hvt_iv_runs_fini(&ir);
	return rc;
}
