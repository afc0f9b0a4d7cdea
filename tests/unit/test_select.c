// SPDX-License-Identifier: MIT
/*
 * Unit tests for the one selection every reading command takes (lib/analysis/select.c, select_walk.c):
 * the grammar of --from/--to and --range at its edges, including each input the two parsers it replaced
 * (report's and the pictures') read differently; which intervals a selection takes; runs cut to a range;
 * and the pictures' address axis (lib/analysis/gfn_bins.c): segments, gaps, bins.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hvmtrace/gfn_bins.h"
#include "hvmtrace/select.h"

#define SEC 1000000000ull
#define BAD ((enum hvt_point_kind)99)

static void test_points(void **state)
{
	static const struct {
		const char *in;
		enum hvt_point_kind kind; /* BAD: refused */
		uint64_t value;
	} cases[] = {
	    {"12", HVT_POINT_INTERVAL, 12},
	    {"0", HVT_POINT_INTERVAL, 0},
	    {"012", HVT_POINT_INTERVAL, 12},
	    {"18446744073709551615", HVT_POINT_INTERVAL, UINT64_MAX},
	    {"18446744073709551616", BAD, 0},
	    {"0s", HVT_POINT_TIME, 0}, /* the pictures refused it */
	    {"1.5s", HVT_POINT_TIME, 1500000000ull},
	    {".5s", HVT_POINT_TIME, 500000000ull},
	    {"5.s", HVT_POINT_TIME, 5 * SEC},
	    {"250ms", HVT_POINT_TIME, 250000000ull},
	    {"1500us", HVT_POINT_TIME, 1500000ull},
	    {"7ns", HVT_POINT_TIME, 7},
	    {"0.4ns", HVT_POINT_TIME, 0}, /* rounded; the pictures refused below 1 ns */
	    {"0.5ns", HVT_POINT_TIME, 1},
	    {"2m", HVT_POINT_TIME, 120 * SEC},
	    {"1.5m", HVT_POINT_TIME, 90 * SEC},
	    {"1h", HVT_POINT_TIME, 3600 * SEC},
	    {"3000000000s", HVT_POINT_TIME, 3000000000ull * SEC}, /* the pictures refused above 1e18 ns */
	    {"9223372036s", HVT_POINT_TIME, 9223372036ull * SEC},
	    {"9223372037s", BAD, 0}, /* 2^63 ns and more */
	    {"1.5", BAD, 0},         /* the pictures read a bare decimal as seconds */
	    {" 5", BAD, 0},          /* report read it as interval 5 */
	    {"5 ", BAD, 0},
	    {"5 s", BAD, 0},
	    {"1e3ms", BAD, 0}, /* both read exponents */
	    {"0x10s", BAD, 0}, /* and hex floats */
	    {"infs", BAD, 0},
	    {"nans", BAD, 0},
	    {"", BAD, 0},
	    {".", BAD, 0},
	    {".s", BAD, 0},
	    {"s", BAD, 0},
	    {"-3", BAD, 0},
	    {"+3", BAD, 0},
	    {"-1s", BAD, 0},
	    {"5S", BAD, 0},
	    {"5sec", BAD, 0},
	    {"1.2.3s", BAD, 0},
	    {"12x", BAD, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hvt_point p = {BAD, 42};
		struct hvt_err err = {{0}};
		int rc = hvt_point_parse(&p, cases[i].in, &err);

		if (cases[i].kind == BAD) {
			if (rc != -EINVAL || p.kind != BAD)
				fail_msg("'%s' was taken (kind %d, %llu)", cases[i].in, p.kind,
					 (unsigned long long)p.value);
			assert_non_null(strstr(err.msg, "is neither an interval number nor a time"));
		} else if (rc || p.kind != cases[i].kind || p.value != cases[i].value) {
			fail_msg("'%s': rc %d, kind %d, %llu; expected kind %d, %llu", cases[i].in, rc,
				 p.kind, (unsigned long long)p.value, cases[i].kind,
				 (unsigned long long)cases[i].value);
		}
	}
}

static void test_ranges(void **state)
{
	static const struct {
		const char *in;
		bool ok;
		uint64_t first, last;
	} cases[] = {
	    {"0x1000-0x1fff", true, 0x1000, 0x1fff},
	    {"0X10-0x20", true, 0x10, 0x20},
	    {"4096-8191", true, 4096, 8191},
	    {"010-020", true, 10, 20}, /* decimal: both parsers read octal (8-16) */
	    {"0x10-4200", true, 0x10, 4200},
	    {"5-5", true, 5, 5},
	    {"0-0xffffffffffffffff", true, 0, UINT64_MAX}, /* the pictures refused it */
	    {"5-2", false, 0, 0},
	    {"0x-5", false, 0, 0},
	    {"x-5", false, 0, 0},
	    {"5", false, 0, 0},
	    {"5-", false, 0, 0},
	    {"-5", false, 0, 0},
	    {"1-2x", false, 0, 0},
	    {"1-2-3", false, 0, 0},
	    {" 1-2", false, 0, 0},
	    {"1 -2", false, 0, 0},
	    {"1- 2", false, 0, 0},
	    {"+1-2", false, 0, 0},
	    {"1-+2", false, 0, 0},
	    {"0x1g-0x2", false, 0, 0},
	    {"0x10000000000000000-0x1", false, 0, 0},
	    {"18446744073709551616-1", false, 0, 0},
	    {"", false, 0, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hvt_selection sel = {0};
		struct hvt_err err = {{0}};
		int rc = hvt_gfn_range_parse(&sel, cases[i].in, &err);

		if (!cases[i].ok) {
			if (rc != -EINVAL || sel.gfns_given)
				fail_msg("'%s' was taken", cases[i].in);
			assert_non_null(strstr(err.msg, "is not GFN-GFN with first <= last"));
		} else if (rc || !sel.gfns_given || sel.gfn_first != cases[i].first ||
			   sel.gfn_last != cases[i].last) {
			fail_msg("'%s': rc %d, %llx-%llx", cases[i].in, rc, (unsigned long long)sel.gfn_first,
				 (unsigned long long)sel.gfn_last);
		}
	}
}

/* What a selection takes of ten intervals, seq i + 1 over [i s, i + 1 s): a bitmask of seqs. */
static unsigned takes(const char *from, const char *to)
{
	struct hvt_selection sel = {0};
	struct hvt_err err = {{0}};
	unsigned mask = 0;
	bool past = false;

	assert_true(!from || !hvt_point_parse(&sel.from, from, &err));
	assert_true(!to || !hvt_point_parse(&sel.to, to, &err));
	for (uint64_t i = 0; i < 10; i++) {
		bool now_past;

		if (hvt_select_takes(&sel, i + 1, i * SEC, (i + 1) * SEC, &now_past))
			mask |= 1u << (i + 1);
		/* once past, always past: the walk stops reading there */
		assert_true(!past || now_past);
		past = now_past;
	}
	return mask;
}

static void test_takes(void **state)
{
	(void)state;
	assert_int_equal(takes(NULL, NULL), 0x7fe);
	assert_int_equal(takes("3", "5"), 0x38); /* seqs, both included */
	assert_int_equal(takes("3", "3"), 0x8);
	assert_int_equal(takes("5", "3"), 0);
	assert_int_equal(takes("2s", "4s"), 0x18);    /* overlapping [2 s, 4 s): seqs 3 and 4 */
	assert_int_equal(takes("2.5s", "2.5s"), 0x8); /* the one interval around 2.5 s */
	assert_int_equal(takes("2s", "2s"), 0);       /* [2 s, 2 s) overlaps nothing */
	assert_int_equal(takes("0s", NULL), 0x7fe);   /* the start of the first interval */
	assert_int_equal(takes(NULL, "0s"), 0);
	assert_int_equal(takes("1500ms", "3"), 0xc); /* a time and a seq */
	assert_int_equal(takes("9", "1h"), 0x600);
	assert_int_equal(takes("10s", NULL), 0);
}

/* What hvt_select_check says of --from from --to to: NULL when it takes the selection. */
static const char *check(const char *from, const char *to)
{
	static struct hvt_err err;
	struct hvt_selection sel = {0};

	assert_true(!from || !hvt_point_parse(&sel.from, from, &err));
	assert_true(!to || !hvt_point_parse(&sel.to, to, &err));
	err.msg[0] = 0;
	return hvt_select_check(&sel, &err) ? err.msg : NULL;
}

static void test_check(void **state)
{
	(void)state;
	assert_null(check(NULL, NULL));
	assert_null(check("50", "100"));
	assert_null(check("50", "50"));
	assert_null(check("2.5s", "2.5s")); /* the interval around 2.5 s */
	assert_null(check("100", NULL));
	assert_null(check(NULL, "0s"));
	assert_null(check("100", "5s")); /* a seq and a time: only the trace can tell */
	assert_string_equal(check("100", "50"),
			    "--from 100 --to 50 select no interval: --from is after --to (reversed)");
	assert_string_equal(check("2.5s", "1s"),
			    "--from 2500ms --to 1s select no interval: --from is after --to (reversed)");
	assert_string_equal(check("1ns", "0s"),
			    "--from 1ns --to 0s select no interval: --from is after --to (reversed)");
}

static void test_clip(void **state)
{
	struct hvt_run v[] = {{10, 5}, {20, 10}, {40, 1}};
	struct hvt_runs src = {.v = v, .n = 3, .pages = 16}, dst = {0};
	const struct hvt_runs *out;

	(void)state;
	assert_ptr_equal(hvt_runs_clip(&dst, &src, 0, 100), &src); /* all inside: src itself */
	assert_ptr_equal(hvt_runs_clip(&dst, &src, 10, 41), &src);
	out = hvt_runs_clip(&dst, &src, 12, 25);
	assert_ptr_equal(out, &dst);
	assert_int_equal(out->n, 2);
	assert_int_equal(out->v[0].first, 12);
	assert_int_equal(out->v[0].count, 3);
	assert_int_equal(out->v[1].first, 20);
	assert_int_equal(out->v[1].count, 5);
	assert_int_equal(out->pages, 8);
	out = hvt_runs_clip(&dst, &src, 30, 40); /* between runs */
	assert_int_equal(out->n, 0);
	assert_int_equal(out->pages, 0);
	out = hvt_runs_clip(&dst, &src, 40, 41);
	assert_int_equal(out->n, 1);
	assert_int_equal(out->pages, 1);
	free(dst.v);
}

/* "first-end@bin0+nbins" (gap: "gap:" first) of every segment, as plot heatmap prints them. */
static const char *segs(const struct hvt_gfn_bins *b)
{
	static char buf[4096];
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < b->nseg && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s%llu-%llu@%llu+%llu", i ? " " : "",
				      b->seg[i].gap ? "gap:" : "", (unsigned long long)b->seg[i].first,
				      (unsigned long long)b->seg[i].end, (unsigned long long)b->seg[i].bin0,
				      (unsigned long long)b->seg[i].nbins);
	return buf;
}

static void test_bins(void **state)
{
	/* RAM [0, 10) and [11, 17): 16 pages, a 1-page hole (1/16 of the RAM: a gap) */
	struct series_slot edge[] = {{0, 10, "a"}, {11, 17, "b"}};
	/* one more page of RAM: the hole is less than 1/16 of it, to scale */
	struct series_slot small[] = {{0, 10, "a"}, {11, 18, "b"}};
	/* a hole of 100 below high RAM, and the range starting and ending in holes */
	struct series_slot far[] = {{0, 100, "low"}, {200, 300, "high"}};
	struct hvt_run v[] = {{95, 110}, {215, 1}}; /* 95-204 over a gap, and 215 */
	struct hvt_runs runs = {.v = v, .n = 2, .pages = 111};
	struct hvt_gfn_bins b;
	uint32_t bins[64] = {0};
	uint64_t ram[64];

	(void)state;
	hvt_gfn_bins_segment(&b, edge, 2, 0, 17);
	hvt_gfn_bins_size(&b, 4, 2);
	assert_string_equal(segs(&b), "0-10@0+3 gap:10-11@3+2 11-17@5+2");
	assert_int_equal(b.nbins, 7);
	assert_int_equal(b.scale_pages, 16);
	hvt_gfn_bins_segment(&b, small, 2, 0, 18);
	hvt_gfn_bins_size(&b, 4, 2);
	assert_string_equal(segs(&b), "0-18@0+5");
	assert_int_equal(b.ngaps, 0);

	/* a range from the middle of low RAM to past the end of high RAM's first part */
	hvt_gfn_bins_segment(&b, far, 2, 50, 250);
	hvt_gfn_bins_size(&b, 10, 0); /* the HTML display: gaps left out */
	assert_string_equal(segs(&b), "50-100@0+5 gap:100-200@5+0 200-250@5+5");
	hvt_gfn_bins_segment(&b, far, 2, 150, 250); /* starts in the hole */
	hvt_gfn_bins_size(&b, 10, 3);
	assert_string_equal(segs(&b), "gap:150-200@0+3 200-250@3+5");
	assert_null(hvt_gfn_bins_seg_of(&b, 250));
	assert_true(hvt_gfn_bins_seg_of(&b, 160)->gap);

	/* runs: pages in the gap are dropped, the rest binned across segments */
	hvt_gfn_bins_segment(&b, far, 2, 0, 300);
	hvt_gfn_bins_size(&b, 10, 1);
	assert_string_equal(segs(&b), "0-100@0+10 gap:100-200@10+1 200-300@11+10");
	hvt_gfn_bins_add(&b, &runs, bins);
	assert_int_equal(bins[9], 5);  /* 95-99 */
	assert_int_equal(bins[10], 0); /* the gap */
	assert_int_equal(bins[11], 5); /* 200-204 */
	assert_int_equal(bins[12], 1); /* 215 */
	hvt_gfn_bins_ram(&b, far, 2, ram);
	assert_int_equal(ram[0], 10);
	assert_int_equal(ram[10], 0);
	assert_int_equal(ram[20], 10);
}

/* More gaps than segments: what does not fit is drawn to scale, and the segments still tile the range. */
static void test_bins_many_gaps(void **state)
{
	struct series_slot s[100];
	struct hvt_gfn_bins b;

	(void)state;
	for (int i = 0; i < 100; i++)
		s[i] = (struct series_slot){.first = (uint64_t)i * 1000, .end = (uint64_t)i * 1000 + 10};
	hvt_gfn_bins_segment(&b, s, 100, 0, 99010);
	hvt_gfn_bins_size(&b, 1, 1);
	assert_int_equal(b.nseg, HVT_BINS_MAX_SEGS - 1);
	assert_int_equal(b.ngaps, HVT_BINS_MAX_SEGS / 2 - 1);
	for (unsigned i = 0; i < b.nseg; i++)
		assert_int_equal(b.seg[i].first, i ? b.seg[i - 1].end : 0);
	assert_int_equal(b.seg[b.nseg - 1].end, 99010);
	assert_false(b.seg[b.nseg - 1].gap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_points),         cmocka_unit_test(test_ranges),
	    cmocka_unit_test(test_takes),          cmocka_unit_test(test_check),
	    cmocka_unit_test(test_clip),           cmocka_unit_test(test_bins),
	    cmocka_unit_test(test_bins_many_gaps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
