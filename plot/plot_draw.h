/* SPDX-License-Identifier: MIT */
/* The frame every `hvmtrace plot` picture shares, drawn with cairo: canvas, title, axes with ticks and
 * units, legend. PNG or SVG by the output's name. */
#ifndef TRACER_PLOT_DRAW_H
#define TRACER_PLOT_DRAW_H

#include <cairo.h>
#include <stdbool.h>

#include "plot_svg_text.h"

struct plot {
	const char *path;
	bool svg;
	cairo_surface_t *surface;
	cairo_t *cr;
	int width, height;
	double x0, y0, x1, y1;         /* the plot area: x0 left, y1 bottom (y grows downwards) */
	double lo_x, hi_x, lo_y, hi_y; /* data values at the area's edges */
	int legend_n;
	double legend_x;        /* where the next legend entry ends */
	struct svg_texts texts; /* SVG: the words, written as <text> (plot_svg_text.h) */
};

struct rgb {
	double r, g, b;
};

/* Opens a canvas for path (.png or .svg); says why not and returns -1. right: room for labels right of
 * the area. */
int plot_open(struct plot *p, const char *cmd, const char *path, int width, int height, double right);
/* Writes the picture; says why not and returns -1. Frees p in every case. */
int plot_close(struct plot *p, const char *cmd);

void plot_title(struct plot *p, const char *title, const char *subtitle);
/* Sets the data range and draws both axes: ticks at round values, labels from fmt_x/fmt_y (value -> text),
 * axis names with their units. fmt_y NULL: no y ticks (the caller draws them with plot_y_tick). */
typedef void (*plot_fmt)(double v, double step, char *buf, int len);
void plot_axes(struct plot *p, double lo_x, double hi_x, double lo_y, double hi_y, const char *name_x,
	       const char *name_y, plot_fmt fmt_x, plot_fmt fmt_y);
double plot_px(const struct plot *p, double x); /* data -> device */
void plot_y_tick(struct plot *p, double py, const char *label);
/* A round step (1, 2, 5 × 10^k; powers of two when binary) giving about n ticks over span. */
double plot_tick_step(double span, int n, bool binary);
double plot_py(const struct plot *p, double y);
/* One more legend entry, right to left above the area: a swatch (line when dashed >= 0, box when < 0). */
void plot_legend(struct plot *p, struct rgb c, double dashed, const char *label);
void plot_text(struct plot *p, double x, double y, double size, const char *text, double align_x,
	       double align_y);
void plot_set_rgb(struct plot *p, struct rgb c);

/* Plain numbers, with the precision the tick step needs. */
void plot_fmt_plain(double v, double step, char *buf, int len);
/* Byte amounts (binary units), e.g. for GPAs: "512 MiB", "3 GiB". */
void plot_fmt_bytes(double v, double step, char *buf, int len);

/* A palette for series: n distinct colours. */
struct rgb plot_palette(unsigned i);

#endif
