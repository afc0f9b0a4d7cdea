// SPDX-License-Identifier: MIT
/* hvmtrace export --raw (export_interop.h; the mapping is in docs/analyses.md). */
#include <endian.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export_interop.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/pageset.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/trace_runs.h"

bool export_slot_cut(const struct hvt_layout *l, uint32_t s, uint64_t lo, uint64_t hi, uint64_t *first,
		     uint64_t *npages)
{
	uint64_t f = hvt_memslot_first_gfn(l, &l->slots[s]), e = f + hvt_memslot_npages(l, &l->slots[s]);

	f = f > lo ? f : lo;
	e = e < hi ? e : hi;
	*first = f;
	*npages = e > f ? e - f : 0;
	return e > f;
}

/* ---- raw bitmaps ---- */

#define RAW_MAGIC "HVTRAW1\n"

void export_raw_header(FILE *f)
{
	fwrite(RAW_MAGIC, 1, 8, f);
}

static void put64(FILE *f, uint64_t v)
{
	v = htole64(v);
	fwrite(&v, 8, 1, f);
}

static void put32(FILE *f, uint32_t v)
{
	v = htole32(v);
	fwrite(&v, 4, 1, f);
}

/* The bitmap of one slot's pages [first, first + npages) from its runs, written a buffer of words at a
 * time: zero words between the runs, the runs' bits where they are. */
static void put_bitmap(FILE *f, const struct hvt_runs *runs, uint64_t first, uint64_t npages)
{
	enum { WORDS = 8192 };
	static uint64_t buf[WORDS];
	uint64_t nwords = hvt_pageset_nwords(npages), at = 0; /* words written */
	size_t k, end;

	hvt_runs_range(runs, first, first + npages, &k, &end);
	while (at < nwords) {
		uint64_t n = nwords - at < WORDS ? nwords - at : WORDS;
		uint64_t lo = at * 64, hi = (at + n) * 64; /* pages of this buffer, from the slot's start */

		memset(buf, 0, n * 8);
		/* runs that reach into [lo, hi); k stays at the first that may reach the next buffer */
		for (size_t j = k; j < end && runs->v[j].first - first < hi; j++) {
			uint64_t a = runs->v[j].first - first, b = a + runs->v[j].count;

			a = a < lo ? lo : a;
			b = b > hi ? hi : b;
			for (uint64_t p = a; p < b;) {
				uint64_t bit = p % 64, cnt = b - p < 64 - bit ? b - p : 64 - bit;

				buf[p / 64 - at] |=
				    (cnt == 64 ? ~(uint64_t)0 : (((uint64_t)1 << cnt) - 1) << bit);
				p += cnt;
			}
			if (runs->v[j].first - first + runs->v[j].count <= hi)
				k = j + 1;
		}
		for (uint64_t w = 0; w < n; w++)
			buf[w] = htole64(buf[w]);
		fwrite(buf, 8, n, f);
		at += n;
	}
}

/* Per interval: seq, t_start_ns, t_end_ns (u64), kinds (u32: 1 written, 2 accessed), nslots (u32), per slot
 * first_gfn and npages (u64), then per kind present (written first) per slot the bitmap: ceil(npages/64)
 * little-endian u64 words, bit i of the slot's bitmap = page i, as KVM_GET_DIRTY_LOG fills it. */
void export_raw_interval(FILE *f, const struct hvt_iv_runs *ir, const struct hvt_layout *l, uint64_t lo,
			 uint64_t hi)
{
	const struct hvt_interval *iv = &ir->hdr;
	uint32_t kinds = iv->flags & (HVT_IV_WRITTEN | HVT_IV_ACCESSED), n = 0;
	uint64_t first, npages;

	put64(f, iv->seq);
	put64(f, iv->t_start_ns);
	put64(f, iv->t_end_ns);
	put32(f, kinds);
	for (uint32_t s = 0; s < l->nslots; s++)
		n += export_slot_cut(l, s, lo, hi, &first, &npages);
	put32(f, n);
	for (uint32_t s = 0; s < l->nslots; s++)
		if (export_slot_cut(l, s, lo, hi, &first, &npages)) {
			put64(f, first);
			put64(f, npages);
		}
	for (int k = 0; k < 2; k++) {
		if (!(kinds & (k ? HVT_IV_ACCESSED : HVT_IV_WRITTEN)))
			continue;
		for (uint32_t s = 0; s < l->nslots; s++)
			if (export_slot_cut(l, s, lo, hi, &first, &npages))
				put_bitmap(f, &ir->set[k], first, npages);
	}
}
