// SPDX-License-Identifier: MIT
/*
 * Loading the analyses' input (analysis.h): one pass over the selected intervals, read as runs of GFNs.
 *
 * Each page keeps its count and the interval it was last touched in (analysis_sweep.c: four bytes per page
 * and kind, a run of pages is one sequential sweep). The sliding windows follow from the last touches: a
 * page touched in interval k counts in the windows ending at k .. k+w-1; if it was touched d < w intervals
 * before, the windows up to k+w-1-d already counted it, so it adds only the windows from k+w-d on. Those
 * spans go into a difference array over intervals, summed as the pass goes. Cost: O(pages touched),
 * whatever the window and however scattered the sets (a union of run lists grows with both).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_ahead.h"
#include "analysis_sweep.h"
#include "hvmtrace/analysis.h"
#include "hvmtrace/error.h"

struct loader {
	struct hvt_analysis *a;
	const struct hvt_iv_runs *ir; /* the interval being added */
	struct hvt_runs clipped[2];
	const struct hvt_runs *runs[2]; /* this interval's runs inside the range: ir.set or clipped */
	struct hvt_sweep sw;
	const struct hvt_sweep_tuning *tuning; /* NULL: the sweep's defaults */
	bool kind[2];                          /* the trace has sets of this kind */
	int64_t *wdiff[2];                     /* [interval]: change of the window's page count there */
	int64_t wsum[2];
	uint64_t max_n;
	uint64_t gfn_end; /* one past the range */
	const struct hvt_layout *marked;
	size_t cap;
};

/* The runs of src inside [lo, hi): src itself when all are, else dst (emptied first) holds them. */
static const struct hvt_runs *clip(struct hvt_runs *dst, const struct hvt_runs *src, uint64_t lo, uint64_t hi)
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

/* The guest's RAM span over every layout of the trace: [*first, *end). */
static void ram_span(struct hvt_trace_reader *r, uint64_t *first, uint64_t *end)
{
	const struct hvt_layout *l;

	*first = UINT64_MAX;
	*end = 0;
	for (uint64_t i = 0; (l = hvt_trace_layout_at(r, i)); i++)
		for (uint32_t s = 0; s < l->nslots; s++) {
			uint64_t f = hvt_memslot_first_gfn(l, &l->slots[s]);
			uint64_t e = f + hvt_memslot_npages(l, &l->slots[s]);

			*first = f < *first ? f : *first;
			*end = e > *end ? e : *end;
		}
}

static void mark_ram(struct loader *ld, const struct hvt_layout *l)
{
	struct hvt_analysis *a = ld->a;

	if (l == ld->marked)
		return;
	ld->marked = l;
	for (uint32_t s = 0; s < l->nslots; s++) {
		uint64_t f = hvt_memslot_first_gfn(l, &l->slots[s]);
		uint64_t e = f + hvt_memslot_npages(l, &l->slots[s]);

		f = f > a->gfn_first ? f : a->gfn_first;
		e = e < ld->gfn_end ? e : ld->gfn_end;
		if (f < e)
			hvt_pageset_set_range(&a->ram, f - a->gfn_first, e - f);
	}
}

static int grow(struct loader *ld)
{
	struct hvt_analysis *a = ld->a;
	size_t cap = ld->cap ? ld->cap * 2 : 256;
	struct hvt_iv_info *iv = realloc(a->iv, cap * sizeof(*iv));
	struct hvt_channel_bytes *ch;

	if (!iv)
		return -ENOMEM;
	a->iv = iv;
	if (a->nchannels) {
		ch = realloc(a->ch, cap * a->nchannels * sizeof(*ch));
		if (!ch)
			return -ENOMEM;
		a->ch = ch;
	}
	ld->cap = cap;
	return 0;
}

static void add_bandwidth(struct hvt_analysis *a, const struct hvt_interval *h, struct hvt_iv_info *ii)
{
	struct hvt_channel_bytes *ch = a->nchannels ? &a->ch[a->n * a->nchannels] : NULL;
	uint64_t rd = 0, wr = 0;

	for (uint32_t c = 0; c < a->nchannels; c++)
		ch[c] = (struct hvt_channel_bytes){.channel = c};
	ii->read_bytes = ii->write_bytes = HVT_NA;
	if (!(h->flags & HVT_IV_BANDWIDTH))
		return;
	for (uint32_t i = 0; i < h->nchannels; i++) {
		rd += h->channels[i].read_bytes;
		wr += h->channels[i].write_bytes;
		if (h->channels[i].channel < a->nchannels) {
			ch[h->channels[i].channel].read_bytes = h->channels[i].read_bytes;
			ch[h->channels[i].channel].write_bytes = h->channels[i].write_bytes;
		}
	}
	ii->read_bytes = rd;
	ii->write_bytes = (h->flags & HVT_IV_BW_TOTAL) ? HVT_NA : wr;
}

/* The window ending at interval k, from the gaps of its touches. */
static uint64_t close_window(struct loader *ld, int kind, uint64_t k)
{
	uint32_t w = ld->a->window;
	int64_t *wd = ld->wdiff[kind];
	uint64_t *gap = ld->sw.gap[kind];
	uint64_t seen = 0, pages = ld->runs[kind]->pages;

	/* the sweep's window is at most w: gaps beyond it are none */
	for (uint32_t d = 1; d < ld->sw.window; d++) {
		wd[k + w - d] += (int64_t)gap[d];
		seen += gap[d];
		gap[d] = 0;
	}
	wd[k] += (int64_t)(pages - seen);
	wd[k + w] -= (int64_t)pages;
	ld->wsum[kind] += wd[k];
	return (uint64_t)ld->wsum[kind];
}

static int add_interval(struct loader *ld, const struct hvt_layout *l)
{
	struct hvt_analysis *a = ld->a;
	const struct hvt_interval *h = &ld->ir->hdr;
	struct hvt_iv_info *ii;
	int rc;

	if (a->n == ld->cap && (rc = grow(ld)))
		return rc;
	ii = &a->iv[a->n];
	*ii = (struct hvt_iv_info){
	    .seq = h->seq,
	    .t_start_ns = h->t_start_ns - a->t0_ns,
	    .t_end_ns = h->t_end_ns - a->t0_ns,
	    .flags = h->flags,
	    .missed_deadlines = h->missed_deadlines,
	    .written = HVT_NA,
	    .accessed = HVT_NA,
	    .win_written = HVT_NA,
	    .win_accessed = HVT_NA,
	    .written_not_accessed = (h->flags & HVT_IV_WNA_COUNTED) ? h->written_not_accessed : HVT_NA,
	    .lost_pages = h->lost_pages,
	    .harvest_ns = h->harvest_ns,
	    .tracer_cpu_ns = (h->flags & HVT_IV_TRACER_CPU) ? h->tracer_cpu_ns : HVT_NA,
	};
	add_bandwidth(a, h, ii);
	mark_ram(ld, l);
	if ((rc = hvt_sweep_begin(&ld->sw)))
		return rc;
	for (int k = 0; k < 2; k++) {
		if (!(h->flags & (k ? HVT_IV_ACCESSED : HVT_IV_WRITTEN)) || !ld->kind[k])
			continue;
		ld->runs[k] = clip(&ld->clipped[k], &ld->ir->set[k], a->gfn_first, ld->gfn_end);
		if (!ld->runs[k])
			return -ENOMEM;
		hvt_sweep_touch(&ld->sw, k, ld->runs[k]->v, ld->runs[k]->n, a->gfn_first);
		*(k ? &ii->win_accessed : &ii->win_written) = close_window(ld, k, a->n);
		*(k ? &ii->accessed : &ii->written) = ld->runs[k]->pages;
		*(k ? &a->n_accessed : &a->n_written) += 1;
	}
	a->n++;
	return 0;
}

static int setup(struct loader *ld, struct hvt_trace_reader *r, const struct hvt_selection *sel,
		 const struct hvt_analysis_opts *o, struct hvt_err *err)
{
	struct hvt_analysis *a = ld->a;
	const struct hvt_trace_meta *m = hvt_trace_meta(r);
	struct hvt_trace_status st;
	uint64_t span_first, span_end;
	int rc;

	hvt_trace_get_status(r, &st);
	a->meta = m;
	a->page_size = m->page_size;
	a->complete = st.complete;
	a->readable = st.intervals;
	snprintf(a->problem, sizeof(a->problem), "%s",
		 st.complete     ? ""
		 : st.problem[0] ? st.problem
				 : "no index: the writer did not close it");
	a->truncated = !st.complete;
	if (!st.intervals)
		return hvt_err_set(err, -EINVAL, "the trace holds no intervals%s%s", st.complete ? "" : " (",
				   st.complete ? "" : "it is incomplete)");
	a->window = o && o->window ? o->window : HVT_DEFAULT_WINDOW;
	if (a->window > 65535)
		return hvt_err_set(err, -EINVAL, "a window of %u intervals is more than 65535", a->window);
	if (m->bandwidth_available)
		a->bw = m->bandwidth_source == HVT_BW_SOURCE_RESCTRL_TOTAL ? HVT_BW_TOTAL : HVT_BW_SPLIT;
	a->nchannels = m->bandwidth_available ? m->channels.n : 0;

	ram_span(r, &span_first, &span_end);
	a->gfn_first = span_first;
	ld->gfn_end = span_end;
	if (sel->gfns_given) {
		if (sel->gfn_last < span_first || sel->gfn_first >= span_end)
			return hvt_err_set(err, -EINVAL,
					   "--range 0x%" PRIx64 "-0x%" PRIx64
					   " lies outside the guest's RAM (GFNs 0x%" PRIx64 "-0x%" PRIx64 ")",
					   sel->gfn_first, sel->gfn_last, span_first, span_end - 1);
		a->gfn_first = sel->gfn_first > span_first ? sel->gfn_first : span_first;
		ld->gfn_end = sel->gfn_last < span_end - 1 ? sel->gfn_last + 1 : span_end;
	}
	a->npages = ld->gfn_end - a->gfn_first;
	if (hvt_pageset_init(&a->ram, a->npages))
		return hvt_err_set(err, -ENOMEM, "out of memory for %" PRIu64 " pages", a->npages);
	ld->max_n = st.intervals;
	ld->kind[0] = m->written_available;
	ld->kind[1] = m->accessed_available;
	/* a window longer than the trace is the trace: no page's gap reaches it */
	rc = hvt_sweep_init(&ld->sw, a->npages, ld->kind[0] | ld->kind[1] << 1,
			    a->window < ld->max_n ? a->window : (uint32_t)ld->max_n, ld->tuning);
	if (rc == -ENOMEM)
		return hvt_err_set(err, rc, "out of memory for %" PRIu64 " pages", a->npages);
	if (rc)
		return hvt_err_set(err, rc, "the page sweep asked for does not run on this CPU");
	for (int k = 0; k < 2; k++) {
		ld->wdiff[k] = calloc(ld->max_n + a->window + 1, sizeof(*ld->wdiff[k]));
		if (!ld->wdiff[k])
			return hvt_err_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

static int finish(struct loader *ld, uint64_t last_end_ns, uint64_t first_seq, uint64_t last_seq,
		  struct hvt_err *err)
{
	struct hvt_analysis *a = ld->a;

	if (!a->n)
		return hvt_err_set(
		    err, -EINVAL,
		    "--from/--to select no interval: the trace covers 0-%.3f s, intervals %" PRIu64
		    "-%" PRIu64,
		    last_end_ns / 1e9, first_seq, last_seq);
	a->ram_pages = hvt_pageset_count(&a->ram);
	if (!a->ram_pages)
		return hvt_err_set(err, -EINVAL,
				   "--range 0x%" PRIx64 "-0x%" PRIx64
				   " holds no guest RAM (it lies in a hole)",
				   a->gfn_first, a->gfn_first + a->npages - 1);
	for (int k = 0; k < 2; k++) {
		uint32_t *c;

		if (!ld->kind[k] || !(k ? a->n_accessed : a->n_written))
			continue;
		c = hvt_sweep_counts(&ld->sw, k);
		if (!c)
			return hvt_err_set(err, -ENOMEM, "out of memory for %" PRIu64 " pages", a->npages);
		*(k ? &a->accessed_count : &a->written_count) = c;
	}
	return 0;
}

int hvt_analysis_load_tuned(struct hvt_analysis *a, struct hvt_trace_reader *r,
			    const struct hvt_selection *sel, const struct hvt_analysis_opts *o,
			    const struct hvt_sweep_tuning *t, struct hvt_err *err)
{
	struct loader ld = {.a = a, .tuning = t};
	uint64_t total = hvt_trace_interval_count(r), last_end = 0, first_seq = 0, last_seq = 0,
		 bad_index = 0;
	bool damaged = false, started;
	struct hvt_ahead q;
	int rc;

	memset(a, 0, sizeof(*a));
	rc = setup(&ld, r, sel, o, err);
	if (!rc)
		rc = hvt_ahead_start(&q, r, sel, total, err);
	started = !rc;
	while (!rc) {
		const struct hvt_ahead_item *it = hvt_ahead_next(&q);

		if (it->kind == HVT_AHEAD_END)
			break;
		if (it->parsed) {
			if (it->index == 0) {
				a->t0_ns = it->ts_ns;
				first_seq = it->seq;
			}
			last_end = it->te_ns - a->t0_ns;
			last_seq = it->seq;
		}
		if (it->kind == HVT_AHEAD_PAST)
			break;
		if (it->kind == HVT_AHEAD_SKIPPED)
			continue;
		if (!a->n && it->parsed)
			a->first_index = it->index;
		if (it->kind == HVT_AHEAD_ERROR) {
			rc = it->rc;
			*err = it->err;
			damaged = rc == -EINVAL;
			bad_index = it->index;
			break;
		}
		ld.ir = &it->ir;
		if ((rc = add_interval(&ld, it->layout)))
			hvt_err_set(err, rc, "out of memory");
	}
	if (started)
		hvt_ahead_stop(&q);
	if (damaged) {
		/* a damaged record (or the file changed under us): analyse what came before, as for a torn
		 * trace, and say so */
		a->truncated = true;
		a->complete = false;
		a->damaged = true;
		a->readable = bad_index;
		snprintf(a->problem, sizeof(a->problem), "%.255s", err->msg);
		rc = 0;
	}
	if (!rc)
		rc = finish(&ld, last_end, first_seq, last_seq, err);
	hvt_sweep_fini(&ld.sw);
	for (int k = 0; k < 2; k++) {
		free(ld.clipped[k].v);
		free(ld.wdiff[k]);
	}
	if (rc)
		hvt_analysis_fini(a);
	return rc;
}

int hvt_analysis_load(struct hvt_analysis *a, struct hvt_trace_reader *r, const struct hvt_selection *sel,
		      const struct hvt_analysis_opts *o, struct hvt_err *err)
{
	return hvt_analysis_load_tuned(a, r, sel, o, NULL, err);
}

void hvt_analysis_fini(struct hvt_analysis *a)
{
	free(a->iv);
	free(a->ch);
	free(a->written_count);
	free(a->accessed_count);
	hvt_pageset_fini(&a->ram);
	memset(a, 0, sizeof(*a));
}

int hvt_analysis_walk(const struct hvt_analysis *a, struct hvt_trace_reader *r, unsigned kinds, hvt_run_fn fn,
		      void *ctx, struct hvt_err *err)
{
	struct hvt_iv_runs ir = {0};
	struct hvt_runs clipped = {0};
	int rc = 0;

	for (uint64_t k = 0; !rc && k < a->n; k++) {
		rc = hvt_trace_read_runs(r, a->first_index + k, &ir, err);
		for (int s = 0; !rc && s < 2; s++) {
			if (!(kinds & (1u << s)) || !(ir.hdr.flags & (s ? HVT_IV_ACCESSED : HVT_IV_WRITTEN)))
				continue;
			const struct hvt_runs *in =
			    clip(&clipped, &ir.set[s], a->gfn_first, a->gfn_first + a->npages);

			if (!in) {
				rc = hvt_err_set(err, -ENOMEM, "out of memory");
				break;
			}
			for (size_t i = 0; !rc && i < in->n; i++)
				rc = fn(ctx, k, (enum hvt_set_kind)s, in->v[i].first, in->v[i].count);
		}
	}
	hvt_iv_runs_fini(&ir);
	free(clipped.v);
	return rc;
}
