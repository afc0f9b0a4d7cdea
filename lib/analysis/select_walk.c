// SPDX-License-Identifier: MIT
/*
 * The one walk over a selection (select.h): the GFN span a selection takes of a trace, the selected
 * intervals read ahead on a thread (select_ahead.c) with their runs cut to it, and what to say when it took
 * none. report's loader, the pictures (trace_series.c) and export all read a trace through it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "select_ahead.h"

const struct hvt_runs *hvt_runs_clip(struct hvt_runs *dst, const struct hvt_runs *src, uint64_t lo,
				     uint64_t hi)
{
	size_t i = 0, top = src->n;

	if (!src->n || (src->v[0].first >= lo && src->v[src->n - 1].first + src->v[src->n - 1].count <= hi))
		return src;
	dst->n = 0;
	dst->pages = 0;
	while (i < top) { /* first run ending after lo */
		size_t mid = i + (top - i) / 2;

		if (src->v[mid].first + src->v[mid].count <= lo)
			i = mid + 1;
		else
			top = mid;
	}
	for (; i < src->n && src->v[i].first < hi; i++) {
		uint64_t f = src->v[i].first > lo ? src->v[i].first : lo;
		uint64_t e = src->v[i].first + src->v[i].count < hi ? src->v[i].first + src->v[i].count : hi;

		if (hvt_runs_push(dst, f, e - f))
			return NULL;
		dst->pages += e - f;
	}
	return dst;
}

/* The span of the guest's RAM over every layout of the trace, and whether [first, end) holds any of it. */
static bool ram_span(struct hvt_trace_reader *r, uint64_t first, uint64_t end, uint64_t *span_first,
		     uint64_t *span_end)
{
	const struct hvt_layout *l;
	bool ram = false;

	*span_first = UINT64_MAX;
	*span_end = 0;
	for (uint64_t i = 0; (l = hvt_trace_layout_at(r, i)); i++)
		for (uint32_t s = 0; s < l->nslots; s++) {
			uint64_t f = hvt_memslot_first_gfn(l, &l->slots[s]);
			uint64_t e = f + hvt_memslot_npages(l, &l->slots[s]);

			*span_first = f < *span_first ? f : *span_first;
			*span_end = e > *span_end ? e : *span_end;
			ram |= f < end && e > first && f < e;
		}
	return ram;
}

int hvt_select_span(struct hvt_trace_reader *r, const struct hvt_selection *sel, uint64_t *first,
		    uint64_t *end, struct hvt_err *err)
{
	uint64_t span_first, span_end, lo = 0, hi = UINT64_MAX;
	bool ram;

	if (hvt_select_check(sel, err))
		return -EINVAL;
	if (sel->gfns_given) {
		lo = sel->gfn_first;
		hi = sel->gfn_last == UINT64_MAX ? UINT64_MAX : sel->gfn_last + 1;
	}
	ram = ram_span(r, lo, hi, &span_first, &span_end);
	*first = span_first;
	*end = span_end;
	if (!sel->gfns_given)
		return 0;
	if (sel->gfn_last < span_first || sel->gfn_first >= span_end)
		return hvt_err_set(err, -EINVAL,
				   "--range 0x%" PRIx64 "-0x%" PRIx64
				   " lies outside the guest's RAM (GFNs 0x%" PRIx64 "-0x%" PRIx64 ")",
				   sel->gfn_first, sel->gfn_last, span_first, span_end - 1);
	*first = lo > span_first ? lo : span_first;
	*end = hi < span_end ? hi : span_end;
	if (!ram)
		return hvt_err_set(err, -EINVAL,
				   "--range 0x%" PRIx64 "-0x%" PRIx64
				   " holds no guest RAM (it lies in a hole)",
				   *first, *end - 1);
	return 0;
}

/* A walk that selected nothing stopped at the first interval past the selection: its message must quote
 * what the whole trace covers, so the last readable interval's seq and end are read from its header. */
static void cover_to_end(struct hvt_trace_reader *r, struct hvt_walk_end *out)
{
	uint64_t n = hvt_trace_interval_count(r), seq, ts, te;

	if (n && !hvt_ahead_read_head(r, n - 1, &seq, &ts, &te)) {
		out->last_seq = seq;
		out->last_end_ns = te - out->t0_ns;
	}
}

int hvt_select_walk(struct hvt_trace_reader *r, const struct hvt_selection *sel, uint64_t first, uint64_t end,
		    hvt_walk_fn fn, void *ctx, struct hvt_walk_end *out, struct hvt_err *err)
{
	return hvt_select_walk_early(r, sel, first, end, NULL, NULL, fn, ctx, out, err);
}

int hvt_select_walk_early(struct hvt_trace_reader *r, const struct hvt_selection *sel, uint64_t first,
			  uint64_t end, hvt_ahead_early_fn early, void *early_ctx, hvt_walk_fn fn, void *ctx,
			  struct hvt_walk_end *out, struct hvt_err *err)
{
	struct hvt_ahead q;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = hvt_ahead_start(&q, r, sel, first, end, fn != NULL, hvt_trace_interval_count(r),
			     fn ? early : NULL, early_ctx, err);
	while (!rc) {
		const struct hvt_ahead_item *it = hvt_ahead_next(&q);

		if (it->kind == HVT_AHEAD_END)
			break;
		if (it->parsed) {
			if (it->index == 0) {
				out->t0_ns = it->ts_ns;
				out->first_seq = it->seq;
			}
			out->last_end_ns = it->te_ns - out->t0_ns;
			out->last_seq = it->seq;
		}
		if (it->kind == HVT_AHEAD_PAST)
			break;
		if (it->kind == HVT_AHEAD_SKIPPED)
			continue;
		if (it->kind == HVT_AHEAD_ERROR) {
			out->damaged = true;
			out->bad_index = it->index;
			out->bad_rc = it->rc;
			out->why = it->err;
			break;
		}
		if (!fn) {
			out->selected++;
			continue;
		}
		rc = fn(ctx, &(struct hvt_walk_iv){.index = it->index,
						   .k = out->selected++,
						   .t0_ns = out->t0_ns,
						   .ir = &it->view,
						   .layout = it->layout});
	}
	if (q.started)
		hvt_ahead_stop(&q);
	if (!rc && !out->selected && !out->damaged)
		cover_to_end(r, out);
	return rc;
}

int hvt_select_none(const struct hvt_selection *sel, const struct hvt_walk_end *end, struct hvt_err *err)
{
	if (sel->from.kind == HVT_POINT_NONE && sel->to.kind == HVT_POINT_NONE)
		return hvt_err_set(err, -EINVAL, "no interval of the trace could be read");
	return hvt_err_set(err, -EINVAL,
			   "--from/--to select no interval: the trace covers 0-%.3f s, intervals %" PRIu64
			   "-%" PRIu64,
			   end->last_end_ns / 1e9, end->first_seq, end->last_seq);
}
