// SPDX-License-Identifier: MIT
/* struct hvt_interval: its lifetime, and its encoding as an INTERVAL record payload (docs/formats.md; the
 * decoder is trace_interval_decode.c). */
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

/*
 * The set, encoded straight into the room reserved in b (hvt_interval_encode): nothing is copied. The codec
 * is the writer's choice for this set (hvt_pageset_encode_auto_into).
 */
static int encode_set(struct hvt_buf *b, const struct hvt_pageset *s, struct hvt_err *err)
{
	enum hvt_codec c = hvt_codec_default;
	size_t room = b->cap - b->len, len;
	uint8_t *hdr = b->p + b->len;
	int rc;

	rc = room < HVT_IV_SET_HDR_SIZE ? -ENOSPC
					: hvt_pageset_encode_auto_into(s, hdr + HVT_IV_SET_HDR_SIZE,
								       room - HVT_IV_SET_HDR_SIZE, &len, &c);
	if (rc == -ENOSPC || (!rc && len > HVT_REC_MAX_PAYLOAD))
		return hvt_err_set(err, -EFBIG, "an encoded page set does not fit a record");
	if (rc)
		return hvt_err_set(err, rc, "encoding a page set (%s): %s", hvt_codec_name(c), strerror(-rc));
	hvt_put_le32(hdr, (uint32_t)c);
	hvt_put_le32(hdr + 4, (uint32_t)len);
	hvt_put_le64(hdr + 8, hvt_pageset_count(s));
	b->len += HVT_IV_SET_HDR_SIZE + len;
	return 0;
}

size_t hvt_interval_bound(const struct hvt_interval *iv)
{
	uint32_t nch = (iv->flags & HVT_IV_BANDWIDTH) ? iv->nchannels : 0;
	uint64_t n = hvt_iv_fixed_size(iv->flags) + (uint64_t)nch * HVT_IV_CHANNEL_SIZE + HVT_REC_ALIGN;
	/* a set the flags name but iv lacks counts nothing: hvt_interval_encode refuses it */
	const struct hvt_pageset *kinds[] = {(iv->flags & HVT_IV_WRITTEN) ? iv->written : NULL,
					     (iv->flags & HVT_IV_ACCESSED) ? iv->accessed : NULL};

	for (uint32_t i = 0; i < iv->nslots && n <= HVT_REC_MAX_PAYLOAD; i++) {
		n += 4;
		for (unsigned k = 0; k < 2; k++)
			if (kinds[k])
				n += HVT_IV_SET_HDR_SIZE + hvt_pageset_encode_auto_bound(kinds[k][i].npages);
	}
	return n < HVT_REC_MAX_PAYLOAD + HVT_REC_ALIGN ? (size_t)n : HVT_REC_MAX_PAYLOAD + HVT_REC_ALIGN;
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
	size_t fixed = hvt_iv_fixed_size(iv->flags);
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

	/* Reserved once, at the worst case: the sets are encoded into it, with no copy that grows (record's
	 * memory budget counts this size, hvmtrace/record/mem_budget.c). */
	if (hvt_buf_reserve(b, hvt_interval_bound(iv)))
		return hvt_err_set(err, -ENOMEM, "out of memory");
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
		hvt_put_le64(p + hvt_iv_cpu_offset(iv->flags), iv->tracer_cpu_ns);
	if (iv->flags & HVT_IV_RING_FULL)
		hvt_put_le64(p + hvt_iv_ring_offset(iv->flags), iv->ring_full);
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
