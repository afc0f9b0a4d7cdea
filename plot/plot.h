/* SPDX-License-Identifier: MIT */
/* hvmtrace plot: one function per kind of picture (docs/plots.md). */
#ifndef TRACER_PLOT_H
#define TRACER_PLOT_H

#include "plot_draw.h"
#include "hvmtrace/trace_series.h"

struct plot_args {
	const char *trace, *out;
	struct hvt_selection sel;
	int width, height;
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

#endif
