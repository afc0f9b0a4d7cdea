// SPDX-License-Identifier: MIT
/*
 * Loading the analyses' input (analysis.h): one pass over the selected intervals, read as runs of GFNs.
 * Per-page counts go through difference arrays (+1 at a run's start, -1 past its end, summed once at the
 * end), so a pass costs O(runs), not O(pages), per interval.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "hvmtrace/analysis.h"
#include "hvmtrace/error.h"
#include "trace_format.h"

struct loader {
	struct hvt_analysis *a;
	struct hvt_iv_runs ir;
	struct hvt_runs clipped[2];
	struct hvt_window win[2];
	uint64_t gfn_end; /* one past the range */
	const struct hvt_layout *marked;
	size_t cap;
};

/* The runs of src inside [a->gfn_first, gfn_end), appended to dst (emptied first). */
static int clip(struct hvt_runs *dst, const struct hvt_runs *src, uint64_t lo, uint64_t hi)
{
	size_t i = 0, top = src->n;

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
			return -ENOMEM;
		dst->pages += e - f;
	}
	return 0;
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

static int selected(const struct hvt_selection *sel, uint64_t seq, uint64_t t0, uint64_t ts, uint64_t te,
		    bool *past)
{
	*past = false;
	if (sel->to.kind == HVT_POINT_INTERVAL && seq > sel->to.value)
		*past = true;
	if (sel->to.kind == HVT_POINT_TIME && ts - t0 >= sel->to.value)
		*past = true;
	if (*past)
		return 0;
	if (sel->from.kind == HVT_POINT_INTERVAL && seq < sel->from.value)
		return 0;
	if (sel->from.kind == HVT_POINT_TIME && te - t0 <= sel->from.value)
		return 0;
	return 1;
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

static int add_interval(struct loader *ld, const struct hvt_layout *l)
{
	struct hvt_analysis *a = ld->a;
	const struct hvt_interval *h = &ld->ir.hdr;
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
	};
	add_bandwidth(a, h, ii);
	mark_ram(ld, l);
	for (int k = 0; k < 2; k++) {
		uint32_t *diff = k ? a->accessed_count : a->written_count;

		if (!(h->flags & (k ? HVT_IV_ACCESSED : HVT_IV_WRITTEN)))
			continue;
		if (clip(&ld->clipped[k], &ld->ir.set[k], a->gfn_first, ld->gfn_end))
			return -ENOMEM;
		for (size_t i = 0; i < ld->clipped[k].n; i++) {
			diff[ld->clipped[k].v[i].first - a->gfn_first]++;
			diff[ld->clipped[k].v[i].first + ld->clipped[k].v[i].count - a->gfn_first]--;
		}
		*(k ? &ii->accessed : &ii->written) = ld->clipped[k].pages;
		*(k ? &a->n_accessed : &a->n_written) += 1;
		if (hvt_window_push(&ld->win[k], ld->clipped[k].v, ld->clipped[k].n,
				    k ? &ii->win_accessed : &ii->win_written))
			return -ENOMEM;
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
	if (m->written_available && !(a->written_count = calloc(a->npages + 1, sizeof(uint32_t))))
		return hvt_err_set(err, -ENOMEM, "out of memory for %" PRIu64 " pages", a->npages);
	if (m->accessed_available && !(a->accessed_count = calloc(a->npages + 1, sizeof(uint32_t))))
		return hvt_err_set(err, -ENOMEM, "out of memory for %" PRIu64 " pages", a->npages);
	if (hvt_window_init(&ld->win[0], a->window) || hvt_window_init(&ld->win[1], a->window))
		return hvt_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

static int finish(struct hvt_analysis *a, uint64_t last_end_ns, uint64_t first_seq, uint64_t last_seq,
		  struct hvt_err *err)
{
	if (!a->n)
		return hvt_err_set(
		    err, -EINVAL,
		    "--from/--to select no interval: the trace covers 0-%.3f s, intervals %" PRIu64
		    "-%" PRIu64,
		    last_end_ns / 1e9, first_seq, last_seq);
	/* difference arrays to counts; intervals that lack a kind left its array zero */
	for (int k = 0; k < 2; k++) {
		uint32_t *c = k ? a->accessed_count : a->written_count, sum = 0;

		if (!c)
			continue;
		if (!(k ? a->n_accessed : a->n_written)) {
			free(c);
			*(k ? &a->accessed_count : &a->written_count) = NULL;
			continue;
		}
		for (uint64_t i = 0; i < a->npages; i++)
			c[i] = sum += c[i];
	}
	a->ram_pages = hvt_pageset_count(&a->ram);
	if (!a->ram_pages)
		return hvt_err_set(err, -EINVAL,
				   "--range 0x%" PRIx64 "-0x%" PRIx64
				   " holds no guest RAM (it lies in a hole)",
				   a->gfn_first, a->gfn_first + a->npages - 1);
	return 0;
}

int hvt_analysis_load(struct hvt_analysis *a, struct hvt_trace_reader *r, const struct hvt_selection *sel,
		      const struct hvt_analysis_opts *o, struct hvt_err *err)
{
	struct loader ld = {.a = a};
	uint64_t total = hvt_trace_interval_count(r), last_end = 0, first_seq = 0, last_seq = 0;
	bool damaged = false;
	int rc;

	memset(a, 0, sizeof(*a));
	rc = setup(&ld, r, sel, o, err);
	for (uint64_t i = 0; !rc && i < total; i++) {
		const struct hvt_layout *l;
		const uint8_t *payload;
		size_t len;
		bool past;

		rc = hvt_trace_read_payload(r, i, &payload, &len, &l, err);
		if (rc) {
			damaged = rc == -EINVAL;
			break;
		}
		uint64_t seq = hvt_get_le64(payload), ts = hvt_get_le64(payload + 8),
			 te = hvt_get_le64(payload + 16);
		if (i == 0) {
			a->t0_ns = ts;
			first_seq = seq;
		}
		last_end = te - a->t0_ns;
		last_seq = seq;
		if (!selected(sel, seq, a->t0_ns, ts, te, &past)) {
			if (past)
				break;
			continue;
		}
		if (!a->n)
			a->first_index = i;
		rc = hvt_iv_runs_decode(&ld.ir, l, payload, len, err);
		if (rc) {
			damaged = rc == -EINVAL;
			hvt_err_prefix(err, rc, "interval %" PRIu64 ": ", seq);
			break;
		}
		if ((rc = add_interval(&ld, l)))
			hvt_err_set(err, rc, "out of memory");
	}
	if (damaged) {
		/* a damaged record (or the file changed under us): analyse what came before, as for a torn
		 * trace, and say so */
		a->truncated = true;
		a->complete = false;
		snprintf(a->problem, sizeof(a->problem), "%.255s", err->msg);
		rc = 0;
	}
	if (!rc)
		rc = finish(a, last_end, first_seq, last_seq, err);
	hvt_iv_runs_fini(&ld.ir);
	for (int k = 0; k < 2; k++) {
		free(ld.clipped[k].v);
		hvt_window_fini(&ld.win[k]);
	}
	if (rc)
		hvt_analysis_fini(a);
	return rc;
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
			if (clip(&clipped, &ir.set[s], a->gfn_first, a->gfn_first + a->npages)) {
				rc = hvt_err_set(err, -ENOMEM, "out of memory");
				break;
			}
			for (size_t i = 0; !rc && i < clipped.n; i++)
				rc = fn(ctx, k, (enum hvt_set_kind)s, clipped.v[i].first, clipped.v[i].count);
		}
	}
	hvt_iv_runs_fini(&ir);
	free(clipped.v);
	return rc;
}
