// SPDX-License-Identifier: MIT
/*
 * hvmtrace plot wss: the pages written and accessed per interval, of one run or of several side by side
 * (one colour per run, written solid, accessed dashed, each from its own start). A run whose trace holds
 * no accessed sets (mode dirty-log) draws written pages only, and the picture says so: its words name
 * pages written, never pages touched, when no run has accessed sets.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "plot.h"
#include "hvmtrace/trace_input.h"

/* One run's two lines: x, written, accessed; have_* where the interval holds that set. */
struct wss_lines {
	double *x, *w, *a;
	bool *hw, *ha, any_w, any_a;
};

static int lines_of(struct wss_lines *l, const struct trace_series *s, double *top)
{
	double mib = s->page_size / 1048576.0;

	l->x = calloc(s->niv, sizeof(double));
	l->w = calloc(s->niv, sizeof(double));
	l->a = calloc(s->niv, sizeof(double));
	l->hw = calloc(s->niv, sizeof(bool));
	l->ha = calloc(s->niv, sizeof(bool));
	if (!l->x || !l->w || !l->a || !l->hw || !l->ha)
		return -1;
	for (uint64_t i = 0; i < s->niv; i++) {
		l->x[i] = (s->iv[i].t0 + s->iv[i].t1) / 2;
		l->any_w |= l->hw[i] = s->iv[i].flags & HVT_IV_WRITTEN;
		l->any_a |= l->ha[i] = s->iv[i].flags & HVT_IV_ACCESSED;
		l->w[i] = s->iv[i].written * mib;
		l->a[i] = s->iv[i].accessed * mib;
		*top = fmax(*top, fmax(l->hw[i] ? l->w[i] : 0, l->ha[i] ? l->a[i] : 0));
	}
	return 0;
}

static void lines_free(struct wss_lines *l)
{
	free(l->x);
	free(l->w);
	free(l->a);
	free(l->hw);
	free(l->ha);
}

/* Where some runs have accessed sets and others not: which not, in one note. */
static void note_missing_accessed(struct plot *p, const struct plot_runs *r, const struct wss_lines *l,
				  bool any_a)
{
	char what[256];
	int at = 0;

	if (!any_a) {
		at = snprintf(what, sizeof(what), "accessed pages: not available (mode %s)",
			      hvt_mode_name(r->s[0].meta->mode));
	} else {
		for (size_t i = 0; i < r->n && at < (int)sizeof(what); i++)
			if (!l[i].any_a)
				at += snprintf(what + at, sizeof(what) - at, "%s%s",
					       at ? ", " : "no accessed pages in ", plot_run_name(&r->s[i]));
	}
	if (at)
		unavailable(p, what);
}

int plot_wss(const struct plot_args *a)
{
	struct plot_runs r;
	struct plot p;
	struct wss_lines *l = NULL;
	char sub[1024], title[96], name[160];
	double top = 0, end = 0, start = INFINITY;
	bool any_a = false, nomem, several = a->traces.n > 1;
	int rc;

	if (plot_open(&p, "plot", a->out, a->width, a->height, 24))
		return TRACE_USAGE;
	rc = plot_runs_load(&r, a, NULL, NULL);
	if (rc) {
		plot_abandon(&p, a->out);
		return rc;
	}
	l = calloc(r.n, sizeof(*l));
	nomem = !l;
	for (size_t i = 0; !nomem && i < r.n; i++) {
		nomem = lines_of(&l[i], &r.s[i], &top) != 0;
		any_a |= l[i].any_a;
		start = fmin(start, r.s[i].iv[0].t0);
		end = fmax(end, r.s[i].iv[r.s[i].niv - 1].t1);
	}
	if (nomem) {
		fprintf(stderr, "hvmtrace plot: out of memory for the working-set lines\n");
		for (size_t i = 0; l && i < r.n; i++)
			lines_free(&l[i]);
		free(l);
		plot_runs_fini(&r);
		plot_abandon(&p, a->out);
		return TRACE_OUTPUT_FAILED;
	}
	plot_runs_describe(&r, &a->sel, sub, sizeof(sub));
	/* Only what the traces hold: a dirty-log trace knows written pages, not what was touched. */
	snprintf(title, sizeof(title), "%s%s",
		 any_a ? "Working set per interval" : "Pages written per interval",
		 several ? ", runs side by side"
		 : any_a ? ""
			 : " (written pages only)");
	plot_title(&p, title, sub);
	plot_axes(&p, several ? start : r.s[0].iv[0].t0, several ? end : r.s[0].iv[r.s[0].niv - 1].t1, 0,
		  top * 1.1, several ? "time since each run's start (s)" : "time since the trace's start (s)",
		  any_a ? "pages touched in the interval (MiB)" : "pages written in the interval (MiB)",
		  plot_fmt_plain, plot_fmt_plain);
	cairo_save(p.cr);
	clip_area(&p);
	for (size_t i = 0; i < r.n; i++) {
		struct rgb cw = several ? plot_palette(i) : HEAT_WRITTEN, ca = several ? cw : HEAT_ACCESSED;

		if (l[i].any_a)
			polyline(&p, l[i].x, l[i].a, l[i].ha, r.s[i].niv, ca, 2, several ? 6 : 0);
		if (l[i].any_w)
			polyline(&p, l[i].x, l[i].w, l[i].hw, r.s[i].niv, cw, 2, 0);
	}
	cairo_restore(p.cr);
	for (size_t i = 0; i < r.n; i++) {
		struct rgb cw = several ? plot_palette(i) : HEAT_WRITTEN, ca = several ? cw : HEAT_ACCESSED;

		snprintf(name, sizeof(name), "%s%swritten", several ? plot_run_name(&r.s[i]) : "",
			 several ? ": " : "");
		if (l[i].any_w)
			plot_legend(&p, cw, 0, name);
		snprintf(name, sizeof(name), "%s%saccessed%s", several ? plot_run_name(&r.s[i]) : "",
			 several ? ": " : "", several ? " (dashed)" : " (reads and writes)");
		if (l[i].any_a)
			plot_legend(&p, ca, several ? 6 : 0, name);
	}
	note_missing_accessed(&p, &r, l, any_a);
	for (size_t i = 0; i < r.n; i++)
		lines_free(&l[i]);
	free(l);
	rc = plot_finish(&p, a->out, "wss", r.incomplete ? TRACE_INCOMPLETE : 0);
	plot_runs_fini(&r);
	return rc;
}
