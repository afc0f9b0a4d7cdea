// SPDX-License-Identifier: MIT
/*
 * hvmtrace plot heatmap: guest-physical address (up) × time (right), as the seed paper's figure 6. The
 * address axis is cut into segments as report --html cuts it (gfn_bins.h): RAM (with the small holes
 * between slots) drawn to scale, and each large gap without RAM (the PCI hole, the space below a device's
 * RAM high up) squeezed into a hatched band of a few rows. A pixel row of a RAM segment holds a fixed
 * number of pages; a pixel column the intervals whose time it covers. Of the row's RAM pages (averaged over
 * the column's intervals), the share written and the share accessed but not written: the larger picks the
 * colour, its place on the colour bar's scale the intensity (the largest share drawn is the full colour,
 * exactly HEAT_WRITTEN for a fully written row); white when untouched, hatched grey where there is no RAM.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/gfn_bins.h"
#include "hvmtrace/trace_input.h"
#include "hvmtrace/util.h"
#include "plot.h"
#include "plot_owners.h"

struct heat {
	struct hvt_gfn_bins bins;       /* a row is a bin; a squeezed gap a band of rows */
	uint64_t cap;                   /* intervals the arrays hold */
	uint32_t *w, *a;                /* [interval][row]: pages written / accessed */
	struct plot_owners *own;        /* --color-by owner: the owners of the written pages */
	const struct owner_line **line; /* [interval]: its owners (NULL: none written) */
};

/* The rows of [s->gfn_first, s->gfn_end) for `height` pixels: each gap squeezed into gap_rows. */
static void segment(struct heat *h, const struct trace_series *s, uint64_t height)
{
	struct hvt_gfn_bins *b = &h->bins;
	uint64_t gap_rows = height / 40 > 8 ? height / 40 : 8, ppr;

	hvt_gfn_bins_segment(b, s->slots, s->nslots, s->gfn_first, s->gfn_end);
	if (b->ngaps * gap_rows * 2 > height)
		gap_rows = height / (2 * b->ngaps) ? height / (2 * b->ngaps) : 1;
	ppr = (b->scale_pages + (height - b->ngaps * gap_rows) - 1) / (height - b->ngaps * gap_rows);
	hvt_gfn_bins_size(b, ppr ? ppr : 1, gap_rows);
}

/* The y of a GFN's row edge (bottom of its row), in device space. */
static double gfn_y(const struct heat *h, const struct plot *p, uint64_t gfn)
{
	const struct hvt_gfn_bins *b = &h->bins;
	const struct hvt_bin_seg *g = hvt_gfn_bins_seg_of(b, gfn);
	double row = !g ? b->nbins : g->gap ? g->bin0 : g->bin0 + (double)(gfn - g->first) / b->pages_per_bin;

	return p->y1 - row / b->nbins * (p->y1 - p->y0);
}

static int bin_interval(void *ctx, const struct trace_series *s, const struct hvt_iv_runs *ir,
			const struct hvt_layout *l, uint64_t i)
{
	struct heat *h = ctx;
	uint64_t nrows = h->bins.nbins;

	(void)l;
	(void)s;
	if (i >= h->cap) {
		uint64_t cap = h->cap ? 2 * h->cap : 64;
		uint32_t *w = realloc(h->w, cap * nrows * sizeof(*w)), *a;

		if (!w)
			return TRACE_OUTPUT_FAILED;
		h->w = w;
		a = realloc(h->a, cap * nrows * sizeof(*a));
		if (!a)
			return TRACE_OUTPUT_FAILED;
		h->a = a;
		if (h->own) {
			const struct owner_line **line = realloc(h->line, cap * sizeof(*line));

			if (!line)
				return TRACE_OUTPUT_FAILED;
			h->line = line;
		}
		h->cap = cap;
	}
	memset(h->w + i * nrows, 0, nrows * sizeof(*h->w));
	memset(h->a + i * nrows, 0, nrows * sizeof(*h->a));
	if (ir->hdr.flags & HVT_IV_WRITTEN)
		hvt_gfn_bins_add(&h->bins, &ir->set[0], h->w + i * nrows);
	if (h->own) {
		h->line[i] = plot_owners_line(h->own, ir->hdr.seq);
		if (!h->line[i] && ir->set[0].pages) {
			fprintf(stderr,
				"hvmtrace plot: hvmtrace export gave no owners for interval %" PRIu64 "\n",
				ir->hdr.seq);
			return TRACE_USAGE;
		}
	}
	if (ir->hdr.flags & HVT_IV_ACCESSED)
		hvt_gfn_bins_add(&h->bins, &ir->set[1], h->a + i * nrows);
	return 0;
}

static uint32_t mix(struct rgb c, double v)
{
	uint32_t r = lround(255 * (1 - v + v * c.r)), g = lround(255 * (1 - v + v * c.g));
	uint32_t b = lround(255 * (1 - v + v * c.b));

	return r << 16 | g << 8 | b;
}

/*
 * The colour scale: a pixel's share of its row's pages (written, or accessed only) from the smallest share
 * drawn (lo) to the largest (hi), pale to full. Logarithmic when they span a decade or more, so that a
 * 16x difference among sparse rows is not two nearly equal pinks; linear otherwise.
 */
struct scale {
	double lo, hi;
	bool log;
	int bar_x, bar_y, bar_h; /* where colour_bar drew the written bar: its top pixel row is bar_y */
};

static double intensity(const struct scale *sc, double v)
{
	double t = sc->hi <= sc->lo ? 1 : sc->log ? log(v / sc->lo) / log(sc->hi / sc->lo) : v / sc->hi;

	return 0.15 + 0.85 * fmin(1, fmax(0, t));
}

/* The pixel columns [*c0, *c1) interval i covers (at least one). */
static void columns(const struct trace_series *s, const struct plot *p, uint64_t i, int cols, int *c0,
		    int *c1)
{
	int a = (int)floor(plot_px(p, s->iv[i].t0) - p->x0), b = (int)ceil(plot_px(p, s->iv[i].t1) - p->x0);

	a = a < 0 ? 0 : a >= cols ? cols - 1 : a;
	*c0 = a;
	*c1 = b <= a ? a + 1 : b > cols ? cols : b;
}

/* The slot writing most of a cell's pages (the first of equals); none counted: "no process". */
static unsigned dominant(const struct plot_owners *o, const uint32_t *cnt, int rows, int r)
{
	unsigned ns = plot_owners_nslots(o), best = o->top + OWNER_SLOT_NONE;
	uint32_t most = 0;

	for (unsigned k = 0; k < ns; k++)
		if (cnt[(size_t)k * rows + r] > most) {
			best = k;
			most = cnt[(size_t)k * rows + r];
		}
	return best;
}

/*
 * --color-by owner: dom[c * rows + r], the slot writing most pages of cell (column c, row r) over the
 * intervals the column covers. Columns are swept left to right with the pages of each slot per row of one
 * column at a time (the intervals are in time order, so those covering a column are a range [ia, ib)); a
 * column covered by the same intervals as the one before it has its counts.
 */
static int owners_of_cells(const struct trace_series *s, const struct heat *h, const struct plot *p, int cols,
			   uint8_t *dom)
{
	unsigned ns = plot_owners_nslots(h->own);
	int rows = (int)h->bins.nbins;
	uint32_t *cnt = malloc((size_t)ns * rows * sizeof(*cnt));
	uint8_t *col = malloc(rows);
	uint64_t ia = 0, ib = 0, pa = UINT64_MAX, pb = UINT64_MAX;

	if (!cnt || !col) {
		free(cnt);
		free(col);
		return -1;
	}
	for (int c = 0; c < cols; c++) {
		int c0, c1;

		for (; ia < s->niv; ia++) {
			columns(s, p, ia, cols, &c0, &c1);
			if (c1 > c)
				break;
		}
		for (ib = ib < ia ? ia : ib; ib < s->niv; ib++) {
			columns(s, p, ib, cols, &c0, &c1);
			if (c0 > c)
				break;
		}
		if (ia != pa || ib != pb) {
			memset(cnt, 0, (size_t)ns * rows * sizeof(*cnt));
			for (uint64_t i = ia; i < ib; i++) {
				const struct owner_line *l = h->line[i];

				columns(s, p, i, cols, &c0, &c1);
				for (size_t k = 0; l && c0 <= c && c < c1 && k < l->n; k++) {
					const struct owner_piece *pc = &h->own->piece[l->p0 + k];
					struct hvt_run run = {.first = pc->first, .count = pc->count};
					struct hvt_runs one = {
					    .v = &run, .n = 1, .cap = 1, .pages = pc->count};

					hvt_gfn_bins_add(&h->bins, &one,
							 cnt + (size_t)h->own->slot[pc->owner] * rows);
				}
			}
			for (int r = 0; r < rows; r++)
				col[r] = (uint8_t)dominant(h->own, cnt, rows, r);
			pa = ia;
			pb = ib;
		}
		memcpy(dom + (size_t)c * rows, col, rows);
	}
	free(cnt);
	free(col);
	return 0;
}

/* The picture's pixels: one column per pixel of the area's width, one row per data row. */
static cairo_surface_t *render(const struct trace_series *s, const struct heat *h, const struct plot *p,
			       struct scale *sc)
{
	int cols = (int)(p->x1 - p->x0), rows = (int)h->bins.nbins;
	double *w = calloc((size_t)cols * rows, sizeof(double)),
	       *a = calloc((size_t)cols * rows, sizeof(double));
	unsigned *n = calloc(cols, sizeof(unsigned));
	uint64_t *ram = calloc(rows, sizeof(uint64_t));
	uint8_t *dom = h->own ? malloc((size_t)cols * rows) : NULL;
	cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, cols, rows);
	unsigned char *data = cairo_image_surface_get_data(img);
	int stride = cairo_image_surface_get_stride(img);

	*sc = (struct scale){.lo = 1, .hi = 0}; /* set on every path: the colour bar reads it */
	if (!w || !a || !n || !ram || (h->own && (!dom || owners_of_cells(s, h, p, cols, dom))))
		goto out;
	for (uint64_t i = 0; i < s->niv; i++) {
		int c0, c1;

		columns(s, p, i, cols, &c0, &c1);
		for (int c = c0; c < c1; c++) {
			n[c]++;
			for (int r = 0; r < rows; r++) {
				w[(size_t)c * rows + r] += h->w[i * rows + r];
				a[(size_t)c * rows + r] += h->a[i * rows + r];
			}
		}
	}
	hvt_gfn_bins_ram(&h->bins, s->slots, s->nslots, ram);
	for (int c = 0; c < cols; c++)
		for (int r = 0; r < rows; r++) {
			double den = (double)n[c] * ram[r], wv = w[(size_t)c * rows + r],
			       av = a[(size_t)c * rows + r];
			double v = den > 0 ? fmin(1, fmax(wv, h->own ? 0 : av - wv) / den) : 0;

			if (v > 0) {
				sc->lo = fmin(sc->lo, v);
				sc->hi = fmax(sc->hi, v);
			}
		}
	if (sc->hi <= 0)
		sc->lo = sc->hi = 1;
	sc->log = sc->hi / sc->lo >= 10;
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
			else if (wv <= 0 && (h->own || av <= 0))
				line[c] = 0xffffff; /* by owner: the written pages only */
			else if (h->own)
				line[c] = mix(plot_owners_colour(h->own, dom[(size_t)c * rows + r]),
					      intensity(sc, wf));
			else if (wf >= af)
				line[c] = mix(HEAT_WRITTEN, intensity(sc, wf));
			else
				line[c] = mix(HEAT_ACCESSED, intensity(sc, af));
		}
	}
	cairo_surface_mark_dirty(img);
out:
	free(dom);
	free(w);
	free(a);
	free(n);
	free(ram);
	return img;
}

/* "0.1 %", "25 %": a share as the colour bar labels it. */
static void fmt_share(double v, char *buf, int len)
{
	double pct = 100 * v;

	if (pct >= 10)
		snprintf(buf, len, "%.0f %%", pct);
	else
		snprintf(buf, len, "%.2g %%", pct);
}

/* Right of the slot names: a bar per colour, pale (lo) at the bottom to full (hi) at the top, with the
 * shares at its ticks and the scale's kind in its title. */
static void colour_bar(struct plot *p, struct scale *sc, bool accessed)
{
	double x = p->x1 + 185, top = p->y0 + 30, bottom = p->y1 - 30, tick[8];
	int nticks = 0, nbars = accessed ? 2 : 1;
	char buf[32];

	sc->bar_x = (int)x;
	sc->bar_y = (int)top;
	sc->bar_h = (int)(bottom - top);

	if (sc->log) {
		for (double d = pow(10, ceil(log10(sc->lo) - 1e-9)); d <= sc->hi * (1 + 1e-9) && nticks < 8;
		     d *= 10)
			tick[nticks++] = d;
	} else {
		for (int k = 1; k <= 4; k++)
			tick[nticks++] = sc->hi * k / 4;
	}
	if (sc->log && (!nticks || tick[0] > sc->lo * 1.5))
		memmove(tick + 1, tick, sizeof(double) * (nticks < 7 ? nticks++ : 7)), tick[0] = sc->lo;
	for (int b = 0; b < nbars; b++) {
		struct rgb c = b ? HEAT_ACCESSED : HEAT_WRITTEN;

		for (double y = top; y < bottom; y++) {
			double t = (bottom - y) / (bottom - top);
			uint32_t px = mix(c, 0.15 + 0.85 * t); /* the very colours of the pixels */

			cairo_set_source_rgb(p->cr, (px >> 16) / 255.0, (px >> 8 & 0xff) / 255.0,
					     (px & 0xff) / 255.0);
			cairo_rectangle(p->cr, x + b * 14, y, 12, 1.2);
			cairo_fill(p->cr);
		}
	}
	cairo_set_source_rgb(p->cr, 0, 0, 0);
	for (int k = 0; k < nticks; k++) {
		double t = sc->hi <= sc->lo ? 1
			   : sc->log        ? log(tick[k] / sc->lo) / log(sc->hi / sc->lo)
					    : (tick[k] - 0) / sc->hi;
		double y = bottom - fmin(1, fmax(0, t)) * (bottom - top);

		cairo_move_to(p->cr, x + nbars * 14 - 2, floor(y) + 0.5);
		cairo_line_to(p->cr, x + nbars * 14 + 2, floor(y) + 0.5);
		cairo_stroke(p->cr);
		fmt_share(tick[k], buf, sizeof(buf));
		plot_text(p, x + nbars * 14 + 5, y, 10, buf, 0, 0.5);
	}
	cairo_set_source_rgb(p->cr, 0.3, 0.3, 0.3);
	plot_text(p, p->width - 6, top - 22, 10, "share of a row's pages", 1, 0.5);
	plot_text(p, p->width - 6, top - 10, 10, sc->log ? "(log scale)" : "(linear scale)", 1, 0.5);
}

/* --color-by owner, in place of the colour bar: each colour slot with pages, its colour at full
 * lightness and its pages; then the lightness scale in words. */
static void owner_legend(struct plot *p, const struct plot_owners *o, const struct scale *sc)
{
	double x = p->x1 + 190, y = p->y0 + 8;
	char buf[360], lo[32], hi[32];

	cairo_set_source_rgb(p->cr, 0, 0, 0);
	plot_text(p, x, y, 11, "owners (pages written)", 0, 0.5);
	for (unsigned k = 0; k < plot_owners_nslots(o); k++) {
		struct rgb c = plot_owners_colour(o, k);
		uint32_t px = mix(c, 1);

		if (!o->slot_pages[k])
			continue;
		y += 16;
		cairo_set_source_rgb(p->cr, (px >> 16) / 255.0, (px >> 8 & 0xff) / 255.0,
				     (px & 0xff) / 255.0);
		cairo_rectangle(p->cr, x, y - 5, 14, 10);
		cairo_fill(p->cr);
		cairo_set_source_rgb(p->cr, 0, 0, 0);
		snprintf(buf, sizeof(buf), "%.40s  %" PRIu64, o->slot_label[k], o->slot_pages[k]);
		plot_text(p, x + 20, y, 10, buf, 0, 0.5);
	}
	fmt_share(sc->lo, lo, sizeof(lo));
	fmt_share(sc->hi, hi, sizeof(hi));
	snprintf(buf, sizeof(buf), "pale to full: %s to %s of a", lo, hi);
	cairo_set_source_rgb(p->cr, 0.3, 0.3, 0.3);
	plot_text(p, x, y + 28, 10, buf, 0, 0.5);
	snprintf(buf, sizeof(buf), "row's pages written (%s scale)", sc->log ? "log" : "linear");
	plot_text(p, x, y + 40, 10, buf, 0, 0.5);
}

/* For a reader of the picture (and its test): "owner #rrggbb PAGES LABEL", a line for each. */
static void print_owners(const struct plot_owners *o)
{
	for (unsigned k = 0; k < plot_owners_nslots(o); k++)
		if (o->slot_pages[k])
			printf("owner #%06" PRIx32 " %" PRIu64 " %s\n", mix(plot_owners_colour(o, k), 1),
			       o->slot_pages[k], o->slot_label[k]);
}

/* Memslot boundaries as dashed lines, named right of the area; squeezed gaps named in their band. */
static void mark_slots(struct plot *p, const struct trace_series *s, const struct heat *h)
{
	double dash[] = {4, 3};
	uint64_t four_gib = (4ull << 30) / s->page_size;

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
			double y = floor(gfn_y(h, p, k ? b : a)) + 0.5;

			cairo_move_to(p->cr, p->x0, y);
			cairo_line_to(p->cr, p->x1 + 8, y);
			cairo_stroke(p->cr);
		}
		cairo_set_dash(p->cr, NULL, 0, 0);
		snprintf(label, sizeof(label), "slot %s", sl->name[0] ? sl->name : "(unnamed)");
		plot_text(p, p->x1 + 12, (gfn_y(h, p, a) + gfn_y(h, p, b)) / 2, 10, label, 0, 0.5);
	}
	for (unsigned i = 0; i < h->bins.nseg; i++) {
		const struct hvt_bin_seg *g = &h->bins.seg[i];
		char label[96], size[32];

		if (!g->gap)
			continue;
		hvt_format_size((g->end - g->first) * s->page_size, size, sizeof(size));
		snprintf(label, sizeof(label), "%s, %s (not to scale)",
			 g->end == four_gib ? "PCI hole" : "no RAM", size);
		cairo_set_source_rgb(p->cr, 0.35, 0.35, 0.35);
		plot_text(p, p->x1 + 12,
			  gfn_y(h, p, g->first) - (p->y1 - p->y0) * g->nbins / h->bins.nbins / 2, 10, label,
			  0, 0.5);
	}
}

/* Address ticks: round values inside each segment drawn to scale, and where each segment starts; all in
 * one unit, the largest binary unit the tick step holds (so no "3072 MiB" beside "0 GiB"). */
static const char *address_ticks(struct plot *p, const struct trace_series *s, const struct heat *h)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	uint64_t ps = s->page_size;
	double step = plot_tick_step((double)h->bins.scale_pages * ps, 6, true), last = 1e9, unit = 1;
	int u = 0;
	char buf[64];

	while (u < 4 && step >= unit * 1024) {
		unit *= 1024;
		u++;
	}
	for (unsigned i = 0; i < h->bins.nseg; i++) {
		const struct hvt_bin_seg *g = &h->bins.seg[i];
		double v = i ? (double)g->first * ps : ceil((double)g->first * ps / step) * step;

		for (; v < (double)g->end * ps; v = (floor(v / step) + 1) * step) {
			double y = gfn_y(h, p, (uint64_t)(v / ps));

			if (fabs(y - last) < 16)
				continue;
			snprintf(buf, sizeof(buf), "%.10g", v / unit);
			plot_y_tick(p, y, buf);
			last = y;
			if (g->gap)
				break;
		}
	}
	return units[u];
}

int plot_heatmap(const struct plot_args *a)
{
	struct trace_series s;
	struct heat h = {0};
	struct plot_owners own;
	struct plot p;
	cairo_surface_t *img;
	struct scale sc;
	const char *unit;
	char sub[384], title[160], axis[64], segs[HVT_BINS_MAX_SEGS * 48] = "";
	int rc, height;

	if (a->color_by_owner) {
		rc = plot_owners_load(&own, a, (unsigned)a->top);
		if (rc)
			return rc;
		h.own = &own;
	}
	if (plot_open(&p, "plot", a->out, a->width, a->height, h.own ? 460 : 270)) {
		if (h.own)
			plot_owners_fini(&own);
		return TRACE_USAGE;
	}
	height = (int)(p.y1 - p.y0);
	rc = trace_series_open(&s, "plot", a->trace, &a->sel);
	if (rc)
		goto fail;
	segment(&h, &s, height);
	rc = trace_series_walk(&s, &a->sel, bin_interval, &h);
	if (rc && rc != TRACE_INCOMPLETE)
		goto fail;
	plot_describe(&s, &a->sel, sub, sizeof(sub));
	if (h.own)
		snprintf(title, sizeof(title),
			 "Pages written over time, by guest-physical address and owner");
	else
		snprintf(title, sizeof(title), "Pages written%s over time, by guest-physical address",
			 s.meta->accessed_available ? " and accessed" : "");
	plot_title(&p, title, sub);
	if (h.own) {
		char from[300];

		snprintf(from, sizeof(from), "by %s, owners from %s", a->by,
			 a->owners ? a->owners : "the trace's snapshots");
		plot_text(&p, p.width / 2.0, 58, 11, from, 0.5, 0.5);
	}
	p.lo_x = s.iv[0].t0;
	p.hi_x = s.iv[s.niv - 1].t1;
	img = render(&s, &h, &p, &sc);
	plot_axes(&p, s.iv[0].t0, s.iv[s.niv - 1].t1, 0, 1, "time since the trace's start (s)", "",
		  plot_fmt_plain, NULL);
	cairo_save(p.cr);
	cairo_rectangle(p.cr, p.x0 + 1, p.y0 + 1, p.x1 - p.x0 - 1, p.y1 - p.y0 - 1);
	cairo_clip(p.cr);
	cairo_translate(p.cr, p.x0, p.y0);
	cairo_scale(p.cr, 1, (p.y1 - p.y0) / (double)h.bins.nbins);
	cairo_set_source_surface(p.cr, img, 0, 0);
	cairo_pattern_set_filter(cairo_get_source(p.cr), CAIRO_FILTER_NEAREST);
	cairo_paint(p.cr);
	cairo_restore(p.cr);
	cairo_surface_destroy(img);
	unit = address_ticks(&p, &s, &h);
	snprintf(axis, sizeof(axis), "guest-physical address (%s)", unit);
	cairo_save(p.cr);
	cairo_translate(p.cr, 20, (p.y0 + p.y1) / 2);
	cairo_rotate(p.cr, -M_PI / 2);
	plot_text(&p, 0, 0, 12, axis, 0.5, 0.5);
	cairo_restore(p.cr);
	mark_slots(&p, &s, &h);
	if (h.own) {
		owner_legend(&p, h.own, &sc);
		snprintf(sub, sizeof(sub),
			 "one row = %" PRIu64 " page%s; hue: the owner writing most of them, lightness: the "
			 "share written",
			 h.bins.pages_per_bin, h.bins.pages_per_bin == 1 ? "" : "s");
	} else {
		colour_bar(&p, &sc, s.meta->accessed_available);
		plot_legend(&p, HEAT_WRITTEN, -1, "written");
		if (s.meta->accessed_available)
			plot_legend(&p, HEAT_ACCESSED, -1, "accessed, not written");
		snprintf(sub, sizeof(sub),
			 "one row = %" PRIu64 " page%s; colour: the share of them, on the bar's scale",
			 h.bins.pages_per_bin, h.bins.pages_per_bin == 1 ? "" : "s");
	}
	cairo_set_source_rgb(p.cr, 0.3, 0.3, 0.3);
	plot_text(&p, p.width - 6, p.y1 + 52, 10, sub, 1, 0.5);
	for (unsigned i = 0; i < h.bins.nseg; i++)
		snprintf(segs + strlen(segs), sizeof(segs) - strlen(segs),
			 " %s0x%" PRIx64 "-0x%" PRIx64 "@%" PRIu64 "+%" PRIu64,
			 h.bins.seg[i].gap ? "gap:" : "", h.bins.seg[i].first, h.bins.seg[i].end,
			 h.bins.seg[i].bin0, h.bins.seg[i].nbins);
	if (plot_close(&p, "plot")) {
		rc = TRACE_OUTPUT_FAILED;
	} else {
		/* What a reader of the picture (and its test) needs to find pages and times in it. */
		printf("hvmtrace plot: wrote %s: heatmap %dx%d px; area x=%d y=%d w=%d h=%d; %" PRIu64
		       " rows of %" PRIu64
		       " pages, bottom to top:%s; time %.3f-%.3f s left to right; colour bar "
		       "x=%d y=%d w=12 h=%d, shares %.6g-%.6g on a %s scale\n",
		       a->out, a->width, a->height, (int)p.x0, (int)p.y0, (int)(p.x1 - p.x0), height,
		       h.bins.nbins, h.bins.pages_per_bin, segs, s.iv[0].t0, s.iv[s.niv - 1].t1, sc.bar_x,
		       sc.bar_y, sc.bar_h, sc.lo, sc.hi, sc.log ? "log" : "linear");
		if (h.own)
			print_owners(h.own);
	}
	trace_series_fini(&s);
	free(h.w);
	free(h.a);
	free(h.line);
	if (h.own)
		plot_owners_fini(h.own);
	return rc;
fail:
	trace_series_fini(&s);
	cairo_destroy(p.cr);
	cairo_surface_destroy(p.surface);
	svg_text_free(&p.texts);
	remove(a->out);
	free(h.w);
	free(h.a);
	free(h.line);
	if (h.own)
		plot_owners_fini(h.own);
	return rc;
}
