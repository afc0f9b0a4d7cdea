// SPDX-License-Identifier: MIT
/*
 * Loading the analyses' input (analysis.h): one pass over the selected intervals, read as runs of GFNs.
 *
 * Each touched page keeps its count and the interval it was last touched in (analysis_sweep.c: four bytes
 * per page and kind, in chunks made as pages are touched; a run of pages is one sequential sweep). The
 * sliding windows follow from the last touches: a page touched in interval k counts in the windows ending at
 * k .. k+w-1; if it was touched d < w intervals before, the windows up to k+w-1-d already counted it, so it
 * adds only the windows from k+w-d on. Those spans go into a difference array over intervals, summed once
 * the pass is done. Cost: O(pages touched), whatever the window and however scattered the sets (a union of
 * run lists grows with both).
 *
 * The sweep runs on two threads: the reading thread, which decodes the intervals ahead
 * (select_ahead.c), sweeps one block of pages in four of each interval it has decoded, and this thread the
 * others (analysis_sweep.h: the two parts share no state). Each part adds its gaps to a difference array of
 * its own; the two are summed at the end, which gives what one sweep of the whole gives.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_sweep.h"
#include "hvmtrace/analysis.h"
#include "hvmtrace/error.h"
#include "select_ahead.h"

struct loader {
	struct hvt_analysis *a;
	const struct hvt_iv_runs *ir;          /* the interval being added, its runs inside the range */
	struct hvt_sweep sw;                   /* this thread's part of the pages (all without split) */
	const struct hvt_sweep_tuning *tuning; /* NULL: the sweep's defaults */
	bool kind[2];                          /* the trace has sets of this kind */
	int64_t *wdiff[2];                     /* [interval]: change of the window's page count there */
	/* split: the reading thread's blocks, swept there (sweep_half), with their own difference arrays and
	 * count of the intervals swept; read here only once the walk has ended (its thread joined) */
	bool split;
	struct hvt_sweep half;
	int64_t *half_wdiff[2];
	uint64_t half_n;
	uint64_t max_n;
	uint64_t gfn_end; /* one past the range */
	const struct hvt_layout *marked;
	size_t cap;
	struct hvt_err *err;
};

static int by_first(const void *x, const void *y)
{
	const struct hvt_run *a = x, *b = y;

	return a->first < b->first ? -1 : a->first > b->first;
}

/* RAM: the union of the selected intervals' slots, inside the range, as ascending runs apart. */
static int mark_ram(struct loader *ld, const struct hvt_layout *l)
{
	struct hvt_runs *ram = &ld->a->ram;
	uint64_t first = ld->a->gfn_first;
	size_t n = 0;

	if (l == ld->marked)
		return 0;
	ld->marked = l;
	for (uint32_t s = 0; s < l->nslots; s++) {
		uint64_t f = hvt_memslot_first_gfn(l, &l->slots[s]);
		uint64_t e = f + hvt_memslot_npages(l, &l->slots[s]);

		f = f > first ? f : first;
		e = e < ld->gfn_end ? e : ld->gfn_end;
		if (f < e && hvt_runs_push(ram, f - first, e - f))
			return -ENOMEM;
	}
	qsort(ram->v, ram->n, sizeof(*ram->v), by_first);
	for (size_t i = 0; i < ram->n; i++) {
		struct hvt_run *last = n ? &ram->v[n - 1] : NULL;

		if (last && ram->v[i].first <= last->first + last->count) {
			uint64_t e = ram->v[i].first + ram->v[i].count;

			if (e > last->first + last->count)
				last->count = e - last->first;
		} else {
			ram->v[n++] = ram->v[i];
		}
	}
	ram->n = n;
	ram->pages = 0;
	for (size_t i = 0; i < n; i++)
		ram->pages += ram->v[i].count;
	return 0;
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

/* The gaps of a part's touches in interval k into its difference array wd: the pages they count. */
static uint64_t add_gaps(int64_t *wd, uint64_t *gap, uint32_t sweep_window, uint32_t w, uint64_t k)
{
	uint64_t seen = 0;

	/* the sweep's window is at most w: gaps beyond it are none */
	for (uint32_t d = 1; d < sweep_window; d++) {
		wd[k + w - d] += (int64_t)gap[d];
		seen += gap[d];
		gap[d] = 0;
	}
	return seen;
}

/* Interval k's touches of kind into the windows: those touched before count from k + w - d on (add_gaps),
 * the others from k, and all leave at k + w. */
static void close_window(struct loader *ld, int kind, uint64_t k)
{
	uint32_t w = ld->a->window;
	int64_t *wd = ld->wdiff[kind];
	uint64_t pages = ld->ir->set[kind].pages;
	uint64_t seen = add_gaps(wd, ld->sw.gap[kind], ld->sw.window, w, k);

	wd[k] += (int64_t)(pages - seen);
	wd[k + w] -= (int64_t)pages;
}

/* The windows of every interval with sets of the kind, from the parts' difference arrays. */
static void sum_windows(struct loader *ld)
{
	struct hvt_analysis *a = ld->a;

	for (int kind = 0; a->window && kind < 2; kind++) {
		int64_t sum = 0;

		for (uint64_t k = 0; k < a->n; k++) {
			struct hvt_iv_info *ii = &a->iv[k];

			if (*(kind ? &ii->accessed : &ii->written) == HVT_NA)
				continue;
			sum += ld->wdiff[kind][k] + (ld->split ? ld->half_wdiff[kind][k] : 0);
			*(kind ? &ii->win_accessed : &ii->win_written) = (uint64_t)sum;
		}
	}
}

/* On the reading thread: the other part's sweep of the next selected interval. */
static int sweep_half(void *ctx, const struct hvt_iv_runs *ir, struct hvt_err *err)
{
	struct loader *ld = ctx;
	uint64_t k = ld->half_n++;
	int rc;

	if ((rc = hvt_sweep_begin(&ld->half)))
		return hvt_err_set(err, rc, "out of memory");
	for (int kind = 0; kind < 2; kind++) {
		const struct hvt_runs *runs = &ir->set[kind];

		if (!(ir->hdr.flags & (kind ? HVT_IV_ACCESSED : HVT_IV_WRITTEN)) || !ld->kind[kind])
			continue;
		if ((rc = hvt_sweep_touch(&ld->half, kind, runs->v, runs->n, ld->a->gfn_first)))
			return hvt_err_set(err, rc, "out of memory");
		if (ld->a->window)
			ld->half_wdiff[kind][k] -= (int64_t)add_gaps(ld->half_wdiff[kind], ld->half.gap[kind],
								     ld->half.window, ld->a->window, k);
	}
	return 0;
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
	    .ring_full = (h->flags & HVT_IV_RING_FULL) ? h->ring_full : HVT_NA,
	};
	add_bandwidth(a, h, ii);
	if ((rc = mark_ram(ld, l)) || (rc = hvt_sweep_begin(&ld->sw)))
		return rc;
	for (int k = 0; k < 2; k++) {
		const struct hvt_runs *runs = &ld->ir->set[k];

		if (!(h->flags & (k ? HVT_IV_ACCESSED : HVT_IV_WRITTEN)) || !ld->kind[k])
			continue;
		if ((rc = hvt_sweep_touch(&ld->sw, k, runs->v, runs->n, a->gfn_first)))
			return rc;
		if (a->window)
			close_window(ld, k, a->n);
		*(k ? &ii->accessed : &ii->written) = runs->pages;
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
	a->window = o && o->no_windows ? 0 : o && o->window ? o->window : HVT_DEFAULT_WINDOW;
	if (a->window > 65535)
		return hvt_err_set(err, -EINVAL, "a window of %u intervals is more than 65535", a->window);
	if (m->bandwidth_available)
		a->bw = m->bandwidth_source == HVT_BW_SOURCE_RESCTRL_TOTAL ? HVT_BW_TOTAL : HVT_BW_SPLIT;
	a->nchannels = m->bandwidth_available ? m->channels.n : 0;

	a->sel = *sel;
	if ((rc = hvt_select_span(r, sel, &a->gfn_first, &ld->gfn_end, err)))
		return rc;
	a->npages = ld->gfn_end - a->gfn_first;
	ld->max_n = st.intervals;
	ld->kind[0] = m->written_available;
	ld->kind[1] = m->accessed_available;
	/* a window longer than the trace is the trace: no page's gap reaches it */
	rc = hvt_sweep_init(&ld->sw, a->npages, ld->kind[0] | ld->kind[1] << 1,
			    a->window < ld->max_n ? a->window : (uint32_t)ld->max_n, ld->tuning);
	/* with or without the windows: the reading thread's share made report --no-windows 8 % faster with
	 * the final decoder (docs/analyses.md, Speed) */
	ld->split = !(ld->tuning && ld->tuning->one_part);
	if (!rc && ld->split) {
		uint64_t block = ld->tuning && ld->tuning->block ? ld->tuning->block : HVT_SWEEP_BLOCK;

		rc = hvt_sweep_init(&ld->half, a->npages, ld->kind[0] | ld->kind[1] << 1, ld->sw.window,
				    ld->tuning);
		/* the reading thread decodes too: on a kernel build's shape, one block in four evens the two
		 * threads' work with every analysis (docs/analyses.md, Speed); the fourth, so that the first
		 * 128 MiB, busy in many guests, stay on this thread */
		hvt_sweep_own(&ld->sw, 0x7, 4, block);
		hvt_sweep_own(&ld->half, 0x8, 4, block);
	}
	if (rc == -ENOMEM)
		return hvt_err_set(err, rc, "out of memory for %" PRIu64 " pages", a->npages);
	if (rc)
		return hvt_err_set(err, rc, "the page sweep asked for does not run on this CPU");
	for (int k = 0; a->window && k < 2; k++) {
		ld->wdiff[k] = calloc(ld->max_n + a->window + 1, sizeof(*ld->wdiff[k]));
		if (ld->split)
			ld->half_wdiff[k] = calloc(ld->max_n + a->window + 1, sizeof(*ld->half_wdiff[k]));
		if (!ld->wdiff[k] || (ld->split && !ld->half_wdiff[k]))
			return hvt_err_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

static void free_chunks(struct hvt_count_chunk *v, uint64_t n)
{
	for (uint64_t c = 0; c < n; c++)
		for (int k = 0; k < 2; k++)
			free(v[c].count[k]);
	free(v);
}

/* The parts' chunks (each ascending, disjoint) merged into the analysis's, ascending: 0 or -ENOMEM. */
static int take_chunks(struct loader *ld)
{
	struct hvt_analysis *a = ld->a;
	struct hvt_count_chunk *p[2] = {NULL, NULL}, *v;
	uint64_t n[2] = {0, 0}, i = 0, j = 0;

	if (hvt_sweep_take(&ld->sw, &p[0], &n[0]))
		return -ENOMEM;
	if (!ld->split) {
		a->chunks = p[0];
		a->nchunks = n[0];
		return 0;
	}
	if (hvt_sweep_take(&ld->half, &p[1], &n[1]) ||
	    !(v = malloc((n[0] + n[1] ? n[0] + n[1] : 1) * sizeof(*v)))) {
		free_chunks(p[0], n[0]);
		free_chunks(p[1], n[1]);
		return -ENOMEM;
	}
	while (i < n[0] || j < n[1]) {
		bool first = j == n[1] || (i < n[0] && p[0][i].first < p[1][j].first);

		v[i + j] = first ? p[0][i] : p[1][j];
		*(first ? &i : &j) += 1;
	}
	free(p[0]);
	free(p[1]);
	a->chunks = v;
	a->nchunks = n[0] + n[1];
	return 0;
}

static int finish(struct loader *ld, const struct hvt_walk_end *end, struct hvt_err *err)
{
	struct hvt_analysis *a = ld->a;

	if (!a->n)
		return hvt_select_none(&a->sel, end, err);
	a->ram_pages = a->ram.pages;
	if (!a->ram_pages)
		return hvt_err_set(err, -EINVAL,
				   "--range 0x%" PRIx64 "-0x%" PRIx64
				   " holds no guest RAM (it lies in a hole)",
				   a->gfn_first, a->gfn_first + a->npages - 1);
	sum_windows(ld);
	if (take_chunks(ld))
		return hvt_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* The walk's callback: one selected interval into the analysis. */
static int take(void *ctx, const struct hvt_walk_iv *w)
{
	struct loader *ld = ctx;
	int rc;

	if (!ld->a->n)
		ld->a->first_index = w->index;
	ld->a->t0_ns = w->t0_ns;
	ld->ir = w->ir;
	if ((rc = add_interval(ld, w->layout)))
		hvt_err_set(ld->err, rc, "out of memory");
	return rc;
}

int hvt_analysis_load_tuned(struct hvt_analysis *a, struct hvt_trace_reader *r,
			    const struct hvt_selection *sel, const struct hvt_analysis_opts *o,
			    const struct hvt_sweep_tuning *t, struct hvt_err *err)
{
	struct loader ld = {.a = a, .tuning = t, .err = err};
	struct hvt_walk_end end = {0};
	int rc;

	memset(a, 0, sizeof(*a));
	rc = setup(&ld, r, sel, o, err);
	if (!rc)
		rc = hvt_select_walk_early(r, sel, a->gfn_first, ld.gfn_end, ld.split ? sweep_half : NULL,
					   &ld, take, &ld, &end, err);
	a->t0_ns = end.t0_ns;
	if (!rc && end.damaged && end.bad_rc != -EINVAL) {
		rc = end.bad_rc;
		*err = end.why;
	} else if (!rc && end.damaged) {
		/* a damaged record (or the file changed under us): analyse what came before, as for a torn
		 * trace, and say so */
		a->truncated = true;
		a->complete = false;
		a->damaged = true;
		a->readable = end.bad_index;
		snprintf(a->problem, sizeof(a->problem), "%.255s", end.why.msg);
	}
	if (!rc)
		rc = finish(&ld, &end, err);
	hvt_sweep_fini(&ld.sw);
	hvt_sweep_fini(&ld.half);
	for (int k = 0; k < 2; k++) {
		free(ld.wdiff[k]);
		free(ld.half_wdiff[k]);
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
	for (uint64_t c = 0; c < a->nchunks; c++)
		for (int k = 0; k < 2; k++)
			free(a->chunks[c].count[k]);
	free(a->chunks);
	free(a->ram.v);
	memset(a, 0, sizeof(*a));
}

struct run_walk {
	const struct hvt_analysis *a;
	unsigned kinds;
	hvt_run_fn fn;
	void *ctx;
	bool done; /* every loaded interval was given */
};

static int each_run(void *ctx, const struct hvt_walk_iv *w)
{
	struct run_walk *x = ctx;
	int rc = 0;

	for (int s = 0; !rc && s < 2; s++) {
		const struct hvt_runs *in = &w->ir->set[s];

		if (!(x->kinds & (1u << s)) || !(w->ir->hdr.flags & (s ? HVT_IV_ACCESSED : HVT_IV_WRITTEN)))
			continue;
		for (size_t i = 0; !rc && i < in->n; i++)
			rc = x->fn(x->ctx, w->k, (enum hvt_set_kind)s, in->v[i].first, in->v[i].count);
	}
	x->done = !rc && w->k + 1 == x->a->n;
	return rc ? rc : x->done;
}

int hvt_analysis_walk(const struct hvt_analysis *a, struct hvt_trace_reader *r, unsigned kinds, hvt_run_fn fn,
		      void *ctx, struct hvt_err *err)
{
	return hvt_analysis_walk_pages(a, r, kinds, 0, a->npages, fn, ctx, err);
}

int hvt_analysis_walk_pages(const struct hvt_analysis *a, struct hvt_trace_reader *r, unsigned kinds,
			    uint64_t first, uint64_t end_page, hvt_run_fn fn, void *ctx, struct hvt_err *err)
{
	struct run_walk x = {.a = a, .kinds = kinds, .fn = fn, .ctx = ctx};
	struct hvt_walk_end end;
	int rc = hvt_select_walk(r, &a->sel, a->gfn_first + first, a->gfn_first + end_page, each_run, &x,
				 &end, err);

	if (x.done)
		return 0;
	if (!rc && end.selected < a->n)
		return hvt_err_set(err, end.damaged ? end.bad_rc : -EINVAL, "%s",
				   end.damaged ? end.why.msg : "the trace changed since it was analysed");
	return rc;
}
