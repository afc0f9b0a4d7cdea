// SPDX-License-Identifier: MIT
/*
 * hvmtrace score TRACE --damon RECORD: how far a DAMON record of the same run is from the trace's exact
 * sets (docs/score.md). Each DAMON snapshot is moved onto the trace's clock; the intervals whose midpoints
 * fall in its window make its truth (score.h); its regions with nr_accesses >= 1 are scored against that:
 * precision, recall, the overlap of the hottest pages, and the working set's error, per window and overall.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "hvmtrace/error.h"
#include "hvmtrace/json_number.h"
#include "hvmtrace/options.h"
#include "hvmtrace/trace_input.h"
#include "hvmtrace/trace_meta.h"
#include "hvmtrace/util.h"
#include "score/damon_record.h"
#include "score/score.h"
#include "score/sample.h"
#include "score/score_check.h"
#include "score_rate.h"

enum record_clock { CLOCK_RECORD, CLOCK_TRACE };

struct scored {
	size_t snap;
	int64_t start_ns, end_ns; /* the window on the trace's clock, from its first interval's start */
	uint64_t intervals;
	struct score_counts c;
};

struct score_ctx {
	const struct damon_record *rec; /* --damon, or */
	struct sample_tracker *sampler; /* --sample, windows of `window` intervals */
	uint32_t window;
	char tracker[160];        /* what is scored, for the output's first line */
	size_t windows;           /* the record's snapshots, or the sampler's windows */
	uint64_t window_start_ns; /* the sampler's window's first interval's start */
	enum record_clock clock;
	int64_t offset_ns;
	unsigned hot_percent;
	int set;          /* 1: accessed, 0: written (a dirty-log trace) */
	bool mapped;      /* shift known (after the first interval) */
	int64_t shift_ns; /* added to a record time to give a CLOCK_MONOTONIC time of the trace */
	uint64_t t0_ns;   /* the trace's first interval's start */
	uint32_t page_size;
	size_t cur; /* the snapshot being filled */
	struct score_window w;
	struct scored *out;
	size_t nout, out_cap;
	uint64_t intervals, outside; /* intervals seen; those in no window */
	uint64_t last_end_ns;
	const struct hvt_layout *last_layout; /* the sampler's last interval's */
};

static int64_t mapped(const struct score_ctx *x, uint64_t record_ns)
{
	return (int64_t)record_ns + x->shift_ns;
}

static int close_window(struct score_ctx *x)
{
	const struct damon_snapshot *s = &x->rec->snaps[x->cur];
	struct scored sc = {.snap = x->cur, .intervals = x->w.intervals};

	if (!x->w.intervals)
		return 0;
	sc.start_ns = mapped(x, s->start_ns) - (int64_t)x->t0_ns;
	sc.end_ns = mapped(x, s->end_ns) - (int64_t)x->t0_ns;
	if (score_window_close(&x->w, x->rec->regions + s->first, s->n, x->page_size, x->hot_percent,
			       &sc.c) ||
	    hvt_array_room((void **)&x->out, &x->out_cap, x->nout, sizeof(*x->out)))
		return -ENOMEM;
	x->out[x->nout++] = sc;
	return 0;
}

/* The sampler's window: its regions against the union of its intervals' sets. */
static int close_sample_window(struct score_ctx *x, const struct hvt_layout *l)
{
	struct scored sc = {.snap = x->windows, .intervals = x->w.intervals};

	if (!x->w.intervals)
		return 0;
	sc.start_ns = (int64_t)(x->window_start_ns - x->t0_ns);
	sc.end_ns = (int64_t)(x->last_end_ns - x->t0_ns);
	if (sample_window_regions(x->sampler, l) ||
	    score_window_close(&x->w, x->sampler->regions, x->sampler->nregions, x->page_size, x->hot_percent,
			       &sc.c) ||
	    hvt_array_room((void **)&x->out, &x->out_cap, x->nout, sizeof(*x->out)))
		return -ENOMEM;
	x->out[x->nout++] = sc;
	x->windows++;
	return 0;
}

static int sample_one(struct score_ctx *x, const struct hvt_walk_iv *w)
{
	const struct hvt_runs *set = &w->ir->set[x->set];

	if (!x->w.intervals)
		x->window_start_ns = w->ir->hdr.t_start_ns;
	if (score_window_add(&x->w, set) || sample_interval(x->sampler, w->index, set))
		return -ENOMEM;
	x->last_layout = w->layout;
	return x->w.intervals == x->window ? close_sample_window(x, w->layout) : 0;
}

static int score_one(void *arg, const struct hvt_walk_iv *w)
{
	struct score_ctx *x = arg;
	const struct hvt_interval *iv = &w->ir->hdr;
	int64_t mid;

	if (!(iv->flags & (x->set ? HVT_IV_ACCESSED : HVT_IV_WRITTEN)))
		return 0; /* no sets (a final record after a refused layout) */
	if (!x->mapped) {
		x->t0_ns = w->t0_ns;
		if (x->sampler)
			x->shift_ns = 0;
		else
			x->shift_ns =
			    x->offset_ns + (x->clock == CLOCK_RECORD
						? (int64_t)w->t0_ns - (int64_t)x->rec->snaps[0].start_ns
						: 0);
		x->mapped = true;
	}
	x->page_size = w->layout->page_size;
	x->intervals++;
	x->last_end_ns = iv->t_end_ns;
	if (x->sampler)
		return sample_one(x, w);
	mid = (int64_t)(iv->t_start_ns + (iv->t_end_ns - iv->t_start_ns) / 2);
	while (x->cur < x->rec->nsnaps && mapped(x, x->rec->snaps[x->cur].end_ns) <= mid) {
		if (close_window(x))
			return -ENOMEM;
		x->cur++;
	}
	if (x->cur == x->rec->nsnaps || mapped(x, x->rec->snaps[x->cur].start_ns) > mid) {
		x->outside++;
		return 0;
	}
	return score_window_add(&x->w, &w->ir->set[x->set]) ? -ENOMEM : 0;
}

/* --offset: a duration, maybe negative ("-1.5s"), or 0. */
static int opt_offset(const struct hvt_option *opt, const char *arg, char *problem, size_t len)
{
	int64_t *v = opt->value;
	bool neg = arg[0] == '-';
	uint64_t ns;

	if (!strcmp(arg, "0")) {
		*v = 0;
		return 0;
	}
	if (hvt_parse_duration(arg + neg, &ns) || ns > INT64_MAX / 2) {
		snprintf(problem, len, "not a duration (10ms, -1.5s, 0)");
		return -1;
	}
	*v = neg ? -(int64_t)ns : (int64_t)ns;
	return 0;
}

/* ---- output ---- */

static void put_ratio(FILE *f, double v)
{
	if (isnan(v))
		fprintf(f, " %9s", "-");
	else
		fprintf(f, " %9.4f", v);
}

static void print_text(const struct score_ctx *x, const char *trace, const char *record, bool written)
{
	struct score_counts sum = {0};
	const char *truth = written ? "written" : "accessed";

	(void)record;
	printf("hvmtrace score: %s (%s pages) against %s\n", trace, truth, x->tracker);
	if (written)
		printf(
		    "a dirty-log trace knows written pages only: recall is of written pages, precision is not "
		    "known (-),\nthe working set's error is against the written pages (a lower bound)\n");
	printf("%6s %10s %10s %5s %12s %12s %12s %9s %9s %9s %9s\n", "snap", "start_s", "end_s", "ivs",
	       "damon_pages", written ? "written" : "true_pages", "both", "precision", "recall", "hot",
	       "wss_err");
	for (size_t i = 0; i < x->nout; i++) {
		const struct scored *s = &x->out[i];

		printf("%6zu %10.3f %10.3f %5" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64, s->snap,
		       s->start_ns / 1e9, s->end_ns / 1e9, s->intervals, s->c.damon_pages, s->c.true_pages,
		       s->c.both_pages);
		put_ratio(stdout, written ? NAN : score_precision(&s->c));
		put_ratio(stdout, score_recall(&s->c));
		put_ratio(stdout, score_hot_overlap(&s->c));
		put_ratio(stdout, score_wss_error(&s->c));
		putchar('\n');
		score_counts_add(&sum, &s->c);
	}
	printf("overall: %zu of %zu %s scored, %" PRIu64 " of %" PRIu64
	       " intervals in a window; pages: %s %" PRIu64 ", %s %" PRIu64 ", both %" PRIu64 "\n",
	       x->nout, x->windows, x->rec ? "snapshots" : "windows", x->intervals - x->outside, x->intervals,
	       x->rec ? "DAMON" : "sampled", sum.damon_pages, truth, sum.true_pages, sum.both_pages);
	printf("precision ");
	if (written)
		printf("-");
	else
		printf("%.4f", score_precision(&sum));
	printf("  recall %.4f  hot-%u%% overlap %.4f  WSS error %+.4f\n", score_recall(&sum), x->hot_percent,
	       score_hot_overlap(&sum), score_wss_error(&sum));
}

static struct json_object *json_ratio(double v)
{
	return isnan(v) ? NULL : hvt_json_new_double(v);
}

static struct json_object *json_counts(const struct score_counts *c, bool written)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "damon_pages", json_object_new_uint64(c->damon_pages));
	json_object_object_add(o, "true_pages", json_object_new_uint64(c->true_pages));
	json_object_object_add(o, "both_pages", json_object_new_uint64(c->both_pages));
	json_object_object_add(o, "hot_k", json_object_new_uint64(c->hot_k));
	json_object_object_add(o, "hot_both", json_object_new_uint64(c->hot_both));
	json_object_object_add(o, "precision", written ? NULL : json_ratio(score_precision(c)));
	json_object_object_add(o, "recall", json_ratio(score_recall(c)));
	json_object_object_add(o, "hot_overlap", json_ratio(score_hot_overlap(c)));
	json_object_object_add(o, "wss_error", json_ratio(score_wss_error(c)));
	return o;
}

static void print_json(const struct score_ctx *x, const char *trace, const char *record, bool written)
{
	struct json_object *o = json_object_new_object(), *wins = json_object_new_array(), *all;
	struct score_counts sum = {0};

	json_object_object_add(o, "trace", json_object_new_string(trace));
	json_object_object_add(o, "record", record ? json_object_new_string(record) : NULL);
	json_object_object_add(o, "format", x->rec ? json_object_new_string(x->rec->format) : NULL);
	json_object_object_add(o, "tracker", json_object_new_string(x->tracker));
	json_object_object_add(o, "truth", json_object_new_string(written ? "written" : "accessed"));
	json_object_object_add(o, "hot_percent", json_object_new_int((int)x->hot_percent));
	json_object_object_add(o, "snapshots", json_object_new_uint64(x->windows));
	json_object_object_add(o, "intervals", json_object_new_uint64(x->intervals));
	json_object_object_add(o, "intervals_outside", json_object_new_uint64(x->outside));
	json_object_object_add(o, "shift_ns", json_object_new_int64(x->shift_ns));
	for (size_t i = 0; i < x->nout; i++) {
		const struct scored *s = &x->out[i];
		struct json_object *w = json_counts(&s->c, written);

		json_object_object_add(w, "snapshot", json_object_new_uint64(s->snap));
		json_object_object_add(w, "start_ns", json_object_new_int64(s->start_ns));
		json_object_object_add(w, "end_ns", json_object_new_int64(s->end_ns));
		json_object_object_add(w, "intervals", json_object_new_uint64(s->intervals));
		json_object_array_add(wins, w);
		score_counts_add(&sum, &s->c);
	}
	json_object_object_add(o, "windows", wins);
	all = json_counts(&sum, written);
	json_object_object_add(all, "windows", json_object_new_uint64(x->nout));
	json_object_object_add(o, "overall", all);
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	json_object_put(o);
}

/* ---- the command ---- */

/* No window took an interval: the record's span and the trace's, on the trace's clock. */
static void say_apart(const struct score_ctx *x, const char *trace, const char *record)
{
	const struct damon_record *rec = x->rec;

	if (!x->intervals) {
		fprintf(stderr, "hvmtrace score: %s holds no interval with %s pages\n", trace,
			x->set ? "accessed" : "written");
		return;
	}
	fprintf(
	    stderr,
	    "hvmtrace score: %s's snapshots (%.3f to %.3f s on the trace's clock) do not overlap %s (0 to "
	    "%.3f s): a record of another run, or clocks apart (--offset, --record-clock)\n",
	    record, (mapped(x, rec->snaps[0].start_ns) - (int64_t)x->t0_ns) / 1e9,
	    (mapped(x, rec->snaps[rec->nsnaps - 1].end_ns) - (int64_t)x->t0_ns) / 1e9, trace,
	    (x->last_end_ns - x->t0_ns) / 1e9);
}

/* --sample: sample_spec_parse into the spec; sets sampled. */
struct sample_opt {
	struct sample_spec spec;
	bool given;
};

static int opt_sample(const struct hvt_option *opt, const char *arg, char *problem, size_t len)
{
	struct sample_opt *o = opt->value;

	if (sample_spec_parse(arg, &o->spec, problem, len))
		return -1;
	o->given = true;
	return 0;
}

int cmd_score(int argc, char **argv)
{
	static const struct hvt_exit_status exits[] = {
	    {TRACE_OK, "scored"},
	    {TRACE_OUTPUT_FAILED, "out of memory"},
	    {TRACE_USAGE, "bad arguments, TRACE or RECORD unreadable, or they do not belong together"},
	    {TRACE_INCOMPLETE, "the trace is incomplete (everything before the damage was scored)"},
	    {0, NULL},
	};
	static const struct hvt_opt_choice clocks[] = {
	    {"record", CLOCK_RECORD}, {"trace", CLOCK_TRACE}, {NULL}};
	const char *path = "hvmtrace.hvt", *record = NULL, *rates = NULL;
	int hot = 0, clock = -1; /* 0, -1: not given (10, record) */
	uint32_t window = 0;     /* 0: not given (10) */
	int64_t offset = 0;
	bool json = false;
	struct sample_opt sample = {0};
	const struct hvt_option opts[] = {
	    HVT_OPT_OPERAND(&path, "TRACE", "the trace to score against (default hvmtrace.hvt)"),
	    HVT_OPT_PATH(
		0, "damon", &record, "RECORD",
		"DAMON's record of the same run: damo's json or json_compressed, or hvmtrace-damon 1 "
		"text (docs/score.md)"),
	    HVT_OPT_PATH(0, "dirty-rate", &rates, "FILE",
			 "instead of RECORD, QEMU's calc-dirty-rate results: its query-dirty-rate replies,\n"
			 "one JSON object a line (docs/score.md)"),
	    HVT_OPT_CHOICE(0, "record-clock", &clock, clocks, "record|trace",
			   "RECORD's times: its own clock, its first window starting with the trace's first\n"
			   "interval (record, the default); or the trace's CLOCK_MONOTONIC (trace)"),
	    HVT_OPT_CALLBACK(
		0, "offset", &offset, opt_offset, "DURATION",
		"added to RECORD's times after that, or to FILE's (negative: earlier; default 0)"),
	    HVT_OPT_CALLBACK(
		0, "sample", &sample, opt_sample, "every:N|random:F[:SEED]",
		"instead of RECORD, a sampling tracker made from the trace's own sets: one page\n"
		"of every N (its first), or a random one of every 1/F (drawn each interval)"),
	    HVT_OPT_INT(0, "window", &window, 1, UINT32_MAX, "N",
			"--sample's aggregation window, in intervals (default 10)"),
	    HVT_OPT_INT(0, "hot", &hot, 1, 100, "PERCENT",
			"the hot sets: this share of the true working set, hottest first (default 10)"),
	    HVT_OPT_FLAG(0, "json", &json, "everything as one JSON object (null: not known)"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace score",
	    .synopsis = "--damon RECORD | --sample SPEC | --dirty-rate FILE [options] [TRACE]",
	    .about =
		"How wrong DAMON is: each snapshot of RECORD against the union of the trace's sets of the "
		"intervals whose midpoints fall in its window. Or how wrong sampling is: --sample's "
		"tracker, made from the trace's own sets, against them. Or how wrong QEMU's calc-dirty-rate "
		"is: each measurement of FILE against the pages the trace saw written in its window.",
	    .options = opts,
	    .exits = exits,
	    .usage_status = TRACE_USAGE,
	};
	struct damon_record rec = {0};
	struct sample_tracker sampler = {0};
	struct hvt_selection sel = {0};
	struct score_ctx x = {0};
	struct hvt_err err = {{0}};
	struct hvt_trace_reader *r;
	uint64_t gfn_first, gfn_end;
	bool written;
	int status = hvt_opts_parse(&cmd, argc, argv);

	if (status != HVT_OPTS_RUN)
		return status;
	if (!!record + !!sample.given + !!rates != 1) {
		fprintf(stderr,
			"hvmtrace score: give --damon RECORD, --sample SPEC or --dirty-rate FILE (one of "
			"them)\n");
		return TRACE_USAGE;
	}
	if (rates && (clock >= 0 || window || hot)) {
		fprintf(stderr,
			"hvmtrace score: --record-clock, --window and --hot are not for --dirty-rate\n");
		return TRACE_USAGE;
	}
	if (sample.given && (clock >= 0 || offset)) {
		fprintf(
		    stderr,
		    "hvmtrace score: --record-clock and --offset are for --damon's record, not --sample\n");
		return TRACE_USAGE;
	}
	if (record && window) {
		fprintf(stderr,
			"hvmtrace score: --window is for --sample (a DAMON record has its own windows)\n");
		return TRACE_USAGE;
	}
	window = window ? window : 10;
	r = trace_input_open("score", path);
	if (!r)
		return TRACE_USAGE;
	if (trace_input_span("score", path, r, &sel, &gfn_first, &gfn_end)) {
		status = TRACE_USAGE;
		goto out;
	}
	if (rates) {
		status = score_dirty_rate(path, r, &sel, gfn_first, gfn_end, rates, offset, json);
		goto out;
	}
	if (record) {
		if (damon_record_read(record, &rec, &err) || score_check_regions(record, &rec, r, &err)) {
			fprintf(stderr, "hvmtrace score: %s\n", err.msg);
			status = TRACE_USAGE;
			goto out;
		}
		x.rec = &rec;
		x.windows = rec.nsnaps;
		snprintf(x.tracker, sizeof(x.tracker), "%s (%s, %zu snapshots)", record, rec.format,
			 rec.nsnaps);
	} else {
		char what[100];

		sampler.spec = sample.spec;
		x.sampler = &sampler;
		x.window = window;
		sample_spec_describe(&sample.spec, what, sizeof(what));
		snprintf(x.tracker, sizeof(x.tracker), "sampling %s, windows of %u intervals", what, window);
	}
	written = hvt_trace_meta(r)->mode != HVT_MODE_AD;
	x.clock = clock < 0 ? CLOCK_RECORD : clock;
	x.offset_ns = offset;
	x.hot_percent = hot ? (unsigned)hot : 10;
	x.set = written ? 0 : 1;
	status = trace_input_walk("score", path, r, &sel, gfn_first, gfn_end, true, score_one, &x);
	if (status == -ENOMEM || (status >= 0 && status != TRACE_USAGE &&
				  (x.sampler ? x.last_layout && close_sample_window(&x, x.last_layout)
					     : x.cur < rec.nsnaps && close_window(&x)))) {
		fprintf(stderr, "hvmtrace score: out of memory\n");
		status = TRACE_OUTPUT_FAILED;
		goto out;
	}
	if (status != TRACE_OK && status != TRACE_INCOMPLETE)
		goto out;
	if (!x.nout) {
		say_apart(&x, path, record);
		status = TRACE_USAGE;
		goto out;
	}
	if (json)
		print_json(&x, path, record, written);
	else
		print_text(&x, path, record, written);
out:
	score_window_fini(&x.w);
	sample_tracker_fini(&sampler);
	free(x.out);
	damon_record_free(&rec);
	hvt_trace_reader_close(r);
	return status;
}
