// SPDX-License-Identifier: MIT
/*
 * hvmtrace plot heatmap: guest-physical address (up) × time (right), as the seed paper's figure 6. A
 * pixel row holds `ppr` pages; a pixel column the intervals whose time it covers. Of the row's RAM pages
 * (averaged over the column's intervals), the share written and the share accessed but not written: the
 * larger picks the colour, its square root the intensity (so that a few pages in a large row stay
 * visible, and a fully written row has exactly HEAT_WRITTEN); white when untouched, hatched grey where the
 * guest has no RAM.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"
#include "../tracer/trace_input.h"

struct heat {
	uint64_t ppr, nrows; /* pages per row, rows */
	uint64_t cap;        /* intervals the arrays hold */
	uint32_t *w, *a;     /* [interval][row]: pages written / accessed */
	uint32_t *cur;       /* the row the run callback adds to */
	uint64_t first;
};

static void add_run(void *ctx, uint64_t gfn, uint64_t count)
{
	struct heat *h = ctx;

	while (count) {
		uint64_t row = (gfn - h->first) / h->ppr, room = h->ppr - (gfn - h->first) % h->ppr;
		uint64_t n = count < room ? count : room;

		h->cur[row] += n;
		gfn += n;
		count -= n;
	}
}

static int bin_interval(void *ctx, const struct trace_series *s, const struct hvt_interval *iv,
			const struct hvt_layout *l, uint64_t i)
{
	struct heat *h = ctx;

	if (i >= h->cap) {
		uint64_t cap = h->cap ? 2 * h->cap : 64;
		uint32_t *w = realloc(h->w, cap * h->nrows * sizeof(*w)), *a;

		if (!w)
			return TRACE_OUTPUT_FAILED;
		h->w = w;
		a = realloc(h->a, cap * h->nrows * sizeof(*a));
		if (!a)
			return TRACE_OUTPUT_FAILED;
		h->a = a;
		h->cap = cap;
	}
	memset(h->w + i * h->nrows, 0, h->nrows * sizeof(*h->w));
	memset(h->a + i * h->nrows, 0, h->nrows * sizeof(*h->a));
	h->first = s->gfn_first;
	if (iv->flags & HVT_IV_WRITTEN) {
		h->cur = h->w + i * h->nrows;
		series_each_run(iv->written, l, s->gfn_first, s->gfn_end, add_run, h);
	}
	if (iv->flags & HVT_IV_ACCESSED) {
		h->cur = h->a + i * h->nrows;
		series_each_run(iv->accessed, l, s->gfn_first, s->gfn_end, add_run, h);
	}
	return 0;
}

/* Pages of RAM in GFNs [a, b). */
static uint64_t ram_pages(const struct trace_series *s, uint64_t a, uint64_t b)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < s->nslots; i++) {
		uint64_t x = s->slots[i].first > a ? s->slots[i].first : a;
		uint64_t y = s->slots[i].end < b ? s->slots[i].end : b;

		n += y > x ? y - x : 0;
	}
	return n;
}

static uint32_t mix(struct rgb c, double v)
{
	uint32_t r = lround(255 * (1 - v + v * c.r)), g = lround(255 * (1 - v + v * c.g));
	uint32_t b = lround(255 * (1 - v + v * c.b));

	return r << 16 | g << 8 | b;
}

/* The picture's pixels: one column per pixel of the area's width, one row per data row. */
static cairo_surface_t *render(const struct trace_series *s, const struct heat *h, const struct plot *p)
{
	int cols = (int)(p->x1 - p->x0), rows = (int)h->nrows;
	double *w = calloc((size_t)cols * rows, sizeof(double)),
	       *a = calloc((size_t)cols * rows, sizeof(double));
	unsigned *n = calloc(cols, sizeof(unsigned));
	uint64_t *ram = calloc(rows, sizeof(uint64_t));
	cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, cols, rows);
	unsigned char *data = cairo_image_surface_get_data(img);
	int stride = cairo_image_surface_get_stride(img);

	if (!w || !a || !n || !ram)
		goto out;
	for (uint64_t i = 0; i < s->niv; i++) {
		int c0 = (int)floor(plot_px(p, s->iv[i].t0) - p->x0),
		    c1 = (int)ceil(plot_px(p, s->iv[i].t1) - p->x0);

		c0 = c0 < 0 ? 0 : c0 >= cols ? cols - 1 : c0;
		c1 = c1 <= c0 ? c0 + 1 : c1 > cols ? cols : c1;
		for (int c = c0; c < c1; c++) {
			n[c]++;
			for (int r = 0; r < rows; r++) {
				w[(size_t)c * rows + r] += h->w[i * h->nrows + r];
				a[(size_t)c * rows + r] += h->a[i * h->nrows + r];
			}
		}
	}
	for (int r = 0; r < rows; r++)
		ram[r] = ram_pages(s, s->gfn_first + r * h->ppr, s->gfn_first + (r + 1) * h->ppr);
	cairo_surface_flush(img);
	for (int r = 0; r < rows; r++) {
		uint32_t *line =
		    (uint32_t *)(data + (size_t)(rows - 1 - r) * stride); /* low GFNs at the bottom */

		for (int c = 0; c < cols; c++) {
			double den = (double)n[c] * ram[r], wv = w[(size_t)c * rows + r],
			       av = a[(size_t)c * rows + r];

			double wf = fmin(1, wv / den), af = fmin(1, fmax(0, av - wv) / den);

			if (!ram[r])
				line[c] = ((c + r) / 3) % 2 ? 0xd8d8d8 : 0xf0f0f0; /* hatched: no RAM here */
			else if (wv <= 0 && av <= 0)
				line[c] = 0xffffff;
			else if (wf >= af)
				line[c] = mix(HEAT_WRITTEN, 0.12 + 0.88 * sqrt(wf));
			else
				line[c] = mix(HEAT_ACCESSED, 0.12 + 0.88 * sqrt(af));
		}
	}
	cairo_surface_mark_dirty(img);
out:
	free(w);
	free(a);
	free(n);
	free(ram);
	return img;
}

/* Memslot boundaries as dashed lines, named right of the area; gaps between slots named. */
static void mark_slots(struct plot *p, const struct trace_series *s)
{
	double dash[] = {4, 3};
	uint64_t ps = s->page_size, four_gib = (4ull << 30) / ps;

	cairo_set_line_width(p->cr, 1);
	for (uint32_t i = 0; i < s->nslots; i++) {
		const struct series_slot *sl = &s->slots[i];
		uint64_t a = sl->first > s->gfn_first ? sl->first : s->gfn_first;
		uint64_t b = sl->end < s->gfn_end ? sl->end : s->gfn_end;
		char label[96];

		if (a >= b)
			continue;
		cairo_set_source_rgb(p->cr, 0.2, 0.2, 0.2);
		cairo_set_dash(p->cr, dash, 2, 0);
		for (int k = 0; k < 2; k++) {
			double y = floor(plot_py(p, (double)(k ? b : a) * ps)) + 0.5;

			cairo_move_to(p->cr, p->x0, y);
			cairo_line_to(p->cr, p->x1 + 8, y);
			cairo_stroke(p->cr);
		}
		cairo_set_dash(p->cr, NULL, 0, 0);
		snprintf(label, sizeof(label), "slot %s", sl->name[0] ? sl->name : "(unnamed)");
		plot_text(p, p->x1 + 12, plot_py(p, (a + b) / 2.0 * ps), 10, label, 0, 0.5);
		if (i + 1 < s->nslots && s->slots[i + 1].first > sl->end && sl->end >= s->gfn_first &&
		    sl->end < s->gfn_end) {
			uint64_t ge = s->slots[i + 1].first < s->gfn_end ? s->slots[i + 1].first : s->gfn_end;

			cairo_set_source_rgb(p->cr, 0.35, 0.35, 0.35);
			plot_text(p, p->x1 + 12, plot_py(p, (sl->end + ge) / 2.0 * ps), 10,
				  s->slots[i + 1].first == four_gib ? "PCI hole (no RAM)" : "no RAM", 0, 0.5);
		}
	}
}

int plot_heatmap(const struct plot_args *a)
{
	struct trace_series s;
	struct heat h = {0};
	struct plot p;
	cairo_surface_t *img;
	char sub[256], title[160];
	int rc, height;
	uint64_t span;

	if (plot_open(&p, "plot", a->out, a->width, a->height, 170))
		return TRACE_USAGE;
	height = (int)(p.y1 - p.y0);
	rc = trace_series_open(&s, "plot", a->trace, &a->sel);
	if (rc)
		goto fail;
	span = s.gfn_end - s.gfn_first;
	h.ppr = (span + height - 1) / height;
	h.nrows = (span + h.ppr - 1) / h.ppr;
	rc = trace_series_walk(&s, &a->sel, bin_interval, &h);
	if (rc && rc != TRACE_INCOMPLETE)
		goto fail;
	plot_describe(&s, sub, sizeof(sub));
	snprintf(title, sizeof(title), "Pages written%s over time, by guest-physical address",
		 s.meta->accessed_available ? " and accessed" : "");
	plot_title(&p, title, sub);
	p.lo_x = s.iv[0].t0;
	p.hi_x = s.iv[s.niv - 1].t1;
	img = render(&s, &h, &p);
	plot_axes(&p, s.iv[0].t0, s.iv[s.niv - 1].t1, (double)s.gfn_first * s.page_size,
		  (double)(s.gfn_first + h.nrows * h.ppr) * s.page_size, "time since the trace's start (s)",
		  "guest-physical address", plot_fmt_plain, plot_fmt_bytes);
	cairo_save(p.cr);
	cairo_rectangle(p.cr, p.x0 + 1, p.y0 + 1, p.x1 - p.x0 - 1, p.y1 - p.y0 - 1);
	cairo_clip(p.cr);
	cairo_translate(p.cr, p.x0, p.y0);
	cairo_scale(p.cr, 1, (p.y1 - p.y0) / (double)h.nrows);
	cairo_set_source_surface(p.cr, img, 0, 0);
	cairo_pattern_set_filter(cairo_get_source(p.cr), CAIRO_FILTER_NEAREST);
	cairo_paint(p.cr);
	cairo_restore(p.cr);
	cairo_surface_destroy(img);
	mark_slots(&p, &s);
	plot_legend(&p, HEAT_WRITTEN, -1, "written");
	if (s.meta->accessed_available)
		plot_legend(&p, HEAT_ACCESSED, -1, "accessed, not written");
	snprintf(sub, sizeof(sub), "one row = %" PRIu64 " page%s; paler = fewer of its pages", h.ppr,
		 h.ppr == 1 ? "" : "s");
	cairo_set_source_rgb(p.cr, 0.3, 0.3, 0.3);
	plot_text(&p, p.x1, p.y1 + 36, 10, sub, 1, 0.5);
	if (plot_close(&p, "plot")) {
		rc = TRACE_OUTPUT_FAILED;
	} else {
		/* What a reader of the picture (and its test) needs to find pages and times in it. */
		printf("hvmtrace plot: wrote %s: heatmap %dx%d px; area x=%d y=%d w=%d h=%d; gfn 0x%" PRIx64
		       "-0x%" PRIx64 " bottom to top, %" PRIu64
		       " pages per row; time %.3f-%.3f s left to right\n",
		       a->out, a->width, a->height, (int)p.x0, (int)p.y0, (int)(p.x1 - p.x0), height,
		       s.gfn_first, s.gfn_first + h.nrows * h.ppr, h.ppr, s.iv[0].t0, s.iv[s.niv - 1].t1);
	}
	trace_series_fini(&s);
	free(h.w);
	free(h.a);
	return rc;
fail:
	trace_series_fini(&s);
	cairo_destroy(p.cr);
	cairo_surface_destroy(p.surface);
	remove(a->out);
	free(h.w);
	free(h.a);
	return rc;
}
