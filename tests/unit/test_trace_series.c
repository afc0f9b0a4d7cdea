// SPDX-License-Identifier: MIT
/*
 * Unit tests for lib/analysis/trace_series.c, what the pictures read, and the walk under it
 * (lib/analysis/select_walk.c): the --range/--from/--to arguments as the pictures' option table takes them,
 * the RAM of every layout merged, and the selection of intervals and pages on a trace written here through
 * the trace writer, whose answers are known by construction; the work a walk can have done on its reading
 * thread (report's second part of the sweep).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "../../lib/analysis/select_ahead.h"
#include "hvmtrace/trace_input.h"
#include "hvmtrace/trace_series.h"
#include "hvmtrace/error.h"

#define NIV 6

static char path[64];

static int parse(hvt_opt_fn fn, void *value, const char *arg)
{
	struct hvt_option opt = {.value = value};
	char problem[128] = "";

	return fn(&opt, arg, problem, sizeof(problem));
}

static void test_parse_range(void **state)
{
	struct hvt_selection sel = {0};

	(void)state;
	assert_int_equal(parse(hvt_select_opt_range, &sel, "0x1000-0x1fff"), 0);
	assert_true(sel.gfns_given);
	assert_int_equal(sel.gfn_first, 0x1000);
	assert_int_equal(sel.gfn_last, 0x1fff);
	assert_int_equal(parse(hvt_select_opt_range, &sel, "5-5"), 0);
	assert_int_equal(sel.gfn_last - sel.gfn_first, 0);
	assert_int_equal(parse(hvt_select_opt_range, &sel, "5-2"), -1);
	assert_int_equal(parse(hvt_select_opt_range, &sel, "x-5"), -1);
	assert_int_equal(parse(hvt_select_opt_range, &sel, "5"), -1);
	assert_int_equal(parse(hvt_select_opt_range, &sel, "5-"), -1);
	assert_int_equal(parse(hvt_select_opt_range, &sel, "-5"), -1);
	assert_int_equal(parse(hvt_select_opt_range, &sel, "1-2x"), -1);
	/* the pictures' half-open range could not hold a last GFN of 2^64 - 1 and refused it; the one
	 * selection holds the last GFN, as report always did (tests/unit/test_select.c has the rest) */
	assert_int_equal(parse(hvt_select_opt_range, &sel, "0-0xffffffffffffffff"), 0);
	assert_true(sel.gfn_last == UINT64_MAX);
}

static void test_parse_point(void **state)
{
	struct hvt_point p = {0};

	(void)state;
	assert_int_equal(parse(hvt_select_opt_point, &p, "12"), 0);
	assert_int_equal(p.kind, HVT_POINT_INTERVAL);
	assert_int_equal(p.value, 12);
	assert_int_equal(parse(hvt_select_opt_point, &p, "1500ms"), 0);
	assert_int_equal(p.kind, HVT_POINT_TIME);
	assert_int_equal(p.value, 1500000000ull);
	assert_int_equal(parse(hvt_select_opt_point, &p, "2s"), 0);
	assert_int_equal(p.value, 2000000000ull);
	assert_int_equal(parse(hvt_select_opt_point, &p, "soon"), -1);
	assert_int_equal(parse(hvt_select_opt_point, &p, "-3"), -1);
}

/* Two layouts: slots [0, 256) "low" and [1024, 1280) "high"; the second adds [256, 512) "more". Interval i
 * (seq i + 1, [i s, i + 1 s) after 10 s) writes GFNs [16 i, 16 i + 8) of "low" and 1030 of "high". */
static void write_trace(void)
{
	static const char *layouts[] = {
	    "{\"generation\": 1, \"page_size\": 4096, \"slots\": [{\"slot\": 0, \"gpa\": 0, \"size\": 1048576, "
	    "\"backing\": \"anon\", \"name\": \"low\"}, {\"slot\": 1, \"gpa\": 4194304, \"size\": 1048576, "
	    "\"backing\": \"devmem\", \"name\": \"high\", \"extents\": [{\"gpa\": 4194304, \"hpa\": 0, \"size\": "
	    "1048576, \"channel\": \"s0.mc0.ch1\"}]}]}",
	    "{\"generation\": 2, \"page_size\": 4096, \"slots\": [{\"slot\": 0, \"gpa\": 0, \"size\": 1048576, "
	    "\"backing\": \"anon\", \"name\": \"low\"}, {\"slot\": 2, \"gpa\": 1048576, \"size\": 1048576, "
	    "\"backing\": \"anon\", \"name\": \"more\"}, {\"slot\": 1, \"gpa\": 4194304, \"size\": 1048576, "
	    "\"backing\": \"devmem\", \"name\": \"high\"}]}",
	};
	static const char meta_text[] =
	    "{\"tool\": \"test\", \"created\": \"\", \"host\": {\"hostname\": \"h\"}, \"vm\": {\"name\": \"\", "
	    "\"uuid\": \"\", \"pid\": 1, \"vmm\": \"\", \"accel\": \"kvm\"}, \"tracer\": {\"version\": \"\", \"cpu\": "
	    "0, \"harvest_cpu\": -1, \"command\": []}, \"mode\": \"dirty-log\", \"interval_ns\": 1000000000, "
	    "\"page_size\": 4096, \"written_available\": true, \"accessed_available\": false, "
	    "\"bandwidth_available\": false, \"channels\": [], \"t_armed_ns\": 0}";
	struct hvt_err err = {{0}};
	struct hvt_trace_writer *w;
	struct hvt_trace_meta meta;
	struct hvt_layout l[2];
	struct json_object *o = json_tokener_parse(meta_text);

	assert_int_equal(hvt_trace_meta_from_json(&meta, o, &err), 0);
	json_object_put(o);
	for (int k = 0; k < 2; k++) {
		o = json_tokener_parse(layouts[k]);
		assert_int_equal(hvt_layout_from_json(&l[k], o, &err), 0);
		json_object_put(o);
	}
	assert_int_equal(hvt_trace_create(&w, path, &meta, &err), 0);
	for (int i = 0; i < NIV; i++) {
		const struct hvt_layout *lay = &l[i < NIV / 2 ? 0 : 1];
		struct hvt_interval iv;

		if (i == 0 || i == NIV / 2)
			assert_int_equal(hvt_trace_write_layout(w, lay, &err), 0);
		assert_int_equal(hvt_interval_init(&iv, lay, HVT_IV_WRITTEN), 0);
		iv.seq = i + 1;
		iv.t_start_ns = 10000000000ull + i * 1000000000ull;
		iv.t_end_ns = iv.t_start_ns + 1000000000ull;
		hvt_pageset_set_range(&iv.written[0], 16 * i, 8);
		hvt_pageset_set(&iv.written[lay->nslots - 1], 6); /* GFN 1030 of "high" */
		assert_int_equal(hvt_trace_write_interval(w, &iv, &err), 0);
		hvt_interval_fini(&iv);
	}
	assert_int_equal(hvt_trace_close(w, &err), 0);
	hvt_trace_meta_fini(&meta);
	hvt_layout_fini(&l[0]);
	hvt_layout_fini(&l[1]);
}

static int setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "/tmp/hvt-test-series-%d.hvt", (int)getpid());
	write_trace();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static void test_whole_trace(void **state)
{
	struct hvt_selection sel = {0};
	struct trace_series s;

	(void)state;
	assert_int_equal(trace_series_load(&s, "test", path, &sel, NULL, NULL), 0);
	/* low (in both layouts) once, more next to it (its boundary kept), high after the gap */
	assert_int_equal(s.nslots, 3);
	assert_int_equal(s.slots[0].first, 0);
	assert_int_equal(s.slots[0].end, 256);
	assert_string_equal(s.slots[0].name, "low");
	assert_int_equal(s.slots[1].first, 256);
	assert_int_equal(s.slots[1].end, 512);
	assert_string_equal(s.slots[1].name, "more");
	assert_int_equal(s.slots[2].first, 1024);
	assert_int_equal(s.slots[2].end, 1280);
	assert_int_equal(s.gfn_first, 0);
	assert_int_equal(s.gfn_end, 1280);
	assert_int_equal(s.niv, NIV);
	for (int i = 0; i < NIV; i++) {
		assert_int_equal(s.iv[i].seq, i + 1);
		assert_true(s.iv[i].t0 == i && s.iv[i].t1 == i + 1);
		assert_int_equal(s.iv[i].written, 9);
		assert_int_equal(s.iv[i].accessed, 0);
	}
	assert_string_equal(series_channel_of(hvt_trace_layout(s.r, 1), 1030), "s0.mc0.ch1");
	assert_null(series_channel_of(hvt_trace_layout(s.r, 1), 5));
	trace_series_fini(&s);
}

struct runs {
	uint64_t pages, lo, hi;
};

/* The hook gets the interval's runs cut to the range. */
static int hook(void *ctx, const struct trace_series *s, const struct hvt_iv_runs *ir,
		const struct hvt_layout *l, uint64_t i)
{
	struct runs *r = &((struct runs *)ctx)[i];

	(void)l;
	assert_int_equal(ir->hdr.seq, s->iv[i].seq);
	for (size_t k = 0; k < ir->set[0].n; k++) {
		uint64_t gfn = ir->set[0].v[k].first, count = ir->set[0].v[k].count;

		assert_true(gfn >= s->gfn_first && gfn + count <= s->gfn_end);
		r->pages += count;
		r->lo = gfn < r->lo ? gfn : r->lo;
		r->hi = gfn + count > r->hi ? gfn + count : r->hi;
	}
	assert_int_equal(r->pages, ir->set[0].pages);
	return 0;
}

static void test_selection(void **state)
{
	struct hvt_selection sel = {0};
	struct trace_series s;
	struct runs r[NIV];

	(void)state;
	for (int i = 0; i < NIV; i++)
		r[i] = (struct runs){0, UINT64_MAX, 0};
	/* GFNs 20-1029 and seqs 2-4: interval seq 2 writes 16-23 (20-23 inside), seq 3 32-39, seq 4 48-55;
	 * GFN 1030 lies outside */
	assert_int_equal(parse(hvt_select_opt_range, &sel, "20-1029"), 0);
	assert_int_equal(parse(hvt_select_opt_point, &sel.from, "2"), 0);
	assert_int_equal(parse(hvt_select_opt_point, &sel.to, "4"), 0);
	assert_int_equal(trace_series_load(&s, "test", path, &sel, hook, r), 0);
	assert_int_equal(s.gfn_first, 20);
	assert_int_equal(s.gfn_end, 1030);
	assert_int_equal(s.niv, 3);
	assert_int_equal(s.iv[0].seq, 2);
	assert_int_equal(s.iv[0].written, 4);
	assert_int_equal(s.iv[1].written, 8);
	assert_int_equal(r[0].pages, 4);
	assert_int_equal(r[0].lo, 20);
	assert_int_equal(r[0].hi, 24);
	assert_int_equal(r[2].lo, 48);
	trace_series_fini(&s);

	/* by time: [2 s, 4 s) are seqs 3 and 4 */
	memset(&sel, 0, sizeof(sel));
	assert_int_equal(parse(hvt_select_opt_point, &sel.from, "2s"), 0);
	assert_int_equal(parse(hvt_select_opt_point, &sel.to, "4s"), 0);
	assert_int_equal(trace_series_load(&s, "test", path, &sel, NULL, NULL), 0);
	assert_int_equal(s.niv, 2);
	assert_int_equal(s.iv[0].seq, 3);
	assert_int_equal(s.iv[1].seq, 4);
	trace_series_fini(&s);
}

static void test_refused(void **state)
{
	struct hvt_selection sel = {0};
	struct trace_series s;

	(void)state;
	assert_int_equal(parse(hvt_select_opt_range, &sel, "2000-3000"), 0);
	assert_int_equal(trace_series_load(&s, "test", path, &sel, NULL, NULL), TRACE_USAGE);
	trace_series_fini(&s);
	memset(&sel, 0, sizeof(sel));
	assert_int_equal(parse(hvt_select_opt_point, &sel.from, "7"), 0);
	assert_int_equal(trace_series_load(&s, "test", path, &sel, NULL, NULL), TRACE_USAGE);
	trace_series_fini(&s);
	memset(&sel, 0, sizeof(sel));
	assert_int_equal(trace_series_load(&s, "test", "/nonexistent.hvt", &sel, NULL, NULL), TRACE_USAGE);
	trace_series_fini(&s);
}

struct seen {
	uint64_t n, seq[NIV], index[NIV], pages[NIV], t0_ns;
	uint64_t stop_after; /* return 7 after so many, 0: never */
};

static int see(void *ctx, const struct hvt_walk_iv *w)
{
	struct seen *x = ctx;

	assert_int_equal(w->k, x->n);
	x->seq[x->n] = w->ir->hdr.seq;
	x->index[x->n] = w->index;
	x->pages[x->n] = w->ir->set[0].pages;
	x->t0_ns = w->t0_ns;
	x->n++;
	return x->n == x->stop_after ? 7 : 0;
}

/* Walks path's --from from --to to --range range (NULL: not given); x NULL: only counts. */
static int walk(const char *from, const char *to, const char *range, struct seen *x, struct hvt_walk_end *end)
{
	struct hvt_selection sel = {0};
	struct hvt_trace_reader *r;
	struct hvt_err err = {{0}};
	uint64_t first, last;
	int rc;

	assert_true(!from || !hvt_point_parse(&sel.from, from, &err));
	assert_true(!to || !hvt_point_parse(&sel.to, to, &err));
	assert_true(!range || !hvt_gfn_range_parse(&sel, range, &err));
	assert_int_equal(hvt_trace_open(&r, path, &err), 0);
	assert_int_equal(hvt_select_span(r, &sel, &first, &last, &err), 0);
	rc = hvt_select_walk(r, &sel, first, last, x ? see : NULL, x, end, &err);
	hvt_trace_reader_close(r);
	return rc;
}

static void test_walk(void **state)
{
	struct hvt_selection sel = {.from = {HVT_POINT_TIME, 3000000000ull}};
	struct hvt_err err = {{0}};
	struct hvt_walk_end end;
	struct seen x = {0};

	(void)state;
	/* the intervals overlapping [from, to): seq i + 1 covers [i s, i + 1 s) */
	assert_int_equal(walk("2.5s", "2.5s", NULL, NULL, &end), 0);
	assert_int_equal(end.selected, 1);
	assert_int_equal(walk("0s", NULL, NULL, NULL, &end), 0); /* the pictures refused 0s */
	assert_int_equal(end.selected, NIV);
	assert_int_equal(walk(NULL, "2s", NULL, NULL, &end), 0);
	assert_int_equal(end.selected, 2);
	assert_int_equal(walk("2", "4", NULL, NULL, &end), 0);
	assert_int_equal(end.selected, 3);
	assert_false(end.damaged);

	/* a count reads, the walk decodes and cuts: the same intervals */
	assert_int_equal(walk("2", "4", "20-1029", &x, &end), 0);
	assert_int_equal(x.n, 3);
	assert_int_equal(x.seq[0], 2);
	assert_int_equal(x.index[2], 3);
	assert_int_equal(x.pages[0], 4); /* GFNs 20-23 of 16-23; 1030 is outside */
	assert_int_equal(x.pages[1], 8);
	assert_int_equal(x.t0_ns, 10000000000ull);

	/* the callback's status stops the walk */
	x = (struct seen){.stop_after = 2};
	assert_int_equal(walk(NULL, NULL, NULL, &x, &end), 7);
	assert_int_equal(x.n, 2);

	/* none: the message names what the whole trace covers, not what was read up to the first interval
	 * past the selection (it said 0-4 s, intervals 1-4) */
	assert_int_equal(walk("3s", "3s", NULL, NULL, &end), 0);
	assert_int_equal(end.selected, 0);
	assert_int_equal(hvt_select_none(&sel, &end, &err), -EINVAL);
	assert_string_equal(err.msg,
			    "--from/--to select no interval: the trace covers 0-6.000 s, intervals 1-6");
	assert_int_equal(walk("5", "2s", NULL, NULL, &end), 0); /* a seq after a time */
	assert_int_equal(end.selected, 0);
	assert_int_equal(end.last_seq, NIV);
	sel = (struct hvt_selection){0};
	assert_int_equal(hvt_select_none(&sel, &end, &err), -EINVAL);
	assert_string_equal(err.msg, "no interval of the trace could be read");
}

struct early {
	uint64_t n, seq[NIV], pages[NIV];
	uint64_t fail_at; /* fail the call with this number (from 1): 0, never */
};

/* The reading thread's work (hvt_select_walk_early): sees each selected interval, cut, before fn does. */
static int early(void *ctx, const struct hvt_iv_runs *ir, struct hvt_err *err)
{
	struct early *e = ctx;

	if (++e->n == e->fail_at)
		return hvt_err_set(err, -ENOMEM, "early: no room");
	e->seq[e->n - 1] = ir->hdr.seq;
	e->pages[e->n - 1] = ir->set[0].pages;
	return 0;
}

static int walk_early(struct early *e, struct seen *x, struct hvt_walk_end *end, struct hvt_err *err)
{
	struct hvt_selection sel = {0};
	struct hvt_trace_reader *r;
	uint64_t first, last;
	int rc;

	assert_int_equal(hvt_point_parse(&sel.from, "2", err), 0);
	assert_int_equal(hvt_point_parse(&sel.to, "4", err), 0);
	assert_int_equal(hvt_gfn_range_parse(&sel, "20-1029", err), 0);
	assert_int_equal(hvt_trace_open(&r, path, err), 0);
	assert_int_equal(hvt_select_span(r, &sel, &first, &last, err), 0);
	rc = hvt_select_walk_early(r, &sel, first, last, early, e, see, x, end, err);
	hvt_trace_reader_close(r);
	return rc;
}

/* The work done on the reading thread sees the selected intervals in order, cut as fn sees them; its error
 * ends the walk as a damaged interval does, after the intervals before it. */
static void test_walk_early(void **state)
{
	struct hvt_err err = {{0}};
	struct hvt_walk_end end;
	struct early e = {0};
	struct seen x = {0};

	(void)state;
	assert_int_equal(walk_early(&e, &x, &end, &err), 0);
	assert_int_equal(e.n, 3);
	assert_int_equal(x.n, 3);
	for (uint64_t i = 0; i < 3; i++) {
		assert_int_equal(e.seq[i], x.seq[i]);
		assert_int_equal(e.pages[i], x.pages[i]);
	}
	assert_int_equal(e.pages[0], 4); /* cut to the range, as fn sees it */
	assert_false(end.damaged);

	e = (struct early){.fail_at = 2};
	x = (struct seen){0};
	assert_int_equal(walk_early(&e, &x, &end, &err), 0);
	assert_int_equal(x.n, 1);
	assert_int_equal(x.seq[0], 2);
	assert_true(end.damaged);
	assert_int_equal(end.bad_rc, -ENOMEM);
	assert_int_equal(end.bad_index, 2);
	assert_string_equal(end.why.msg, "early: no room");
}

static void test_span(void **state)
{
	struct hvt_selection sel = {0};
	struct hvt_trace_reader *r;
	struct hvt_err err = {{0}};
	struct trace_series s;
	uint64_t first, end;

	(void)state;
	assert_int_equal(hvt_trace_open(&r, path, &err), 0);
	assert_int_equal(hvt_select_span(r, &sel, &first, &end, &err), 0);
	assert_int_equal(first, 0);
	assert_int_equal(end, 1280);
	assert_int_equal(hvt_gfn_range_parse(&sel, "1000-0xffffffffffffffff", &err), 0);
	assert_int_equal(hvt_select_span(r, &sel, &first, &end, &err), 0);
	assert_int_equal(first, 1000);
	assert_int_equal(end, 1280);
	/* wholly in the hole between "more" and "high": refused by every command, as report did */
	assert_int_equal(hvt_gfn_range_parse(&sel, "600-700", &err), 0);
	assert_int_equal(hvt_select_span(r, &sel, &first, &end, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "--range 0x258-0x2bc holds no guest RAM"));
	assert_int_equal(hvt_gfn_range_parse(&sel, "1280-2000", &err), 0);
	assert_int_equal(hvt_select_span(r, &sel, &first, &end, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "lies outside the guest's RAM (GFNs 0x0-0x4ff)"));
	hvt_trace_reader_close(r);
	assert_int_equal(hvt_gfn_range_parse(&sel, "600-700", &err), 0);
	assert_int_equal(trace_series_load(&s, "test", path, &sel, NULL, NULL), TRACE_USAGE);
	trace_series_fini(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_range), cmocka_unit_test(test_parse_point),
	    cmocka_unit_test(test_whole_trace), cmocka_unit_test(test_selection),
	    cmocka_unit_test(test_refused),     cmocka_unit_test(test_walk),
	    cmocka_unit_test(test_span),        cmocka_unit_test(test_walk_early),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
