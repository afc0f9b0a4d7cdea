// SPDX-License-Identifier: MIT
/* struct hvt_interval: its lifetime, and its INTERVAL record payload (docs/formats.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "hvmtrace/trace.h"
#include "trace_format.h"

static void free_sets(struct hvt_pageset *sets, uint32_t n)
{
	if (!sets)
		return;
	for (uint32_t i = 0; i < n; i++)
		hvt_pageset_fini(&sets[i]);
	free(sets);
}

static int alloc_sets(struct hvt_pageset **out, const struct hvt_layout *l)
{
	struct hvt_pageset *sets = calloc(l->nslots ? l->nslots : 1, sizeof(*sets));

	if (!sets)
		return -ENOMEM;
	for (uint32_t i = 0; i < l->nslots; i++) {
		if (hvt_pageset_init(&sets[i], hvt_memslot_npages(l, &l->slots[i]))) {
			free_sets(sets, i);
			return -ENOMEM;
		}
	}
	*out = sets;
	return 0;
}

int hvt_interval_init(struct hvt_interval *iv, const struct hvt_layout *l, uint32_t flags)
{
	memset(iv, 0, sizeof(*iv));
	iv->generation = l->generation;
	iv->nslots = l->nslots;
	iv->flags = flags;
	if (((flags & HVT_IV_WRITTEN) && alloc_sets(&iv->written, l)) ||
	    ((flags & HVT_IV_ACCESSED) && alloc_sets(&iv->accessed, l))) {
		hvt_interval_fini(iv);
		return -ENOMEM;
	}
	return 0;
}

void hvt_interval_fini(struct hvt_interval *iv)
{
	free_sets(iv->written, iv->nslots);
	free_sets(iv->accessed, iv->nslots);
	free(iv->channels);
	memset(iv, 0, sizeof(*iv));
}

uint64_t hvt_interval_count_pages(const struct hvt_pageset *sets, uint32_t nslots)
{
	uint64_t total = 0;

	if (!sets)
		return 0;
	for (uint32_t i = 0; i < nslots; i++)
		total += hvt_pageset_count(&sets[i]);
	return total;
}

int hvt_interval_close_written_in_accessed(struct hvt_interval *iv)
{
	uint64_t total = 0, added;

	if ((iv->flags & (HVT_IV_WRITTEN | HVT_IV_ACCESSED)) != (HVT_IV_WRITTEN | HVT_IV_ACCESSED))
		return 0;
	for (uint32_t i = 0; i < iv->nslots; i++)
		if (iv->written[i].npages != iv->accessed[i].npages)
			return -EINVAL;
	for (uint32_t i = 0; i < iv->nslots; i++) {
		hvt_pageset_union_count(&iv->accessed[i], &iv->written[i], &added);
		total += added;
	}
	/* a second call (the sets grew after the first) adds to the count rather than losing it */
	iv->written_not_accessed = ((iv->flags & HVT_IV_WNA_COUNTED) ? iv->written_not_accessed : 0) + total;
	iv->flags |= HVT_IV_WNA_COUNTED;
	return 0;
}

/* ---- payload ---- */

static size_t fixed_size(uint32_t flags)
{
	return HVT_IV_FIXED_SIZE + ((flags & HVT_IV_WNA_COUNTED) ? HVT_IV_WNA_SIZE : 0) +
	       ((flags & HVT_IV_TRACER_CPU) ? HVT_IV_CPU_SIZE : 0);
}

/* Where tracer_cpu_ns lies in the fixed part. */
static size_t cpu_offset(uint32_t flags)
{
	return HVT_IV_FIXED_SIZE + ((flags & HVT_IV_WNA_COUNTED) ? HVT_IV_WNA_SIZE : 0);
}

/* CRoaring cannot hold page indexes of 2^32 and more: such slots always use zstd-runs. */
static enum hvt_codec codec_for(uint64_t npages)
{
	if (hvt_codec_default == HVT_CODEC_ROARING && npages > (uint64_t)1 << 32)
		return HVT_CODEC_ZSTD_RUNS;
	return hvt_codec_default;
}

static int encode_set(struct hvt_buf *b, const struct hvt_pageset *s, struct hvt_err *err)
{
	enum hvt_codec c = codec_for(s->npages);
	uint8_t *enc, *hdr, *dst;
	size_t len;
	int rc = hvt_pageset_encode(s, c, &enc, &len);

	if (rc)
		return hvt_err_set(err, rc, "encoding a page set (%s): %s", hvt_codec_name(c), strerror(-rc));
	if (len > HVT_REC_MAX_PAYLOAD) {
		free(enc);
		return hvt_err_set(err, -EFBIG, "an encoded page set of %zu bytes does not fit a record",
				   len);
	}
	hdr = hvt_buf_append(b, HVT_IV_SET_HDR_SIZE + len);
	if (!hdr) {
		free(enc);
		return hvt_err_set(err, -ENOMEM, "out of memory");
	}
	hvt_put_le32(hdr, (uint32_t)c);
	hvt_put_le32(hdr + 4, (uint32_t)len);
	hvt_put_le64(hdr + 8, hvt_pageset_count(s));
	dst = hdr + HVT_IV_SET_HDR_SIZE;
	memcpy(dst, enc, len);
	free(enc);
	return 0;
}

static int check_sets(const struct hvt_pageset *sets, const char *what, const struct hvt_layout *l,
		      struct hvt_err *err)
{
	if (!sets)
		return hvt_err_set(err, -EINVAL, "interval flags say %s sets are present, but there are none",
				   what);
	for (uint32_t i = 0; i < l->nslots; i++)
		if (sets[i].npages != hvt_memslot_npages(l, &l->slots[i]))
			return hvt_err_set(err, -EINVAL, "slot %u: %s set has %llu pages, the slot %llu", i,
					   what, (unsigned long long)sets[i].npages,
					   (unsigned long long)hvt_memslot_npages(l, &l->slots[i]));
	return 0;
}

/* What HVT_IV_WNA_COUNTED promises: both sets, and written ⊆ accessed in every slot. */
static int check_written_in_accessed(const struct hvt_interval *iv, struct hvt_err *err)
{
	if ((iv->flags & HVT_IV_SET_FLAGS) != HVT_IV_SET_FLAGS)
		return hvt_err_set(err, -EINVAL,
				   "interval flag WNA_COUNTED without both written and accessed sets");
	for (uint32_t i = 0; i < iv->nslots; i++)
		if (!hvt_pageset_is_subset(&iv->written[i], &iv->accessed[i]))
			return hvt_err_set(
			    err, -EINVAL, "slot %u: flag WNA_COUNTED, but a written page is not accessed", i);
	return 0;
}

int hvt_interval_encode(const struct hvt_interval *iv, const struct hvt_layout *l, struct hvt_buf *b,
			struct hvt_err *err)
{
	uint32_t sets = iv->flags & HVT_IV_SET_FLAGS;
	uint32_t nch = (iv->flags & HVT_IV_BANDWIDTH) ? iv->nchannels : 0;
	size_t fixed = fixed_size(iv->flags);
	uint8_t *p;
	int rc;

	if (iv->flags & ~HVT_IV_KNOWN_FLAGS)
		return hvt_err_set(err, -EINVAL, "unknown interval flags 0x%x",
				   iv->flags & ~HVT_IV_KNOWN_FLAGS);
	if (iv->generation != l->generation || iv->nslots != l->nslots)
		return hvt_err_set(err, -EINVAL,
				   "interval has %u slots of generation %llu, the layout %u of %llu",
				   iv->nslots, (unsigned long long)iv->generation, l->nslots,
				   (unsigned long long)l->generation);
	if ((sets & HVT_IV_WRITTEN) && (rc = check_sets(iv->written, "written", l, err)))
		return rc;
	if ((sets & HVT_IV_ACCESSED) && (rc = check_sets(iv->accessed, "accessed", l, err)))
		return rc;
	if (nch && !iv->channels)
		return hvt_err_set(err, -EINVAL, "interval has %u channels but no channel array", nch);
	if ((iv->flags & HVT_IV_BW_TOTAL) && !(iv->flags & HVT_IV_BANDWIDTH))
		return hvt_err_set(err, -EINVAL, "interval flag BW_TOTAL without BANDWIDTH");
	for (uint32_t i = 0; (iv->flags & HVT_IV_BW_TOTAL) && i < nch; i++)
		if (iv->channels[i].write_bytes)
			return hvt_err_set(
			    err, -EINVAL,
			    "channel %u: total-bytes interval with write bytes (totals go in read_bytes)", i);
	if ((iv->flags & HVT_IV_WNA_COUNTED) && (rc = check_written_in_accessed(iv, err)))
		return rc;
	if ((iv->flags & HVT_IV_TRACER_BUSY) && !(iv->flags & HVT_IV_TRACER_CPU))
		return hvt_err_set(err, -EINVAL, "interval flag TRACER_BUSY without TRACER_CPU");
	if ((iv->flags & HVT_IV_LAYOUT_REFUSED) && (sets || !(iv->flags & HVT_IV_FINAL)))
		return hvt_err_set(err, -EINVAL,
				   "interval flag LAYOUT_REFUSED on an interval with sets, or not final");
	if (nch > (HVT_REC_MAX_PAYLOAD - fixed) / HVT_IV_CHANNEL_SIZE)
		return hvt_err_set(err, -EFBIG, "%u channels do not fit a record", nch);

	p = hvt_buf_append(b, fixed + (size_t)nch * HVT_IV_CHANNEL_SIZE);
	if (!p)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	hvt_put_le64(p + 0, iv->seq);
	hvt_put_le64(p + 8, iv->t_start_ns);
	hvt_put_le64(p + 16, iv->t_end_ns);
	hvt_put_le64(p + 24, (uint64_t)iv->wall_start_ns);
	hvt_put_le64(p + 32, iv->harvest_ns);
	hvt_put_le64(p + 40, iv->generation);
	hvt_put_le64(p + 48, iv->lost_pages);
	hvt_put_le32(p + 56, iv->flags);
	hvt_put_le32(p + 60, iv->missed_deadlines);
	hvt_put_le32(p + 64, iv->nslots);
	hvt_put_le32(p + 68, nch);
	if (iv->flags & HVT_IV_WNA_COUNTED)
		hvt_put_le64(p + HVT_IV_FIXED_SIZE, iv->written_not_accessed);
	if (iv->flags & HVT_IV_TRACER_CPU)
		hvt_put_le64(p + cpu_offset(iv->flags), iv->tracer_cpu_ns);
	p += fixed;
	for (uint32_t i = 0; i < nch; i++, p += HVT_IV_CHANNEL_SIZE) {
		hvt_put_le32(p, iv->channels[i].channel);
		hvt_put_le32(p + 4, 0);
		hvt_put_le64(p + 8, iv->channels[i].read_bytes);
		hvt_put_le64(p + 16, iv->channels[i].write_bytes);
	}
	for (uint32_t i = 0; i < iv->nslots; i++) {
		p = hvt_buf_append(b, 4);
		if (!p)
			return hvt_err_set(err, -ENOMEM, "out of memory");
		hvt_put_le32(p, sets);
		if ((sets & HVT_IV_WRITTEN) && (rc = encode_set(b, &iv->written[i], err)))
			return hvt_err_prefix(err, rc, "slot %u written: ", i);
		if ((sets & HVT_IV_ACCESSED) && (rc = encode_set(b, &iv->accessed[i], err)))
			return hvt_err_prefix(err, rc, "slot %u accessed: ", i);
	}
	return 0;
}

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

static int decode_set(struct hvt_cursor *c, struct hvt_pageset *s, struct hvt_err *err)
{
	uint32_t codec = hvt_cursor_u32(c);
	uint32_t len = hvt_cursor_u32(c);
	uint64_t count = hvt_cursor_u64(c), got;
	const uint8_t *bytes = hvt_cursor_take(c, len);
	int rc;

	if (!bytes)
		return hvt_err_set(err, -EINVAL, "set runs past the end of the payload");
	rc = hvt_pageset_decode(s, (enum hvt_codec)codec, bytes, len, err);
	if (rc)
		return rc;
	got = hvt_pageset_count(s);
	if (got != count)
		return hvt_err_set(err, -EINVAL, "set holds %llu pages, its header says %llu",
				   (unsigned long long)got, (unsigned long long)count);
	return 0;
}

int hvt_interval_decode_channels(struct hvt_interval *iv, struct hvt_cursor *c, uint32_t nch, size_t *cap,
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

static int decode_body(struct hvt_interval *iv, struct hvt_cursor *c, uint32_t nch, struct hvt_err *err)
{
	uint32_t sets = iv->flags & HVT_IV_SET_FLAGS;
	size_t cap = 0; /* iv->channels is NULL: hvt_interval_init */
	int rc;

	rc = hvt_interval_decode_channels(iv, c, nch, &cap, err);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < iv->nslots; i++) {
		uint32_t present = hvt_cursor_u32(c);

		if (c->bad)
			return hvt_err_set(err, -EINVAL, "slot %u runs past the end of the payload", i);
		if (present != sets)
			return hvt_err_set(err, -EINVAL,
					   "slot %u holds sets 0x%x, the interval flags say 0x%x", i, present,
					   sets);
		if ((sets & HVT_IV_WRITTEN) && (rc = decode_set(c, &iv->written[i], err)))
			return hvt_err_prefix(err, rc, "slot %u written: ", i);
		if ((sets & HVT_IV_ACCESSED) && (rc = decode_set(c, &iv->accessed[i], err)))
			return hvt_err_prefix(err, rc, "slot %u accessed: ", i);
	}
	if (c->left)
		return hvt_err_set(err, -EINVAL, "%zu bytes of junk after the last slot", c->left);
	return 0;
}

/* The fixed part's fields that relate to each other (the sets' own checks are in decode_set). */
static int check_ranges(const struct hvt_interval *iv, struct hvt_err *err)
{
	uint64_t written;

	if (iv->t_end_ns < iv->t_start_ns)
		return hvt_err_set(err, -EINVAL, "field t_end_ns: %llu is before t_start_ns %llu",
				   (unsigned long long)iv->t_end_ns, (unsigned long long)iv->t_start_ns);
	if (iv->flags & HVT_IV_WNA_COUNTED) {
		written = hvt_interval_count_pages(iv->written, iv->nslots);
		if (iv->written_not_accessed > written)
			return hvt_err_set(
			    err, -EINVAL,
			    "field written_not_accessed: %llu is more than the %llu written pages",
			    (unsigned long long)iv->written_not_accessed, (unsigned long long)written);
	}
	return 0;
}

int hvt_interval_decode_fixed(struct hvt_interval *iv, const uint8_t *payload, size_t len, size_t *fixed,
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
	*fixed = fixed_size(flags);
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
		iv->tracer_cpu_ns = hvt_get_le64(payload + cpu_offset(flags));
	return 0;
}

int hvt_interval_decode(struct hvt_interval *iv, const struct hvt_layout *l, const uint8_t *payload,
			size_t len, struct hvt_err *err)
{
	struct hvt_cursor c = {.p = payload, .left = len};
	struct hvt_interval head;
	uint32_t nch;
	size_t fixed;
	int rc;

	memset(iv, 0, sizeof(*iv));
	rc = hvt_interval_decode_fixed(&head, payload, len, &fixed, &nch, err);
	if (rc)
		return rc;
	if (head.generation != l->generation || head.nslots != l->nslots)
		return hvt_err_set(err, -EINVAL,
				   "interval has %u slots of generation %llu, the layout %u of %llu",
				   head.nslots, (unsigned long long)head.generation, l->nslots,
				   (unsigned long long)l->generation);
	rc = hvt_interval_init(iv, l, head.flags);
	if (rc)
		return hvt_err_set(err, rc, "out of memory for the sets of %u slots", l->nslots);
	hvt_cursor_take(&c, fixed);
	iv->seq = head.seq;
	iv->t_start_ns = head.t_start_ns;
	iv->t_end_ns = head.t_end_ns;
	iv->wall_start_ns = head.wall_start_ns;
	iv->harvest_ns = head.harvest_ns;
	iv->lost_pages = head.lost_pages;
	iv->missed_deadlines = head.missed_deadlines;
	iv->written_not_accessed = head.written_not_accessed;
	iv->tracer_cpu_ns = head.tracer_cpu_ns;
	rc = decode_body(iv, &c, nch, err);
	if (!rc && (iv->flags & HVT_IV_WNA_COUNTED))
		rc = check_written_in_accessed(iv, err);
	if (!rc)
		rc = check_ranges(iv, err);
	if (rc)
		hvt_interval_fini(iv);
	return rc;
}
