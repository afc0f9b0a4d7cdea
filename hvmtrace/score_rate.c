// SPDX-License-Identifier: MIT
/*
 * hvmtrace score --dirty-rate (score_rate.h): each of QEMU's calc-dirty-rate measurements against the
 * trace's written pages over the same window. The window is placed on the host's wall clock (QEMU's
 * start-time) and each interval of the trace on it too (its own CLOCK_REALTIME at its start); the intervals
 * whose midpoints fall in the window make its truth: the distinct pages they wrote (what page-sampling and
 * dirty-bitmap estimate) and the sum of each one's written pages (what dirty-ring comes nearest to), each
 * over the window's length (QEMU's own denominator: a set written whole in less than the window counts the
 * same over any span, so the intervals' span, which is not the window's, would misstate its rate).
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "hvmtrace/json_number.h"
#include "hvmtrace/error.h"
#include "hvmtrace/trace_input.h"
#include "hvmtrace/util.h"
#include "score/dirty_rate.h"
#include "score/score.h"
#include "score_rate.h"

/* QEMU rounds start-time down to the second: the window is placed in the middle of that second. */
#define START_PLACED_NS 500000000ll

struct rate_truth {
	struct score_window w;
	int64_t lo, hi; /* the window, wall ns */
	uint64_t intervals, summed, distinct;
	int64_t span_lo, span_hi; /* wall ns of the first taken interval's start, the last one's end */
};

struct rate_ctx {
	const struct dirty_rate_file *f;
	struct rate_truth *t;
	uint32_t page_size;
	bool any;
	int64_t trace_lo, trace_hi; /* wall ns: the first interval's start, the last one's end */
	uint64_t intervals;
};

static int rate_one(void *arg, const struct hvt_walk_iv *w)
{
	struct rate_ctx *x = arg;
	const struct hvt_interval *iv = &w->ir->hdr;
	/* bounded so that a trace with absurd times gives absurd figures, not an overflow */
	uint64_t len =
	    iv->t_end_ns - iv->t_start_ns < (1ull << 61) ? iv->t_end_ns - iv->t_start_ns : 1ull << 61;
	int64_t lo = iv->wall_start_ns < -(1ll << 62)  ? -(1ll << 62)
		     : iv->wall_start_ns > (1ll << 62) ? 1ll << 62
						       : iv->wall_start_ns,
		hi = lo + (int64_t)len, mid = lo + (int64_t)(len / 2);

	if (!(iv->flags & HVT_IV_WRITTEN))
		return 0;
	if (!x->any)
		x->trace_lo = lo;
	x->any = true;
	x->trace_hi = hi;
	x->page_size = w->layout->page_size;
	x->intervals++;
	for (size_t i = 0; i < x->f->n; i++) {
		struct rate_truth *t = &x->t[i];

		if (mid < t->lo || mid >= t->hi)
			continue;
		if (score_window_add(&t->w, &w->ir->set[0]))
			return -ENOMEM;
		if (!t->intervals)
			t->span_lo = lo;
		t->span_hi = hi;
		t->intervals++;
		t->summed += w->ir->set[0].pages;
	}
	return 0;
}

/* ---- the figures ---- */

static double mib_s(uint64_t pages, uint32_t page_size, int64_t ns)
{
	return ns > 0 ? (double)pages * page_size / 1048576.0 / ((double)ns / 1e9) : NAN;
}

static bool truth_summed(enum dirty_rate_mode m)
{
	return m == DR_DIRTY_RING;
}

static double true_rate(const struct rate_ctx *x, size_t i)
{
	const struct rate_truth *t = &x->t[i];

	return mib_s(truth_summed(x->f->v[i].mode) ? t->summed : t->distinct, x->page_size,
		     (int64_t)x->f->v[i].calc_ns);
}

static double rel_error(double est, double truth)
{
	return truth > 0 ? (est - truth) / truth : NAN;
}

/* A group's figures: its measurements, the error of its sums (MiB over the windows, QEMU's against the
 * trace's), the mean of |error|, the least and greatest error. */
struct rate_group {
	size_t n, n_err;
	double est_mib, true_mib, abs_err, min_err, max_err;
};

static void group_add(struct rate_group *g, const struct rate_ctx *x, size_t i)
{
	double s = (double)x->f->v[i].calc_ns / 1e9, tr = true_rate(x, i),
	       e = rel_error((double)x->f->v[i].rate_mib, tr);

	g->n++;
	g->est_mib += (double)x->f->v[i].rate_mib * s;
	g->true_mib += tr * s;
	if (isnan(e))
		return;
	g->abs_err += fabs(e);
	g->min_err = g->n_err && g->min_err < e ? g->min_err : e;
	g->max_err = g->n_err && g->max_err > e ? g->max_err : e;
	g->n_err++;
}

static double group_sum_error(const struct rate_group *g)
{
	return rel_error(g->est_mib, g->true_mib);
}

/* ---- output ---- */

/* A number (decimals places, signed with a +), or - when it is not known. */
static void put_num(double v, int width, int decimals, bool sign)
{
	if (isnan(v))
		printf(" %*s", width, "-");
	else
		printf(sign ? " %+*.*f" : " %*.*f", width, decimals, v);
}

static void print_group(const char *what, const struct rate_group *g)
{
	printf("%-14s %3zu measurement%s: error of the sums", what, g->n, g->n == 1 ? "" : "s");
	put_num(group_sum_error(g), 0, 4, true);
	printf(", mean |error|");
	put_num(g->n_err ? g->abs_err / (double)g->n_err : NAN, 0, 4, false);
	printf(", least");
	put_num(g->n_err ? g->min_err : NAN, 0, 4, true);
	printf(", greatest");
	put_num(g->n_err ? g->max_err : NAN, 0, 4, true);
	putchar('\n');
}

static void print_text(const struct rate_ctx *x, const char *trace, const char *file, int64_t offset_ns)
{
	struct rate_group mode[DR_MODES] = {0}, all = {0};

	printf(
	    "hvmtrace score: %s (written pages) against QEMU's calc-dirty-rate in %s (%zu measurement%s)\n",
	    trace, file, x->f->n, x->f->n == 1 ? "" : "s");
	printf("a window starts 0.5 s after its start-time (QEMU rounds that down to the second: +-0.5 s)");
	if (offset_ns)
		printf(", moved by %+.3f s", (double)offset_ns / 1e9);
	printf(
	    ";\ntruth: the distinct pages its intervals wrote (page-sampling, dirty-bitmap) or the sum of each\n"
	    "interval's (dirty-ring), over the window's length; MiB/s of 1048576 bytes\n");
	printf("%6s %-13s %9s %7s %4s %10s %10s %10s %10s %10s %9s\n", "line", "mode", "start_s", "len_s",
	       "ivs", "distinct", "summed", "true_MiB/s", "qemu_MiB/s", "span_s", "error");
	for (size_t i = 0; i < x->f->n; i++) {
		const struct dirty_rate_reply *r = &x->f->v[i];
		const struct rate_truth *t = &x->t[i];
		double tr = true_rate(x, i);

		printf("%6" PRIu64 " %-13s %9.3f %7.3f %4" PRIu64 " %10" PRIu64 " %10" PRIu64, r->line,
		       dirty_rate_mode_name(r->mode), (double)(t->lo - x->trace_lo) / 1e9,
		       (double)r->calc_ns / 1e9, t->intervals, t->distinct, t->summed);
		put_num(tr, 10, 2, false);
		printf(" %10" PRIu64 " %10.3f", r->rate_mib, (double)(t->span_hi - t->span_lo) / 1e9);
		put_num(rel_error((double)r->rate_mib, tr), 9, 4, true);
		putchar('\n');
		group_add(&mode[r->mode], x, i);
		group_add(&all, x, i);
	}
	for (int m = 0; m < DR_MODES; m++)
		if (mode[m].n)
			print_group(dirty_rate_mode_name(m), &mode[m]);
	print_group("overall", &all);
}

static struct json_object *json_num(double v)
{
	return isnan(v) ? NULL : hvt_json_new_double(v);
}

static struct json_object *json_group(const struct rate_group *g)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "measurements", json_object_new_uint64(g->n));
	json_object_object_add(o, "qemu_mib", json_num(g->est_mib));
	json_object_object_add(o, "true_mib", json_num(g->true_mib));
	json_object_object_add(o, "sum_error", json_num(group_sum_error(g)));
	json_object_object_add(o, "mean_abs_error", json_num(g->n_err ? g->abs_err / (double)g->n_err : NAN));
	json_object_object_add(o, "min_error", json_num(g->n_err ? g->min_err : NAN));
	json_object_object_add(o, "max_error", json_num(g->n_err ? g->max_err : NAN));
	return o;
}

static void print_json(const struct rate_ctx *x, const char *trace, const char *file, int64_t offset_ns)
{
	struct json_object *o = json_object_new_object(), *ms = json_object_new_array(),
			   *modes = json_object_new_object();
	struct rate_group mode[DR_MODES] = {0}, all = {0};

	json_object_object_add(o, "trace", json_object_new_string(trace));
	json_object_object_add(o, "replies", json_object_new_string(file));
	json_object_object_add(o, "truth", json_object_new_string("written"));
	json_object_object_add(o, "page_size", json_object_new_uint64(x->page_size));
	json_object_object_add(o, "intervals", json_object_new_uint64(x->intervals));
	json_object_object_add(o, "start_placed_ns", json_object_new_int64(START_PLACED_NS));
	json_object_object_add(o, "start_uncertainty_ns", json_object_new_int64(START_PLACED_NS));
	json_object_object_add(o, "offset_ns", json_object_new_int64(offset_ns));
	for (size_t i = 0; i < x->f->n; i++) {
		const struct dirty_rate_reply *r = &x->f->v[i];
		const struct rate_truth *t = &x->t[i];
		struct json_object *m = json_object_new_object();
		int64_t span = t->span_hi - t->span_lo;

		json_object_object_add(m, "line", json_object_new_uint64(r->line));
		json_object_object_add(m, "mode", json_object_new_string(dirty_rate_mode_name(r->mode)));
		json_object_object_add(m, "start_time", json_object_new_int64(r->start_s));
		json_object_object_add(m, "calc_ns", json_object_new_uint64(r->calc_ns));
		json_object_object_add(m, "sample_pages",
				       r->mode == DR_PAGE_SAMPLING ? json_object_new_uint64(r->sample_pages)
								   : NULL);
		json_object_object_add(m, "vcpus", r->nvcpu ? json_object_new_uint64(r->nvcpu) : NULL);
		json_object_object_add(m, "start_ns", json_object_new_int64(t->lo - x->trace_lo));
		json_object_object_add(m, "end_ns", json_object_new_int64(t->hi - x->trace_lo));
		json_object_object_add(m, "intervals", json_object_new_uint64(t->intervals));
		json_object_object_add(m, "span_ns", json_object_new_int64(span));
		json_object_object_add(m, "distinct_pages", json_object_new_uint64(t->distinct));
		json_object_object_add(m, "summed_pages", json_object_new_uint64(t->summed));
		json_object_object_add(m, "true_distinct_mib_s",
				       json_num(mib_s(t->distinct, x->page_size, span)));
		json_object_object_add(m, "true_summed_mib_s",
				       json_num(mib_s(t->summed, x->page_size, span)));
		json_object_object_add(m, "truth",
				       json_object_new_string(truth_summed(r->mode) ? "summed" : "distinct"));
		json_object_object_add(m, "true_mib_s", json_num(true_rate(x, i)));
		json_object_object_add(m, "qemu_mib_s", json_object_new_uint64(r->rate_mib));
		json_object_object_add(m, "error", json_num(rel_error((double)r->rate_mib, true_rate(x, i))));
		json_object_array_add(ms, m);
		group_add(&mode[r->mode], x, i);
		group_add(&all, x, i);
	}
	json_object_object_add(o, "measurements", ms);
	for (int m = 0; m < DR_MODES; m++)
		if (mode[m].n)
			json_object_object_add(modes, dirty_rate_mode_name(m), json_group(&mode[m]));
	json_object_object_add(o, "modes", modes);
	json_object_object_add(o, "overall", json_group(&all));
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	json_object_put(o);
}

/* ---- the command ---- */

/* A measurement whose window is not wholly inside the trace, or takes no interval: refused. */
static int check_windows(const struct rate_ctx *x, const char *trace, const char *file)
{
	for (size_t i = 0; i < x->f->n; i++) {
		const struct rate_truth *t = &x->t[i];
		char when[64];

		hvt_format_wall(t->lo, when, sizeof(when));
		if (t->lo < x->trace_lo || t->hi > x->trace_hi) {
			fprintf(
			    stderr,
			    "hvmtrace score: %s line %" PRIu64
			    ": the measurement's window (%s, %.3f to %.3f s on the trace's clock) is not inside "
			    "%s (0 to %.3f s): a measurement of another time or run, or clocks apart (--offset)\n",
			    file, x->f->v[i].line, when, ((double)t->lo - (double)x->trace_lo) / 1e9,
			    ((double)t->hi - (double)x->trace_lo) / 1e9, trace,
			    (double)(x->trace_hi - x->trace_lo) / 1e9);
			return TRACE_USAGE;
		}
		if (!t->intervals) {
			fprintf(
			    stderr,
			    "hvmtrace score: %s line %" PRIu64
			    ": the measurement's window (%s, %.3f s long) holds no interval's midpoint: the "
			    "trace's intervals are longer than calc-time\n",
			    file, x->f->v[i].line, when, (double)x->f->v[i].calc_ns / 1e9);
			return TRACE_USAGE;
		}
	}
	return TRACE_OK;
}

int score_dirty_rate(const char *path, struct hvt_trace_reader *r, const struct hvt_selection *sel,
		     uint64_t gfn_first, uint64_t gfn_end, const char *file, int64_t offset_ns, bool json)
{
	struct dirty_rate_file f = {0};
	struct rate_ctx x = {.f = &f};
	struct hvt_err err = {{0}};
	int status;

	if (dirty_rate_read(file, &f, &err)) {
		fprintf(stderr, "hvmtrace score: %s\n", err.msg);
		return TRACE_USAGE;
	}
	x.t = calloc(f.n, sizeof(*x.t));
	if (!x.t) {
		dirty_rate_free(&f);
		fprintf(stderr, "hvmtrace score: out of memory\n");
		return TRACE_OUTPUT_FAILED;
	}
	for (size_t i = 0; i < f.n; i++) {
		x.t[i].lo = f.v[i].start_s * 1000000000ll + START_PLACED_NS + offset_ns;
		x.t[i].hi = x.t[i].lo + (int64_t)f.v[i].calc_ns;
	}
	status = trace_input_walk("score", path, r, sel, gfn_first, gfn_end, true, rate_one, &x);
	if (status == -ENOMEM) {
		fprintf(stderr, "hvmtrace score: out of memory\n");
		status = TRACE_OUTPUT_FAILED;
	} else if ((status == TRACE_OK || status == TRACE_INCOMPLETE) && !x.any) {
		fprintf(stderr, "hvmtrace score: %s holds no interval with written pages\n", path);
		status = TRACE_USAGE;
	} else if (status == TRACE_OK || status == TRACE_INCOMPLETE) {
		int rc = check_windows(&x, path, file);

		for (size_t i = 0; i < f.n && rc == TRACE_OK; i++) {
			const struct score_runs *runs;

			if (score_window_counts(&x.t[i].w, &runs)) {
				fprintf(stderr, "hvmtrace score: out of memory\n");
				rc = TRACE_OUTPUT_FAILED;
				break;
			}
			for (size_t k = 0; k < runs->n; k++)
				x.t[i].distinct += runs->v[k].end - runs->v[k].first;
		}
		if (rc != TRACE_OK)
			status = rc;
		else if (json)
			print_json(&x, path, file, offset_ns);
		else
			print_text(&x, path, file, offset_ns);
	}
	for (size_t i = 0; i < f.n; i++)
		score_window_fini(&x.t[i].w);
	free(x.t);
	dirty_rate_free(&f);
	return status;
}
