// SPDX-License-Identifier: MIT
/*
 * The per-page counts as the analyses read them (analysis.h): single pages by a search among the chunks,
 * every RAM page by spans whose number follows the RAM runs and the touched chunks, not the range's size.
 */
#include "hvmtrace/analysis.h"

/* The first chunk that ends after page i (a->nchunks: none). */
static uint64_t chunk_after(const struct hvt_analysis *a, uint64_t i)
{
	uint64_t lo = 0, hi = a->nchunks;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (a->chunks[mid].first + HVT_COUNT_CHUNK <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint32_t hvt_page_count(const struct hvt_analysis *a, enum hvt_set_kind kind, uint64_t i)
{
	uint64_t c = chunk_after(a, i);

	if (c == a->nchunks || a->chunks[c].first > i || !a->chunks[c].count[kind])
		return 0;
	return a->chunks[c].count[kind][i - a->chunks[c].first];
}

bool hvt_page_is_ram(const struct hvt_analysis *a, uint64_t i)
{
	size_t lo = 0, hi = a->ram.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->ram.v[mid].first + a->ram.v[mid].count <= i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->ram.n && a->ram.v[lo].first <= i;
}

int hvt_page_spans(const struct hvt_analysis *a, hvt_span_fn fn, void *ctx)
{
	uint64_t c = 0;
	int rc;

	for (size_t r = 0; r < a->ram.n; r++) {
		uint64_t i = a->ram.v[r].first, end = i + a->ram.v[r].count;

		while (i < end) {
			struct hvt_page_span s = {.first = i};

			while (c < a->nchunks && a->chunks[c].first + HVT_COUNT_CHUNK <= i)
				c++;
			if (c < a->nchunks && a->chunks[c].first <= i) {
				const struct hvt_count_chunk *ch = &a->chunks[c];
				uint64_t stop =
				    ch->first + HVT_COUNT_CHUNK < end ? ch->first + HVT_COUNT_CHUNK : end;

				s.count = stop - i;
				for (int k = 0; k < 2; k++)
					s.count_of[k] = ch->count[k] ? ch->count[k] + (i - ch->first) : NULL;
			} else {
				uint64_t stop =
				    c < a->nchunks && a->chunks[c].first < end ? a->chunks[c].first : end;

				s.count = stop - i;
			}
			if ((rc = fn(ctx, &s)))
				return rc;
			i += s.count;
		}
	}
	return 0;
}
