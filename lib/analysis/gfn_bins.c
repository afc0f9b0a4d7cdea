// SPDX-License-Identifier: MIT
/* The pictures' address axis: segments and bins of GFNs (gfn_bins.h). */
#include <string.h>

#include "hvmtrace/gfn_bins.h"

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* GFNs [a, e) drawn to scale: the last segment grows when they follow it. */
static void add_scaled(struct hvt_gfn_bins *b, uint64_t a, uint64_t e)
{
	struct hvt_bin_seg *last = b->nseg ? &b->seg[b->nseg - 1] : NULL;

	if (last && !last->gap && last->end == a)
		last->end = e;
	else
		b->seg[b->nseg++] = (struct hvt_bin_seg){.first = a, .end = e};
	b->scale_pages += e - a;
}

/* A hole without RAM [a, e): a gap when at least 1/16 of the RAM wide and there is room for it and a
 * segment after it; else to scale. */
static void add_hole(struct hvt_gfn_bins *b, uint64_t a, uint64_t e, uint64_t ram)
{
	if ((e - a) * 16 < ram || b->nseg + 2 > HVT_BINS_MAX_SEGS) {
		add_scaled(b, a, e);
		return;
	}
	b->seg[b->nseg++] = (struct hvt_bin_seg){.first = a, .end = e, .gap = true};
	b->ngaps++;
}

void hvt_gfn_bins_segment(struct hvt_gfn_bins *b, const struct series_slot *slots, uint32_t nslots,
			  uint64_t first, uint64_t end)
{
	uint64_t ram = 0, cur = first;

	memset(b, 0, sizeof(*b));
	for (uint32_t i = 0; i < nslots; i++)
		ram += clamp(slots[i].end, first, end) - clamp(slots[i].first, first, end);
	for (uint32_t i = 0; i <= nslots; i++) {
		uint64_t a = i < nslots ? clamp(slots[i].first, first, end) : end;
		uint64_t e = i < nslots ? clamp(slots[i].end, first, end) : end;

		if (a > cur)
			add_hole(b, cur, a, ram);
		if (e > a)
			add_scaled(b, a, e);
		cur = e > cur ? e : cur;
	}
}

void hvt_gfn_bins_size(struct hvt_gfn_bins *b, uint64_t pages_per_bin, uint64_t gap_bins)
{
	b->pages_per_bin = pages_per_bin;
	b->nbins = 0;
	for (unsigned i = 0; i < b->nseg; i++) {
		struct hvt_bin_seg *g = &b->seg[i];

		g->bin0 = b->nbins;
		g->nbins = g->gap ? gap_bins : (g->end - g->first + pages_per_bin - 1) / pages_per_bin;
		b->nbins += g->nbins;
	}
}

const struct hvt_bin_seg *hvt_gfn_bins_seg_of(const struct hvt_gfn_bins *b, uint64_t gfn)
{
	for (unsigned i = 0; i < b->nseg; i++)
		if (gfn >= b->seg[i].first && gfn < b->seg[i].end)
			return &b->seg[i];
	return NULL;
}

void hvt_gfn_bins_add(const struct hvt_gfn_bins *b, const struct hvt_runs *runs, uint32_t *bins)
{
	const uint64_t ppb = b->pages_per_bin;

	for (size_t k = 0; k < runs->n; k++) {
		uint64_t gfn = runs->v[k].first, stop = gfn + runs->v[k].count;
		const struct hvt_bin_seg *g;

		while (gfn < stop && (g = hvt_gfn_bins_seg_of(b, gfn))) {
			uint64_t seg_stop = stop < g->end ? stop : g->end;

			while (!g->gap && gfn < seg_stop) {
				uint64_t off = gfn - g->first, n = ppb - off % ppb;

				n = n < seg_stop - gfn ? n : seg_stop - gfn;
				bins[g->bin0 + off / ppb] += (uint32_t)n;
				gfn += n;
			}
			gfn = seg_stop; /* past a gap: no RAM there in any layout */
		}
	}
}

void hvt_gfn_bins_ram(const struct hvt_gfn_bins *b, const struct series_slot *slots, uint32_t nslots,
		      uint64_t *ram)
{
	for (unsigned i = 0; i < b->nseg; i++)
		for (uint64_t r = 0; r < b->seg[i].nbins; r++) {
			uint64_t lo = b->seg[i].first + r * b->pages_per_bin, hi = lo + b->pages_per_bin;

			hi = hi < b->seg[i].end ? hi : b->seg[i].end;
			ram[b->seg[i].bin0 + r] = 0;
			for (uint32_t k = 0; !b->seg[i].gap && k < nslots; k++) {
				uint64_t x = slots[k].first > lo ? slots[k].first : lo;
				uint64_t y = slots[k].end < hi ? slots[k].end : hi;

				ram[b->seg[i].bin0 + r] += y > x ? y - x : 0;
			}
		}
}
