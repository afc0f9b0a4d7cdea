// SPDX-License-Identifier: MIT
/*
 * check_heatmap: reads back a PNG that `hvmtrace plot heatmap` wrote (through cairo's PNG loader) and
 * checks it against what the trace is known to hold. The plot's stdout line gives the area and its scales
 * (--geometry). For each --band FIRST-LAST@T0-T1 (GFNs inclusive, seconds since the trace's start), every
 * pixel whose row holds only pages of the band and whose column lies inside [T0, T1] (one column of margin)
 * must have the --colour; with --outside, no pixel of those columns whose row holds none of the band's pages
 * (one row of margin) may have it (give one band then); --colour any prints the colour at each band's centre
 * instead ("band 1: #rrggbb"); --colour #rrggbb: that colour exactly. Without --band it checks the
 * dimensions only.
 * Prints the pixels checked; exit 0 when all holds, 1 if not, 2 on bad input.
 */
#include <cairo.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/options.h"

#define MAX_BANDS 256

struct band {
	uint64_t first, last;
	double t0, t1;
};

#define MAX_SEGS 64

/* The plot's rows: segments of GFNs [first, end) on rows [row0, row0 + nrows), ppr pages a row, or gaps. */
struct seg {
	uint64_t first, end, row0, nrows;
	bool gap;
};

struct geometry {
	int x, y, w, h;
	uint64_t nrows, ppr;
	struct seg seg[MAX_SEGS];
	int nseg;
	double t_lo, t_hi;
};

static struct band bands[MAX_BANDS];
static int nbands;

static int band_arg(const struct hvt_option *opt, const char *v, char *problem, size_t len)
{
	struct band *b = &bands[nbands];

	(void)opt;
	if (nbands == MAX_BANDS ||
	    sscanf(v, "%" SCNi64 "-%" SCNi64 "@%lf-%lf", &b->first, &b->last, &b->t0, &b->t1) != 4 ||
	    b->last < b->first || b->t1 <= b->t0) {
		snprintf(problem, len, "not FIRST-LAST@T0-T1 (GFNs, seconds)");
		return -1;
	}
	nbands++;
	return 0;
}

static int parse_geometry(const char *line, struct geometry *g)
{
	const char *p = strstr(line, "area x="), *t;
	int n;

	if (!p ||
	    sscanf(p, "area x=%d y=%d w=%d h=%d; %" SCNu64 " rows of %" SCNu64 " pages, bottom to top:%n",
		   &g->x, &g->y, &g->w, &g->h, &g->nrows, &g->ppr, &n) != 6)
		return -1;
	p += n;
	t = strstr(p, "; time ");
	if (!t || sscanf(t, "; time %lf-%lf s", &g->t_lo, &g->t_hi) != 2)
		return -1;
	while (p < t && g->nseg < MAX_SEGS) {
		struct seg *s = &g->seg[g->nseg];

		while (*p == ' ')
			p++;
		s->gap = !strncmp(p, "gap:", 4);
		p += s->gap ? 4 : 0;
		if (sscanf(p, "0x%" SCNx64 "-0x%" SCNx64 "@%" SCNu64 "+%" SCNu64 "%n", &s->first, &s->end,
			   &s->row0, &s->nrows, &n) != 4)
			return -1;
		p += n;
		g->nseg++;
	}
	return g->nseg ? 0 : -1;
}

/* The GFNs of data row r: [*lo, *hi]; false for a gap's rows. */
static bool row_gfns(const struct geometry *g, uint64_t r, uint64_t *lo, uint64_t *hi)
{
	for (int i = 0; i < g->nseg; i++) {
		const struct seg *s = &g->seg[i];

		if (r < s->row0 || r >= s->row0 + s->nrows)
			continue;
		if (s->gap)
			return false;
		*lo = s->first + (r - s->row0) * g->ppr;
		*hi = *lo + g->ppr - 1 < s->end - 1 ? *lo + g->ppr - 1 : s->end - 1;
		return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	const char *png = NULL, *geom = NULL, *colour = "written";
	int width = 0, height = 0;
	bool outside = false;
	const struct hvt_option opts[] = {
	    HVT_OPT_PATH(0, "png", &png, "FILE", "the picture", .required = true),
	    HVT_OPT_STRING(0, "geometry", &geom, "LINE", "the line hvmtrace plot heatmap printed",
			   .required = true),
	    HVT_OPT_INT(0, "width", &width, 1, 100000, "PX", "the picture's expected width",
			.required = true),
	    HVT_OPT_INT(0, "height", &height, 1, 100000, "PX", "the picture's expected height",
			.required = true),
	    HVT_OPT_CALLBACK(0, "band", NULL, band_arg, "FIRST-LAST@T0-T1", "pages and times (repeatable)"),
	    HVT_OPT_STRING(0, "colour", &colour, "written|accessed|white|any|#rrggbb",
			   "their expected colour"),
	    HVT_OPT_FLAG(0, "outside", &outside, "also: rows without band pages must not have that colour"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {.prog = "check_heatmap", .options = opts, .usage_status = 2};
	int rc = hvt_opts_parse(&cmd, argc, argv), stride;
	uint32_t want;
	uint64_t inside = 0, wrong = 0, outside_n = 0, outside_bad = 0;
	struct geometry g = {0};
	cairo_surface_t *img;
	unsigned char *data;

	if (rc != HVT_OPTS_RUN)
		return rc;
	if (parse_geometry(geom, &g)) {
		fprintf(stderr,
			"check_heatmap: --geometry: no 'area x=.. y=.. w=.. h=..; gfn ..; time ..' in it\n");
		return 2;
	}
	/* The colours of plot/plot.h at full intensity (mix() rounds each channel). */
	want = colour[0] == '#'              ? (uint32_t)strtoul(colour + 1, NULL, 16)
	       : !strcmp(colour, "written")  ? 0xcc1a1a
	       : !strcmp(colour, "accessed") ? 0x2666cc
					     : 0xffffff;
	img = cairo_image_surface_create_from_png(png);
	if (cairo_surface_status(img)) {
		fprintf(stderr, "check_heatmap: %s: %s\n", png,
			cairo_status_to_string(cairo_surface_status(img)));
		return 2;
	}
	if (cairo_image_surface_get_width(img) != width || cairo_image_surface_get_height(img) != height) {
		fprintf(stderr, "check_heatmap: %s is %dx%d, expected %dx%d\n", png,
			cairo_image_surface_get_width(img), cairo_image_surface_get_height(img), width,
			height);
		return 1;
	}
	data = cairo_image_surface_get_data(img);
	stride = cairo_image_surface_get_stride(img);
	for (int b = 0; b < nbands; b++) {
		const struct band *bd = &bands[b];
		double ct0 = (bd->t0 - g.t_lo) / (g.t_hi - g.t_lo) * g.w,
		       ct1 = (bd->t1 - g.t_lo) / (g.t_hi - g.t_lo) * g.w;

		if (!strcmp(colour, "any")) {
			/* the pixel at the band's centre: its row's GFN and its column's time */
			uint64_t mid = bd->first + (bd->last - bd->first) / 2;
			int py = -1, px = (int)((ct0 + ct1) / 2);

			for (int y = 0; y < g.h && py < 0; y++) {
				uint64_t r = g.nrows - 1 - (uint64_t)((y + 0.5) * g.nrows / g.h), lo, hi;

				if (row_gfns(&g, r, &lo, &hi) && lo <= mid && mid <= hi)
					py = y;
			}
			if (py < 0) {
				fprintf(stderr, "check_heatmap: band %d lies in no row\n", b + 1);
				cairo_surface_destroy(img);
				return 1;
			}
			printf("band %d: #%06x\n", b + 1,
			       ((uint32_t *)(data + (size_t)(g.y + py) * stride))[g.x + px] & 0xffffff);
			continue;
		}
		for (int py = 1; py < g.h - 1; py++) {
			/* cairo's nearest filter samples the data row under the pixel's centre; low GFNs at
			 * the bottom */
			uint64_t r = g.nrows - 1 - (uint64_t)((py + 0.5) * g.nrows / g.h), lo, hi;
			bool in, out;

			if (!row_gfns(&g, r, &lo, &hi))
				continue;
			in = lo >= bd->first && hi <= bd->last;
			out = hi + g.ppr < bd->first || lo > bd->last + g.ppr;

			for (int px = (int)ceil(ct0) + 1; px < (int)floor(ct1) - 1 && px < g.w - 1; px++) {
				uint32_t v =
				    ((uint32_t *)(data + (size_t)(g.y + py) * stride))[g.x + px] & 0xffffff;

				if (px < 1)
					continue;
				if (in) {
					inside++;
					if (v != want && wrong++ < 5)
						fprintf(stderr,
							"check_heatmap: pixel (%d,%d), GFN 0x%" PRIx64
							"-0x%" PRIx64
							" at %.2f s: #%06x, expected %s #%06x\n",
							g.x + px, g.y + py, lo, hi,
							g.t_lo + (px + 0.5) * (g.t_hi - g.t_lo) / g.w, v,
							colour, want);
				} else if (outside && out) {
					outside_n++;
					if (v == want && outside_bad++ < 5)
						fprintf(stderr,
							"check_heatmap: pixel (%d,%d), GFN 0x%" PRIx64
							"-0x%" PRIx64
							", outside the bands, has the colour %s\n",
							g.x + px, g.y + py, lo, hi, colour);
				}
			}
		}
	}
	cairo_surface_destroy(img);
	printf("check_heatmap: %" PRIu64 " pixels inside the bands (%" PRIu64 " not %s), %" PRIu64
	       " outside checked (%" PRIu64 " %s)\n",
	       inside, wrong, colour, outside_n, outside_bad, colour);
	if (nbands && !inside && strcmp(colour, "any")) {
		fprintf(stderr, "check_heatmap: no pixel lies wholly inside a band: nothing was checked\n");
		return 1;
	}
	return wrong || outside_bad ? 1 : 0;
}
