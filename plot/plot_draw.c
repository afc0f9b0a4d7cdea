// SPDX-License-Identifier: MIT
#include <cairo-svg.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plot_draw.h"

#define FONT "DejaVu Sans"

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcasecmp(s + n - m, tail);
}

int plot_open(struct plot *p, const char *cmd, const char *path, int width, int height, double right)
{
	FILE *f;

	memset(p, 0, sizeof(*p));
	p->path = path;
	p->width = width;
	p->height = height;
	if (ends_with(path, ".svg"))
		p->svg = true;
	else if (!ends_with(path, ".png")) {
		fprintf(stderr, "hvmtrace %s: -o %s: the name must end in .png or .svg\n", cmd, path);
		return -1;
	}
	/* Say now, before the trace is read, when the output cannot be written. */
	f = fopen(path, "we");
	if (!f) {
		fprintf(stderr, "hvmtrace %s: cannot create %s: %s\n", cmd, path, strerror(errno));
		return -1;
	}
	fclose(f);
	p->surface = p->svg ? cairo_svg_surface_create(path, width, height)
			    : cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
	p->cr = cairo_create(p->surface);
	cairo_set_source_rgb(p->cr, 1, 1, 1);
	cairo_paint(p->cr);
	cairo_select_font_face(p->cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	p->x0 = 96;
	p->y0 = 84;
	p->x1 = width - right;
	p->y1 = height - 60;
	return 0;
}

int plot_close(struct plot *p, const char *cmd)
{
	cairo_status_t st;
	const char *why = NULL;

	cairo_destroy(p->cr);
	if (p->svg) {
		cairo_surface_finish(p->surface);
		st = cairo_surface_status(p->surface);
	} else {
		st = cairo_surface_write_to_png(p->surface, p->path);
	}
	cairo_surface_destroy(p->surface);
	if (st != CAIRO_STATUS_SUCCESS)
		why = cairo_status_to_string(st);
	else if (p->svg && svg_text_write(&p->texts, p->path, &why) == 0)
		why = NULL;
	svg_text_free(&p->texts);
	if (why) {
		fprintf(stderr, "hvmtrace %s: writing %s: %s\n", cmd, p->path, why);
		unlink(p->path);
		return -1;
	}
	return 0;
}

void plot_set_rgb(struct plot *p, struct rgb c)
{
	cairo_set_source_rgb(p->cr, c.r, c.g, c.b);
}

void plot_text(struct plot *p, double x, double y, double size, const char *text, double align_x,
	       double align_y)
{
	cairo_text_extents_t e;

	if (!*text)
		return;
	cairo_set_font_size(p->cr, size);
	cairo_text_extents(p->cr, text, &e);
	x -= e.x_advance * align_x;
	y += size * 0.35 - size * (align_y - 0.5);
	if (p->svg) {
		svg_text_add(&p->texts, p->cr, x, y, size, text);
		return;
	}
	cairo_move_to(p->cr, x, y);
	cairo_show_text(p->cr, text);
}

void plot_title(struct plot *p, const char *title, const char *subtitle)
{
	cairo_set_source_rgb(p->cr, 0, 0, 0);
	cairo_select_font_face(p->cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
	plot_text(p, p->width / 2.0, 20, 16, title, 0.5, 0.5);
	cairo_select_font_face(p->cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_source_rgb(p->cr, 0.3, 0.3, 0.3);
	if (subtitle)
		plot_text(p, p->width / 2.0, 42, 11, subtitle, 0.5, 0.5);
}

double plot_px(const struct plot *p, double x)
{
	return p->x0 + (x - p->lo_x) / (p->hi_x - p->lo_x) * (p->x1 - p->x0);
}

double plot_py(const struct plot *p, double y)
{
	return p->y1 - (y - p->lo_y) / (p->hi_y - p->lo_y) * (p->y1 - p->y0);
}

/* A round step (1, 2, 5 × 10^k; or powers of two for bytes) giving about n ticks over span. */
double plot_tick_step(double span, int n, bool binary)
{
	double raw = span / n, base, f;

	if (binary && raw >= 1) {
		double s = 1;

		while (s * 2 <= raw)
			s *= 2;
		return s * 2 <= raw * 1.5 ? s * 2 : s;
	}
	base = pow(10, floor(log10(raw)));
	f = raw / base;
	return base * (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10);
}

void plot_fmt_plain(double v, double step, char *buf, int len)
{
	int digits = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);

	if (fabs(v) >= 1e6 && step >= 1e5)
		snprintf(buf, len, "%gM", v / 1e6);
	else if (fabs(v) >= 1e3 && step >= 100)
		snprintf(buf, len, "%gk", v / 1e3);
	else
		snprintf(buf, len, "%.*f", digits, v);
}

void plot_fmt_bytes(double v, double step, char *buf, int len)
{
	static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;
	double s = step;

	while (s >= 1024 && u < 4) {
		s /= 1024;
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%g %s", v, units[u]);
}

void plot_y_tick(struct plot *p, double py, const char *label)
{
	cairo_set_source_rgb(p->cr, 0, 0, 0);
	cairo_set_line_width(p->cr, 1);
	cairo_move_to(p->cr, p->x0 - 4, floor(py) + 0.5);
	cairo_line_to(p->cr, p->x0, floor(py) + 0.5);
	cairo_stroke(p->cr);
	plot_text(p, p->x0 - 6, py, 11, label, 1, 0.5);
}

static void grid_line(struct plot *p, double x0, double y0, double x1, double y1)
{
	cairo_set_source_rgb(p->cr, 0.88, 0.88, 0.88);
	cairo_set_line_width(p->cr, 1);
	cairo_move_to(p->cr, x0, y0);
	cairo_line_to(p->cr, x1, y1);
	cairo_stroke(p->cr);
}

void plot_axes(struct plot *p, double lo_x, double hi_x, double lo_y, double hi_y, const char *name_x,
	       const char *name_y, plot_fmt fmt_x, plot_fmt fmt_y)
{
	double sx, sy;
	char buf[64];

	if (hi_x <= lo_x)
		hi_x = lo_x + 1;
	if (hi_y <= lo_y)
		hi_y = lo_y + 1;
	p->lo_x = lo_x;
	p->hi_x = hi_x;
	p->lo_y = lo_y;
	p->hi_y = hi_y;
	sx = plot_tick_step(hi_x - lo_x, 8, fmt_x == plot_fmt_bytes);
	sy = plot_tick_step(hi_y - lo_y, 6, fmt_y == plot_fmt_bytes);
	for (double x = ceil(lo_x / sx) * sx; x <= hi_x + sx * 1e-9; x += sx) {
		double px = plot_px(p, x);

		grid_line(p, px, p->y0, px, p->y1);
		cairo_set_source_rgb(p->cr, 0, 0, 0);
		fmt_x(x, sx, buf, sizeof(buf));
		plot_text(p, px, p->y1 + 14, 11, buf, 0.5, 0.5);
	}
	for (double y = ceil(lo_y / sy) * sy; fmt_y && y <= hi_y + sy * 1e-9; y += sy) {
		double py = plot_py(p, y);

		grid_line(p, p->x0, py, p->x1, py);
		cairo_set_source_rgb(p->cr, 0, 0, 0);
		fmt_y(y, sy, buf, sizeof(buf));
		plot_text(p, p->x0 - 6, py, 11, buf, 1, 0.5);
	}
	cairo_set_source_rgb(p->cr, 0, 0, 0);
	cairo_set_line_width(p->cr, 1);
	cairo_rectangle(p->cr, p->x0 + 0.5, p->y0 + 0.5, p->x1 - p->x0, p->y1 - p->y0);
	cairo_stroke(p->cr);
	plot_text(p, (p->x0 + p->x1) / 2, p->y1 + 36, 12, name_x, 0.5, 0.5);
	cairo_save(p->cr);
	cairo_translate(p->cr, 20, (p->y0 + p->y1) / 2);
	cairo_rotate(p->cr, -M_PI / 2);
	plot_text(p, 0, 0, 12, name_y, 0.5, 0.5);
	cairo_restore(p->cr);
}

void plot_legend(struct plot *p, struct rgb c, double dashed, const char *label)
{
	double y = p->y0 - 12, x;
	cairo_text_extents_t e;

	cairo_set_font_size(p->cr, 11);
	cairo_text_extents(p->cr, label, &e);
	if (!p->legend_n++)
		p->legend_x = p->x1;
	x = p->legend_x - 28 - e.x_advance;
	p->legend_x = x - 18;
	plot_set_rgb(p, c);
	if (dashed < 0) {
		cairo_rectangle(p->cr, x, y - 5, 22, 10);
		cairo_fill(p->cr);
	} else {
		double d[] = {dashed};

		cairo_set_line_width(p->cr, 2);
		cairo_set_dash(p->cr, d, dashed > 0, 0);
		cairo_move_to(p->cr, x, y);
		cairo_line_to(p->cr, x + 22, y);
		cairo_stroke(p->cr);
		cairo_set_dash(p->cr, NULL, 0, 0);
	}
	cairo_set_source_rgb(p->cr, 0, 0, 0);
	plot_text(p, x + 28, y, 11, label, 0, 0.5);
}

struct rgb plot_palette(unsigned i)
{
	static const struct rgb pal[] = {
	    {0.12, 0.47, 0.71}, {0.84, 0.15, 0.16}, {0.17, 0.63, 0.17}, {0.58, 0.40, 0.74},
	    {1.00, 0.50, 0.05}, {0.55, 0.34, 0.29}, {0.89, 0.47, 0.76}, {0.50, 0.50, 0.50},
	};

	return pal[i % (sizeof(pal) / sizeof(pal[0]))];
}
