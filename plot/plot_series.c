// SPDX-License-Identifier: MIT
/*
 * hvmtrace plot bw, the seed paper's figures 2-5 (read and write bytes/s per channel and in total), and what
 * every line chart shares (plot_wss.c and plot_cdf.c draw the others).
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

void polyline(struct plot *p, const double *x, const double *y, const bool *have, uint64_t n, struct rgb c,
	      double width, double dashed)
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

int plot_finish(struct plot *p, const char *out, const char *kind, int rc)
{
	if (plot_close(p, "plot"))
		return TRACE_OUTPUT_FAILED;
	/* the scales, for a reader who wants values back from pixels (and for the tests) */
	printf("hvmtrace plot: wrote %s: %s %dx%d px; area x=%d y=%d w=%d h=%d; x %g-%g; y %g-%g\n", out,
	       kind, p->width, p->height, (int)p->x0, (int)p->y0, (int)(p->x1 - p->x0), (int)(p->y1 - p->y0),
	       p->lo_x, p->hi_x, p->lo_y, p->hi_y);
	return rc;
}

void plot_abandon(struct plot *p, const char *out)
{
	cairo_destroy(p->cr);
	cairo_surface_destroy(p->surface);
	svg_text_free(&p->texts);
	remove(out);
}

/* A picture not drawn: the series and the surface go, and so does the half-made output file. */
static int abandon(struct plot *p, struct trace_series *s, const char *out, int rc)
{
	trace_series_fini(s);
	plot_abandon(p, out);
	return rc;
}

void clip_area(struct plot *p)
{
	cairo_rectangle(p->cr, p->x0, p->y0, p->x1 - p->x0, p->y1 - p->y0);
	cairo_clip(p->cr);
}

void unavailable(struct plot *p, const char *what)
{
	cairo_set_source_rgb(p->cr, 0.4, 0.4, 0.4);
	plot_text(p, (p->x0 + p->x1) / 2, p->y0 + 16, 11, what, 0.5, 0.5);
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
	rc = plot_finish(&p, a->out, "bw", rc);
	trace_series_fini(&s);
	return rc;
}
