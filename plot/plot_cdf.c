// SPDX-License-Identifier: MIT
/*
 * hvmtrace plot cdf: the concentration of page-writes ("x % of the written pages take y % of the
 * page-writes"), and of page-accesses where accessed sets exist, of one run or of several side by side
 * (one colour per run, written solid, accessed dashed).
 */
#include <stdio.h>
#include <stdlib.h>

#include "plot.h"
#include "hvmtrace/trace_input.h"

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

/* One run's two curves, written and accessed: n points each (0: none). */
struct curves {
	struct per_page pp;
	double *xw, *yw, *xa, *ya;
	uint64_t nw, na;
};

static void curves_free(struct curves *c)
{
	free(c->xw);
	free(c->yw);
	free(c->xa);
	free(c->ya);
	free(c->pp.w.v);
	free(c->pp.a.v);
}

int plot_cdf(const struct plot_args *a)
{
	struct plot_runs r;
	struct curves *c = calloc(a->traces.n, sizeof(*c));
	void **ctx = calloc(a->traces.n, sizeof(*ctx));
	struct plot p;
	char sub[1024], name[160];
	double diag[2] = {0, 100};
	bool any_a = false, several = a->traces.n > 1;
	int rc;

	if (!c || !ctx) {
		free(c);
		free(ctx);
		fprintf(stderr, "hvmtrace plot: out of memory\n");
		return TRACE_OUTPUT_FAILED;
	}
	if (plot_open(&p, "plot", a->out, a->width, a->height, 24)) {
		free(c);
		free(ctx);
		return TRACE_USAGE;
	}
	for (size_t i = 0; i < a->traces.n; i++)
		ctx[i] = &c[i].pp;
	rc = plot_runs_load(&r, a, count_pages, ctx);
	for (size_t i = 0; rc == TRACE_OUTPUT_FAILED && i < a->traces.n; i++)
		if (c[i].pp.nomem)
			fprintf(stderr, "hvmtrace plot: out of memory for the page runs of %s\n",
				a->traces.v[i]);
	if (rc) {
		for (size_t i = 0; i < a->traces.n; i++)
			curves_free(&c[i]);
		free(c);
		free(ctx);
		plot_abandon(&p, a->out);
		return rc;
	}
	for (size_t i = 0; i < r.n; i++) {
		c[i].nw = concentration(&c[i].pp.w, r.s[i].niv, &c[i].xw, &c[i].yw);
		c[i].na = concentration(&c[i].pp.a, r.s[i].niv, &c[i].xa, &c[i].ya);
		any_a |= c[i].na > 0;
	}
	plot_runs_describe(&r, &a->sel, sub, sizeof(sub));
	plot_title(&p,
		   several
		       ? "Write concentration, runs side by side: x % of the written pages take y % of the "
			 "page-writes"
		       : "Write concentration: x % of the written pages take y % of the page-writes",
		   sub);
	/* Accesses are named only where some trace has them: a dirty-log trace knows writes only. */
	plot_axes(&p, 0, 100, 0, 100,
		  any_a ? "pages, most-written (most-accessed) first (% of the pages ever written / accessed)"
			: "written pages, most-written first (% of the pages ever written)",
		  any_a ? "page-writes (page-accesses) they take (%)" : "page-writes they take (%)",
		  plot_fmt_plain, plot_fmt_plain);
	polyline(&p, diag, diag, NULL, 2, (struct rgb){0.6, 0.6, 0.6}, 1, 3);
	for (size_t i = 0; i < r.n; i++) {
		struct rgb cw = several ? plot_palette(i) : HEAT_WRITTEN, ca = several ? cw : HEAT_ACCESSED;

		if (c[i].na)
			polyline(&p, c[i].xa, c[i].ya, NULL, c[i].na, ca, 2, several ? 6 : 0);
		if (c[i].nw)
			polyline(&p, c[i].xw, c[i].yw, NULL, c[i].nw, cw, 2, 0);
	}
	for (size_t i = 0; i < r.n; i++) {
		struct rgb cw = several ? plot_palette(i) : HEAT_WRITTEN, ca = several ? cw : HEAT_ACCESSED;

		snprintf(name, sizeof(name), "%s%s: share of page-writes",
			 several ? plot_run_name(&r.s[i]) : "written", several ? ", written" : "");
		if (c[i].nw)
			plot_legend(&p, cw, 0, name);
		snprintf(name, sizeof(name), "%s%s: share of page-accesses",
			 several ? plot_run_name(&r.s[i]) : "accessed", several ? ", accessed (dashed)" : "");
		if (c[i].na)
			plot_legend(&p, ca, several ? 6 : 0, name);
	}
	plot_legend(&p, (struct rgb){0.6, 0.6, 0.6}, 3, "all pages alike");
	if (!any_a) {
		char what[128];

		snprintf(what, sizeof(what), "accessed pages: not available (mode %s)",
			 hvt_mode_name(r.s[0].meta->mode));
		unavailable(&p, what);
	}
	for (size_t i = 0; i < a->traces.n; i++)
		curves_free(&c[i]);
	free(c);
	free(ctx);
	rc = plot_finish(&p, a->out, "cdf", r.incomplete ? TRACE_INCOMPLETE : 0);
	plot_runs_fini(&r);
	return rc;
}
