// SPDX-License-Identifier: MIT
/*
 * The energy what-if's bytes (energy.h): each selected interval's read and write bytes, measured or from
 * the page model, and the part of them that falls on write-heavy pages, apportioned by those pages' share
 * of the interval's written (accessed) pages. The joules are bytes x energy per byte plus standby power
 * x capacity x time.
 */
#include <errno.h>
#include <stdlib.h>

#include "hvmtrace/analysis.h"
#include "hvmtrace/energy.h"
#include "hvmtrace/error.h"

struct heavy_walk {
	const struct hvt_analysis *a;
	uint64_t (*heavy)[HVT_COUNT_CHUNK / 64]; /* [chunk]: bit j, page first + j is write-heavy RAM */
	uint64_t lo, hi; /* the pages [lo, hi) of the range hold every write-heavy page; lo = hi: none */
	uint64_t *hits;  /* [k * 2 + kind]: write-heavy pages among interval k's set pages */
	uint64_t at;     /* the chunk the last run began in */
};

/* The write-heavy RAM pages, as a bitmap per touched chunk (an untouched page is not write-heavy). */
static int mark_heavy(struct heavy_walk *hw, const struct hvt_class_thresholds *t)
{
	const struct hvt_analysis *a = hw->a;

	if (!(hw->heavy = calloc(a->nchunks ? a->nchunks : 1, sizeof(*hw->heavy))))
		return -ENOMEM;
	for (uint64_t c = 0; c < a->nchunks; c++) {
		const struct hvt_count_chunk *ch = &a->chunks[c];
		bool any = false;

		for (uint32_t j = 0; j < HVT_COUNT_CHUNK; j++)
			if (hvt_class_of(a, t, ch->count[0] ? ch->count[0][j] : 0,
					 ch->count[1] ? ch->count[1][j] : 0) == HVT_CLASS_WRITE_HEAVY &&
			    hvt_page_is_ram(a, ch->first + j)) {
				hw->heavy[c][j / 64] |= 1ull << (j % 64);
				any = true;
			}
		if (any) { /* chunks ascend: the first such chunk starts [lo, hi), the last ends it */
			uint64_t end = ch->first + HVT_COUNT_CHUNK;

			hw->lo = hw->lo < hw->hi ? hw->lo : ch->first;
			hw->hi = end < a->npages ? end : a->npages;
		}
	}
	return 0;
}

/* Bits of the 512-bit map m in [lo, hi). */
static uint64_t count_bits(const uint64_t *m, uint64_t lo, uint64_t hi)
{
	uint64_t n = 0;

	while (lo < hi) {
		uint64_t w = lo / 64, b = lo % 64, e = hi - w * 64 < 64 ? hi - w * 64 : 64;
		uint64_t mask = (e == 64 ? ~0ull : (1ull << e) - 1) & ~((1ull << b) - 1);

		n += (uint64_t)__builtin_popcountll(m[w] & mask);
		lo = w * 64 + e;
	}
	return n;
}

/* Write-heavy pages in [i, end) of the range: only in the touched chunks. */
static uint64_t count_heavy(struct heavy_walk *hw, uint64_t i, uint64_t end)
{
	const struct hvt_analysis *a = hw->a;
	uint64_t n = 0, lo = hw->at, hi = a->nchunks;

	/* runs come ascending within an interval's kind: on from the last run's chunk, or a search when the
	 * next kind or interval starts lower */
	if (lo < a->nchunks && a->chunks[lo].first <= i)
		while (lo < a->nchunks && a->chunks[lo].first + HVT_COUNT_CHUNK <= i)
			lo++;
	else
		for (lo = 0; lo < hi;) { /* the first chunk that ends after i */
			uint64_t mid = lo + (hi - lo) / 2;

			if (a->chunks[mid].first + HVT_COUNT_CHUNK <= i)
				lo = mid + 1;
			else
				hi = mid;
		}
	hw->at = lo;
	for (uint64_t c = lo; c < a->nchunks && a->chunks[c].first < end; c++) {
		uint64_t first = a->chunks[c].first;
		uint64_t from = first > i ? first : i;
		uint64_t to = first + HVT_COUNT_CHUNK < end ? first + HVT_COUNT_CHUNK : end;

		n += count_bits(hw->heavy[c], from - first, to - first);
	}
	return n;
}

static int on_run(void *ctx, uint64_t k, enum hvt_set_kind kind, uint64_t first_gfn, uint64_t count)
{
	struct heavy_walk *hw = ctx;
	uint64_t i = first_gfn - hw->a->gfn_first;

	hw->hits[k * 2 + kind] += count_heavy(hw, i, i + count);
	return 0;
}

/* share of x falling on the write-heavy pages: hit of n pages, or by capacity when n is 0 or unknown */
static double share(double x, uint64_t hit, uint64_t n, const struct hvt_energy_bytes *b)
{
	if (n && n != HVT_NA)
		return x * (double)hit / (double)n;
	return b->ram_pages ? x * (double)b->heavy_pages / (double)b->ram_pages : 0;
}

int hvt_energy_bytes(const struct hvt_analysis *a, struct hvt_trace_reader *r,
		     const struct hvt_class_thresholds *t, const struct hvt_energy_model *m,
		     struct hvt_energy_bytes *out, struct hvt_err *err)
{
	struct heavy_walk hw = {.a = a};
	bool accessed = a->n_accessed;
	uint64_t per_class[HVT_CLASS_COUNT];
	int rc;

	*out = (struct hvt_energy_bytes){
	    .source = a->bw == HVT_BW_SPLIT   ? HVT_BYTES_MEASURED
		      : a->bw == HVT_BW_TOTAL ? HVT_BYTES_TOTAL_SPLIT
					      : HVT_BYTES_PAGE_MODEL,
	    .reads_known = a->bw != HVT_BW_NONE || accessed,
	    .ram_pages = a->ram_pages,
	    .seconds = a->n ? (double)(a->iv[a->n - 1].t_end_ns - a->iv[0].t_start_ns) / 1e9 : 0,
	};
	if (!(hw.hits = calloc(a->n * 2 + 1, sizeof(*hw.hits))) || mark_heavy(&hw, t)) {
		free(hw.hits);
		free(hw.heavy);
		return hvt_err_set(err, -ENOMEM, "out of memory");
	}
	hvt_class_pages(a, t, per_class);
	out->heavy_pages = per_class[HVT_CLASS_WRITE_HEAVY];
	/* only the runs that can meet a write-heavy page: none (all hits 0) when there is none */
	rc = hw.lo < hw.hi
		 ? hvt_analysis_walk_pages(a, r,
					   (1u << HVT_SET_WRITTEN) | (accessed ? 1u << HVT_SET_ACCESSED : 0),
					   hw.lo, hw.hi, on_run, &hw, err)
		 : 0;
	for (uint64_t k = 0; !rc && k < a->n; k++) {
		const struct hvt_iv_info *ii = &a->iv[k];
		uint64_t wp = ii->written != HVT_NA ? ii->written : 0;
		double rd, wr;

		if (ii->read_bytes != HVT_NA && ii->write_bytes != HVT_NA) {
			rd = (double)ii->read_bytes;
			wr = (double)ii->write_bytes;
		} else if (ii->read_bytes != HVT_NA) { /* a total: writes from the page model, capped */
			wr = (double)wp * m->bytes_per_written_page;
			wr = wr < (double)ii->read_bytes ? wr : (double)ii->read_bytes;
			rd = (double)ii->read_bytes - wr;
		} else {
			wr = (double)wp * m->bytes_per_written_page;
			rd = accessed && ii->accessed != HVT_NA
				 ? (double)ii->accessed * m->bytes_per_accessed_page
				 : 0;
			out->modelled_intervals++;
		}
		out->read += rd;
		out->write += wr;
		out->heavy_write += share(wr, hw.hits[k * 2 + HVT_SET_WRITTEN], ii->written, out);
		out->heavy_read += accessed ? share(rd, hw.hits[k * 2 + HVT_SET_ACCESSED], ii->accessed, out)
					    : share(rd, hw.hits[k * 2 + HVT_SET_WRITTEN], ii->written, out);
	}
	free(hw.hits);
	free(hw.heavy);
	return rc;
}

void hvt_energy_of(const struct hvt_tech_energy *e, double read_bytes, double write_bytes, bool reads_known,
		   double capacity_bytes, double seconds, struct hvt_energy_joules *out)
{
	out->read = reads_known ? read_bytes * e->read_pj_per_byte * 1e-12 : 0;
	out->write = write_bytes * e->write_pj_per_byte * 1e-12;
	out->standby = e->standby_mw_per_gib * 1e-3 * capacity_bytes / (1024.0 * 1024 * 1024) * seconds;
	out->total = out->read + out->write + out->standby;
}
