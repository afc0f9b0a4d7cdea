// SPDX-License-Identifier: MIT
/*
 * hvmtrace plot bw, wss and cdf: the line charts. bw is the seed paper's figures 2-5 (read and write
 * bytes/s per channel and in total); wss the pages written and accessed per interval; cdf the
 * concentration of page-writes ("x % of the written pages take y % of the page-writes").
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"
#include "hvmtrace/trace_input.h"

void plot_describe(const struct trace_series *s, const struct hvt_selection *sel, char *buf, int len)
{
	const char *slash = strrchr(s->path, '/');
	char gfns[64] = "";

	if (sel->gfns_given)
		snprintf(gfns, sizeof(gfns), " · GFNs 0x%" PRIx64 "-0x%" PRIx64, s->gfn_first,
			 s->gfn_end - 1);
	snprintf(buf, len,
		 "VM '%s' (%s) · mode %s · %.3g s intervals · intervals %" PRIu64 "-%" PRIu64
		 " (%.3f-%.3f s)%s · %s%s",
		 s->meta->vm_name[0] ? s->meta->vm_name : "unnamed", s->meta->vm_accel,
		 hvt_mode_name(s->meta->mode), s->meta->interval_ns / 1e9, s->iv[0].seq,
		 s->iv[s->niv - 1].seq, s->iv[0].t0, s->iv[s->niv - 1].t1, gfns, slash ? slash + 1 : s->path,
		 s->incomplete ? " (INCOMPLETE trace)" : "");
}

/* A line through (x[i], y[i]), broken where have[i] is false. */
static void polyline(struct plot *p, const double *x, const double *y, const bool *have, uint64_t n,
		     struct rgb c, double width, double dashed)
{
	double d[] = {dashed, dashed * 0.7};
	bool down = false;

	plot_set_rgb(p, c);
	cairo_set_line_width(p->cr, width);
	cairo_set_dash(p->cr, d, dashed > 0 ? 2 : 0, 0);
	for (uint64_t i = 0; i < n; i++) {
		if (have && !have[i]) {
			down = false;
			continue;
		}
		if (down)
			cairo_line_to(p->cr, plot_px(p, x[i]), plot_py(p, y[i]));
		else
			cairo_move_to(p->cr, plot_px(p, x[i]), plot_py(p, y[i]));
		down = true;
	}
	cairo_stroke(p->cr);
	cairo_set_dash(p->cr, NULL, 0, 0);
}

static int finish(struct plot *p, struct trace_series *s, const char *out, const char *kind, int rc)
{
	if (plot_close(p, "plot"))
		rc = TRACE_OUTPUT_FAILED;
	else
		printf("hvmtrace plot: wrote %s: %s %dx%d px\n", out, kind, p->width, p->height);
	trace_series_fini(s);
	return rc;
}

/* A picture not drawn: the series and the surface go, and so does the half-made output file. */
static int abandon(struct plot *p, struct trace_series *s, const char *out, int rc)
{
	trace_series_fini(s);
	cairo_destroy(p->cr);
	cairo_surface_destroy(p->surface);
	svg_text_free(&p->texts);
	remove(out);
	return rc;
}

static void clip_area(struct plot *p)
{
	cairo_rectangle(p->cr, p->x0, p->y0, p->x1 - p->x0, p->y1 - p->y0);
	cairo_clip(p->cr);
}

static void unavailable(struct plot *p, const char *what)
{
	cairo_set_source_rgb(p->cr, 0.4, 0.4, 0.4);
	plot_text(p, (p->x0 + p->x1) / 2, p->y0 + 16, 11, what, 0.5, 0.5);
}

/* What a picture of accessed pages says when the trace's mode records none. */
static void accessed_unavailable(struct plot *p, enum hvt_mode mode)
{
	char what[128];

	snprintf(what, sizeof(what), "accessed pages: not available (mode %s)", hvt_mode_name(mode));
	unavailable(p, what);
}

int plot_bw(const struct plot_args *a)
{
	struct trace_series s;
	struct plot p;
	char sub[256], name[96];
	double *x, *rd, *wr, *trd, *twr, top = 0;
	bool *have;
	int rc;

	if (plot_open(&p, "plot", a->out, a->width, a->height, 24))
		return TRACE_USAGE;
	rc = trace_series_load(&s, "plot", a->trace, &a->sel, NULL, NULL);
	if (rc == 0 || rc == TRACE_INCOMPLETE) {
		if (!s.bandwidth || !s.nchannels) {
			/* the cause, not the mode: a resctrl trace has bandwidth in mode dirty-log */
			fprintf(
			    stderr,
			    "hvmtrace plot: %s: no DRAM bandwidth in this trace: it was recorded without a "
			    "bandwidth source (no reserved channel, no --bw-fallback resctrl)\n",
			    a->trace);
			rc = TRACE_USAGE;
		}
	}
	if (rc && rc != TRACE_INCOMPLETE)
		return abandon(&p, &s, a->out, rc);
	x = calloc(s.niv, sizeof(double));
	rd = calloc(s.niv * s.nchannels, sizeof(double));
	wr = calloc(s.niv * s.nchannels, sizeof(double));
	trd = calloc(s.niv, sizeof(double));
	twr = calloc(s.niv, sizeof(double));
	have = calloc(s.niv, sizeof(bool));
	for (uint64_t i = 0; i < s.niv; i++) {
		double dt = s.iv[i].t1 - s.iv[i].t0;

		x[i] = (s.iv[i].t0 + s.iv[i].t1) / 2;
		have[i] = (s.iv[i].flags & HVT_IV_BANDWIDTH) && dt > 0;
		for (uint32_t c = 0; have[i] && c < s.nchannels; c++) {
			rd[c * s.niv + i] = s.read[i * s.nchannels + c] / dt / 1e6;
			wr[c * s.niv + i] = s.write[i * s.nchannels + c] / dt / 1e6;
			trd[i] += rd[c * s.niv + i];
			twr[i] += wr[c * s.niv + i];
		}
		top = fmax(top, fmax(trd[i], twr[i]));
	}
	plot_describe(&s, &a->sel, sub, sizeof(sub));
	plot_title(
	    &p, s.bw_total ? "DRAM bandwidth, reads + writes (not split)" : "DRAM read and write bandwidth",
	    sub);
	plot_axes(&p, s.iv[0].t0, s.iv[s.niv - 1].t1, 0, top * 1.1, "time since the trace's start (s)",
		  "MB/s (10^6 bytes/s)", plot_fmt_plain, plot_fmt_plain);
	cairo_save(p.cr);
	clip_area(&p);
	for (uint32_t c = 0; c < s.nchannels; c++) {
		polyline(&p, x, rd + c * s.niv, have, s.niv, plot_palette(c + 2), 1.2, 0);
		if (!s.bw_total)
			polyline(&p, x, wr + c * s.niv, have, s.niv, plot_palette(c + 2), 1.2, 4);
	}
	polyline(&p, x, trd, have, s.niv, (struct rgb){0, 0, 0}, 2.4, 0);
	if (!s.bw_total)
		polyline(&p, x, twr, have, s.niv, (struct rgb){0.84, 0.15, 0.16}, 2.4, 6);
	cairo_restore(p.cr);
	plot_legend(&p, (struct rgb){0, 0, 0}, 0, s.bw_total ? "total" : "read, total");
	if (!s.bw_total)
		plot_legend(&p, (struct rgb){0.84, 0.15, 0.16}, 6, "write, total (dashed)");
	for (uint32_t c = 0; c < s.nchannels && c < 4; c++) {
		snprintf(name, sizeof(name), "%s%s", s.meta->channels.v[c].id, s.bw_total ? "" : " r / w");
		plot_legend(&p, plot_palette(c + 2), 0, name);
	}
	if (s.meta->bandwidth_source == HVT_BW_SOURCE_PMU_STAND_IN)
		unavailable(&p, "STAND-IN counters: software events, not DRAM");
	free(x);
	free(rd);
	free(wr);
	free(trd);
	free(twr);
	free(have);
	return finish(&p, &s, a->out, "bw", rc);
}

int plot_wss(const struct plot_args *a)
{
	struct trace_series s;
	struct plot p;
	char sub[256];
	double *x, *w, *ac, top = 0, mib;
	bool *hw, *ha, any_w = false, any_a = false;
	int rc;

	if (plot_open(&p, "plot", a->out, a->width, a->height, 24))
		return TRACE_USAGE;
	rc = trace_series_load(&s, "plot", a->trace, &a->sel, NULL, NULL);
	if (rc && rc != TRACE_INCOMPLETE)
		return abandon(&p, &s, a->out, rc);
	mib = s.page_size / 1048576.0;
	x = calloc(s.niv, sizeof(double));
	w = calloc(s.niv, sizeof(double));
	ac = calloc(s.niv, sizeof(double));
	hw = calloc(s.niv, sizeof(bool));
	ha = calloc(s.niv, sizeof(bool));
	for (uint64_t i = 0; i < s.niv; i++) {
		x[i] = (s.iv[i].t0 + s.iv[i].t1) / 2;
		any_w |= hw[i] = s.iv[i].flags & HVT_IV_WRITTEN;
		any_a |= ha[i] = s.iv[i].flags & HVT_IV_ACCESSED;
		w[i] = s.iv[i].written * mib;
		ac[i] = s.iv[i].accessed * mib;
		top = fmax(top, fmax(hw[i] ? w[i] : 0, ha[i] ? ac[i] : 0));
	}
	plot_describe(&s, &a->sel, sub, sizeof(sub));
	/* Only what the trace holds: a dirty-log trace knows written pages, not what was touched. */
	plot_title(&p, any_a ? "Working set per interval" : "Pages written per interval (written pages only)",
		   sub);
	plot_axes(&p, s.iv[0].t0, s.iv[s.niv - 1].t1, 0, top * 1.1, "time since the trace's start (s)",
		  any_a ? "pages touched in the interval (MiB)" : "pages written in the interval (MiB)",
		  plot_fmt_plain, plot_fmt_plain);
	cairo_save(p.cr);
	clip_area(&p);
	if (any_a)
		polyline(&p, x, ac, ha, s.niv, HEAT_ACCESSED, 2, 0);
	if (any_w)
		polyline(&p, x, w, hw, s.niv, HEAT_WRITTEN, 2, 0);
	cairo_restore(p.cr);
	if (any_w)
		plot_legend(&p, HEAT_WRITTEN, 0, "written");
	if (any_a)
		plot_legend(&p, HEAT_ACCESSED, 0, "accessed (reads and writes)");
	if (!any_a)
		accessed_unavailable(&p, s.meta->mode);
	free(x);
	free(w);
	free(ac);
	free(hw);
	free(ha);
	return finish(&p, &s, a->out, "wss", rc);
}

/*
 * How many intervals each page was written (accessed) in, kept sparse: every run adds +1 at its first page
 * and -1 past its end, and a sweep over the sorted boundaries gives each stretch of pages its count. The
 * memory follows the runs the trace holds, not the guest's pages (a small trace may declare a huge slot).
 */
struct bound {
	uint64_t gfn;
	int64_t d;
};

struct bounds {
	struct bound *v;
	size_t n, cap;
};

struct per_page {
	struct bounds w, a;
	bool nomem;
};

/* Each run of runs (cut to the range) as its two boundaries. */
static int count_runs(struct per_page *pp, struct bounds *b, const struct hvt_runs *runs)
{
	for (size_t k = 0; k < runs->n; k++) {
		if (b->cap - b->n < 2) {
			size_t cap = b->cap ? 2 * b->cap : 4096;
			struct bound *v = cap < b->cap ? NULL : realloc(b->v, cap * sizeof(*v));

			if (!v) {
				pp->nomem = true;
				return TRACE_OUTPUT_FAILED;
			}
			b->v = v;
			b->cap = cap;
		}
		b->v[b->n++] = (struct bound){runs->v[k].first, 1};
		b->v[b->n++] = (struct bound){runs->v[k].first + runs->v[k].count, -1};
	}
	return 0;
}

static int count_pages(void *ctx, const struct trace_series *s, const struct hvt_iv_runs *ir,
		       const struct hvt_layout *l, uint64_t i)
{
	struct per_page *pp = ctx;

	(void)i;
	(void)l;
	(void)s;
	if ((ir->hdr.flags & HVT_IV_WRITTEN) && count_runs(pp, &pp->w, &ir->set[0]))
		return TRACE_OUTPUT_FAILED;
	if ((ir->hdr.flags & HVT_IV_ACCESSED) && count_runs(pp, &pp->a, &ir->set[1]))
		return TRACE_OUTPUT_FAILED;
	return 0;
}

static int by_gfn(const void *a, const void *b)
{
	const struct bound *x = a, *y = b;

	return (x->gfn > y->gfn) - (x->gfn < y->gfn);
}

/* hist[k] = pages counted in k intervals (k = 0 is not filled). */
static void sweep(struct bounds *b, uint64_t *hist, uint64_t niv)
{
	int64_t depth = 0;

	if (!b->n)
		return; /* no page touched: nothing to sort (and b->v may be NULL) */
	qsort(b->v, b->n, sizeof(*b->v), by_gfn);
	for (size_t i = 0; i < b->n; i++) {
		depth += b->v[i].d;
		if (i + 1 < b->n && depth > 0)
			hist[(uint64_t)depth > niv ? niv : (uint64_t)depth] += b->v[i + 1].gfn - b->v[i].gfn;
	}
}

/* The concentration curve of per-page counts: pages sorted by count, most first; x = share of the pages
 * with a count, y = share of all counts. Returns the points (n + 1 of them, from 0,0), or 0 if none. */
static uint64_t concentration(struct bounds *b, uint64_t niv, double **xs, double **ys)
{
	uint64_t *hist = calloc(niv + 1, sizeof(uint64_t)), pages = 0, sum = 0, n = 0, cp = 0, cs = 0;

	*xs = calloc(niv + 2, sizeof(double));
	*ys = calloc(niv + 2, sizeof(double));
	if (!hist || !*xs || !*ys) {
		free(hist);
		return 0;
	}
	sweep(b, hist, niv);
	for (uint64_t k = 1; k <= niv; k++) {
		pages += hist[k];
		sum += hist[k] * k;
	}
	if (!pages) {
		free(hist);
		return 0;
	}
	for (uint64_t k = niv; k >= 1; k--) {
		if (!hist[k])
			continue;
		cp += hist[k];
		cs += hist[k] * k;
		n++;
		(*xs)[n] = 100.0 * cp / pages;
		(*ys)[n] = 100.0 * cs / sum;
	}
	free(hist);
	return n + 1;
}

int plot_cdf(const struct plot_args *a)
{
	struct trace_series s;
	struct per_page pp = {0};
	struct plot p;
	char sub[256];
	double *xw, *yw, *xa, *ya, diag[2] = {0, 100};
	uint64_t nw, na;
	int rc;

	if (plot_open(&p, "plot", a->out, a->width, a->height, 24))
		return TRACE_USAGE;
	rc = trace_series_open(&s, "plot", a->trace, &a->sel);
	if (!rc)
		rc = trace_series_walk(&s, &a->sel, count_pages, &pp);
	if (rc == TRACE_OUTPUT_FAILED && pp.nomem)
		fprintf(stderr, "hvmtrace plot: out of memory for the page runs of %s\n", a->trace);
	if (rc && rc != TRACE_INCOMPLETE) {
		free(pp.w.v);
		free(pp.a.v);
		return abandon(&p, &s, a->out, rc);
	}
	nw = concentration(&pp.w, s.niv, &xw, &yw);
	na = concentration(&pp.a, s.niv, &xa, &ya);
	plot_describe(&s, &a->sel, sub, sizeof(sub));
	plot_title(&p, "Write concentration: x % of the written pages take y % of the page-writes", sub);
	plot_axes(&p, 0, 100, 0, 100,
		  na ? "pages, most-written (most-accessed) first (% of the pages ever written / accessed)"
		     : "written pages, most-written first (% of the pages ever written)",
		  na ? "page-writes (page-accesses) they take (%)" : "page-writes they take (%)",
		  plot_fmt_plain, plot_fmt_plain);
	polyline(&p, diag, diag, NULL, 2, (struct rgb){0.6, 0.6, 0.6}, 1, 3);
	if (na)
		polyline(&p, xa, ya, NULL, na, HEAT_ACCESSED, 2, 0);
	if (nw)
		polyline(&p, xw, yw, NULL, nw, HEAT_WRITTEN, 2, 0);
	if (nw)
		plot_legend(&p, HEAT_WRITTEN, 0, "written: share of page-writes");
	if (na)
		plot_legend(&p, HEAT_ACCESSED, 0, "accessed: share of page-accesses");
	plot_legend(&p, (struct rgb){0.6, 0.6, 0.6}, 3, "all pages alike");
	if (!na)
		accessed_unavailable(&p, s.meta->mode);
	free(xw);
	free(yw);
	free(xa);
	free(ya);
	free(pp.w.v);
	free(pp.a.v);
	return finish(&p, &s, a->out, "cdf", rc);
}
