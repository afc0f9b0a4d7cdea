/* SPDX-License-Identifier: MIT */
/* hvmtrace plot: one function per kind of picture (docs/plots.md). */
#ifndef TRACER_PLOT_H
#define TRACER_PLOT_H

#include "plot_draw.h"
#include "hvmtrace/options.h"
#include "hvmtrace/trace_series.h"

struct plot_args {
	const char *trace, *out;    /* trace: the first of traces */
	struct hvt_operands traces; /* wss and cdf: several runs side by side */
	struct hvt_selection sel;
	int width, height;
	/* heatmap --color-by owner: export's --by and --owners, the top writers given hues */
	bool color_by_owner;
	const char *by, *owners;
	int top;
};

/* The colours of the heatmap, which its test looks for in the PNG (docs/plots.md). */
#define HEAT_WRITTEN  ((struct rgb){0.80, 0.10, 0.10})
#define HEAT_ACCESSED ((struct rgb){0.15, 0.40, 0.80})

/* Each returns the command's exit status (enum trace_cmd_exit). */
int plot_heatmap(const struct plot_args *a);
int plot_bw(const struct plot_args *a);
int plot_wss(const struct plot_args *a);
int plot_cdf(const struct plot_args *a);

/* "VM 'demo' · mode dirty-log · 1 s intervals · intervals 3-9 (2.000-9.000 s) · GFNs 0x0-0xfff · demo.hvt
 * (incomplete)", for subtitles: the selection drawn, with the GFNs when --range cut them. */
void plot_describe(const struct trace_series *s, const struct hvt_selection *sel, char *buf, int len);

/* What the line charts share (plot_series.c). */
/* A line through (x[i], y[i]), broken where have[i] is false (have NULL: never); dashed > 0: dash length. */
void polyline(struct plot *p, const double *x, const double *y, const bool *have, uint64_t n, struct rgb c,
	      double width, double dashed);
void clip_area(struct plot *p);
void unavailable(struct plot *p, const char *what); /* a grey note at the top of the area */
/* Writes the picture and prints its scales; returns rc, or TRACE_OUTPUT_FAILED. */
int plot_finish(struct plot *p, const char *out, const char *kind, int rc);
/* A picture not drawn: the surface goes, and so does the half-made output file. */
void plot_abandon(struct plot *p, const char *out);

/* The runs of a picture that compares traces (plot_runs.c): each loaded as one trace is. */
struct plot_runs {
	struct trace_series *s;
	size_t n;
	bool incomplete; /* some run's trace ended early (each said so) */
};
/* Loads every trace (hook as trace_series_load's, ctx[i] for run i; NULL: none): 0, or the exit status
 * after one line naming the trace, nothing kept. */
int plot_runs_load(struct plot_runs *r, const struct plot_args *a, series_hook hook, void **ctx);
void plot_runs_fini(struct plot_runs *r);
/* The subtitle of several runs; of one, plot_describe's. */
void plot_runs_describe(const struct plot_runs *r, const struct hvt_selection *sel, char *buf, int len);
/* "vm-2.hvt": a run's name in a legend. */
const char *plot_run_name(const struct trace_series *s);

#endif
