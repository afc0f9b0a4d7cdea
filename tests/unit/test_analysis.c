// SPDX-License-Identifier: MIT
/*
 * Unit tests for the analyses (lib/analysis/) on traces written through the trace writer whose answers
 * are known by construction: a write-heavy block, a read-mostly block, a cold block, a mixed block and a
 * block whose accessed set steps up halfway (a phase). Sliding windows are checked against a brute-force
 * union of bitmaps on random traces, over seeds and window sizes, with the sweep on two threads (as report
 * runs it, and with blocks small enough that each thread sweeps many) and on one; without windows
 * (--no-windows), the same per-page counts.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "../../lib/analysis/analysis_sweep.h"
#include "hvmtrace/analysis.h"
#include "hvmtrace/error.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/util.h"

#define TEST_TMPDIR_NAME "analysis"
#include "test_tmpdir.h"

#define PAGE  4096ull
#define N     40              /* intervals */
#define T0    100000000000ull /* the first interval starts at 100 s */
#define SEC   1000000000ull
#define SLOT1 4096 /* first GFN of slot 1 */

static void make_meta(struct hvt_trace_meta *m, bool accessed)
{
	char text[1024];
	struct json_object *o;
	struct hvt_err err = {{0}};

	snprintf(
	    text, sizeof(text),
	    "{\"tool\": \"test_analysis\", \"created\": \"\", \"host\": {\"hostname\": \"h\"}, \"vm\": "
	    "{\"name\": \"t\", \"uuid\": \"\", \"pid\": 1, \"vmm\": \"\", \"accel\": \"kvm\"}, \"tracer\": "
	    "{\"version\": \"\", \"cpu\": 0, \"harvest_cpu\": -1, \"command\": []}, \"mode\": \"%s\", "
	    "\"interval_ns\": 1000000000, \"page_size\": 4096, \"written_available\": true, "
	    "\"accessed_available\": %s, \"bandwidth_available\": false, \"channels\": [], "
	    "\"t_armed_ns\": 0}",
	    accessed ? "ad" : "dirty-log", accessed ? "true" : "false");
	o = json_tokener_parse(text);
	assert_non_null(o);
	if (hvt_trace_meta_from_json(m, o, &err))
		fail_msg("metadata: %s", err.msg);
	json_object_put(o);
}

static void make_layout(struct hvt_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->generation = 1;
	l->page_size = PAGE;
	l->nslots = 2;
	l->slots = calloc(2, sizeof(*l->slots));
	assert_non_null(l->slots);
	l->slots[0] = (struct hvt_memslot){.slot = 0, .gpa = 0, .size = 1024 * PAGE, .backing = "anon"};
	l->slots[1] =
	    (struct hvt_memslot){.slot = 1, .gpa = SLOT1 * PAGE, .size = 512 * PAGE, .backing = "anon"};
}

/* Sets GFNs [first, first+count) in the slot sets. */
static void set_gfns(struct hvt_pageset *sets, uint64_t first, uint64_t count)
{
	if (first >= SLOT1)
		hvt_pageset_set_range(&sets[1], first - SLOT1, count);
	else
		hvt_pageset_set_range(&sets[0], first, count);
}

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

/* The known trace in dir/name: see the file comment. n intervals; torn: abandoned, then its last record cut.
 */
static void write_known(const char *name, bool accessed, int n, bool torn)
{
	struct hvt_trace_writer *w;
	struct hvt_trace_meta meta;
	struct hvt_layout l;
	struct hvt_err err = {{0}};
	char path[128];

	path_of(path, sizeof(path), name);
	make_meta(&meta, accessed);
	make_layout(&l);
	if (hvt_trace_create(&w, path, &meta, &err) || hvt_trace_write_layout(w, &l, &err))
		fail_msg("create: %s", err.msg);
	for (int k = 0; k < n; k++) {
		struct hvt_interval iv;

		assert_int_equal(
		    hvt_interval_init(&iv, &l, HVT_IV_WRITTEN | (accessed ? HVT_IV_ACCESSED : 0)), 0);
		iv.seq = (uint64_t)k + 1;
		iv.t_start_ns = T0 + (uint64_t)k * SEC;
		iv.t_end_ns = iv.t_start_ns + SEC;
		set_gfns(iv.written, 0, 100); /* W: write-heavy */
		if (k % 4 == 0)
			set_gfns(iv.written, 310, 40); /* M: written in 10 of 40 */
		if (accessed) {
			set_gfns(iv.accessed, 0, 100);
			set_gfns(iv.accessed, 100, 200); /* R: read-mostly */
			if (k == 0)
				set_gfns(iv.accessed, 300, 10); /* C: cold */
			set_gfns(iv.accessed, 310, 40);
			set_gfns(iv.accessed, SLOT1, k < 20 ? 100 : 300); /* the phase */
		}
		if (hvt_trace_write_interval(w, &iv, &err))
			fail_msg("interval %d: %s", k, err.msg);
		hvt_interval_fini(&iv);
	}
	if (torn) {
		hvt_trace_abandon(w);
		FILE *f = fopen(path, "r+");
		assert_non_null(f);
		assert_int_equal(fseek(f, 0, SEEK_END), 0);
		assert_int_equal(ftruncate(fileno(f), ftell(f) - 20), 0);
		fclose(f);
	} else if (hvt_trace_close(w, &err)) {
		fail_msg("close: %s", err.msg);
	}
	hvt_trace_meta_fini(&meta);
	hvt_layout_fini(&l);
}

static struct hvt_trace_reader *open_trace(const char *path)
{
	struct hvt_trace_reader *r;
	struct hvt_err err = {{0}};

	if (hvt_trace_open(&r, path, &err))
		fail_msg("open: %s", err.msg);
	return r;
}

static int load(struct hvt_analysis *a, const char *path, const struct hvt_selection *sel, uint32_t window,
		struct hvt_err *err)
{
	struct hvt_trace_reader *r = open_trace(path);
	struct hvt_analysis_opts o = {.window = window};
	int rc = hvt_analysis_load(a, r, sel, &o, err);

	hvt_trace_reader_close(r);
	return rc;
}

/* dir/name loaded whole with this window; a failure fails the test. */
static void load_whole(struct hvt_analysis *a, const char *name, uint32_t window)
{
	struct hvt_selection sel = {0};
	struct hvt_err err = {{0}};
	char p[128];

	path_of(p, sizeof(p), name);
	if (load(a, p, &sel, window, &err))
		fail_msg("load: %s", err.msg);
}

static void test_known_counts(void **state)
{
	struct hvt_analysis a;

	(void)state;
	write_known("known.hvt", true, N, false);
	load_whole(&a, "known.hvt", 4);
	assert_true(a.complete);
	assert_int_equal(a.n, N);
	assert_int_equal(a.gfn_first, 0);
	assert_int_equal(a.npages, SLOT1 + 512);
	assert_int_equal(a.ram_pages, 1024 + 512);
	assert_int_equal(a.n_written, N);
	assert_int_equal(a.n_accessed, N);
	for (uint64_t k = 0; k < N; k++) {
		assert_int_equal(a.iv[k].seq, k + 1);
		assert_int_equal(a.iv[k].t_start_ns, k * SEC);
		assert_int_equal(a.iv[k].written, 100 + (k % 4 == 0 ? 40 : 0));
		assert_int_equal(a.iv[k].accessed, 340 + (k == 0 ? 10 : 0) + (k < 20 ? 100 : 300));
		assert_int_equal(a.iv[k].read_bytes, HVT_NA);
		assert_int_equal(a.iv[k].written_not_accessed, HVT_NA);
	}
	/* window of 4: written = W plus M once an interval with k % 4 == 0 is inside (always) */
	for (uint64_t k = 0; k < N; k++)
		assert_int_equal(a.iv[k].win_written, 140);
	assert_int_equal(a.iv[0].win_accessed, 450);
	assert_int_equal(a.iv[3].win_accessed, 450); /* C (interval 0) still inside */
	assert_int_equal(a.iv[4].win_accessed, 440); /* C has left */
	assert_int_equal(a.iv[19].win_accessed, 440);
	assert_int_equal(a.iv[20].win_accessed, 640); /* the phase step */
	for (uint64_t g = 0; g < a.npages; g++) {
		uint32_t w = g < 100 ? N : (g >= 310 && g < 350) ? 10 : 0;
		uint32_t acc = g < 300 || (g >= 310 && g < 350)      ? N
			       : g >= 300 && g < 310                 ? 1
			       : g >= SLOT1 && g < SLOT1 + 100       ? N
			       : g >= SLOT1 + 100 && g < SLOT1 + 300 ? 20
								     : 0;
		assert_int_equal(hvt_page_count(&a, HVT_SET_WRITTEN, g), w);
		assert_int_equal(hvt_page_count(&a, HVT_SET_ACCESSED, g), acc);
		assert_int_equal(hvt_page_is_ram(&a, g), g < 1024 || g >= SLOT1);
	}
	hvt_analysis_fini(&a);
}

static void test_histogram_cdf(void **state)
{
	struct hvt_analysis a;
	struct hvt_cdf_point pts[N + 1];
	uint64_t hist[N + 1];

	(void)state;
	load_whole(&a, "known.hvt", 0);
	assert_int_equal(hvt_write_histogram(&a, hist), 0);
	for (int j = 0; j <= N; j++)
		assert_int_equal(hist[j], j == N ? 100 : j == 10 ? 40 : j == 0 ? 1536 - 140 : 0);
	assert_int_equal(hvt_write_cdf(hist, N, pts), 2);
	assert_int_equal(pts[0].min_count, N);
	assert_int_equal(pts[0].pages, 100);
	assert_float_equal(pts[0].pages_pct, 100.0 * 100 / 140, 1e-9);
	assert_float_equal(pts[0].writes_pct, 100.0 * 4000 / 4400, 1e-9);
	assert_int_equal(pts[1].min_count, 10);
	assert_float_equal(pts[1].pages_pct, 100.0, 1e-9);
	assert_float_equal(pts[1].writes_pct, 100.0, 1e-9);
	hvt_analysis_fini(&a);
}

static enum hvt_page_class known_class(uint64_t g, bool accessed)
{
	if (g < 100)
		return HVT_CLASS_WRITE_HEAVY;
	if (g >= 310 && g < 350)
		return HVT_CLASS_MIXED;
	if (!accessed)
		return HVT_CLASS_UNKNOWN;
	if (g < 300 || (g >= SLOT1 && g < SLOT1 + 300))
		return HVT_CLASS_READ_MOSTLY;
	if (g < 310)
		return HVT_CLASS_COLD;
	return HVT_CLASS_UNTOUCHED;
}

static void test_classes(void **state)
{
	struct hvt_analysis a;
	struct hvt_region_class *rc;
	uint64_t nrc;

	(void)state;
	load_whole(&a, "known.hvt", 0);
	for (uint64_t g = 0; g < a.npages; g++)
		if (hvt_page_is_ram(&a, g))
			assert_int_equal(hvt_page_class(&a, &hvt_class_defaults, g), known_class(g, true));
	assert_int_equal(hvt_region_classes(&a, &hvt_class_defaults, UINT64_MAX, &rc, &nrc), 0);
	assert_int_equal(nrc, 3); /* 0, 512 and 4096: the hole between holds no RAM */
	assert_int_equal(rc[0].gfn_first, 0);
	assert_int_equal(rc[0].pages[HVT_CLASS_WRITE_HEAVY], 100);
	assert_int_equal(rc[0].pages[HVT_CLASS_READ_MOSTLY], 200);
	assert_int_equal(rc[0].pages[HVT_CLASS_COLD], 10);
	assert_int_equal(rc[0].pages[HVT_CLASS_MIXED], 40);
	assert_int_equal(rc[0].pages[HVT_CLASS_UNTOUCHED], 162);
	assert_int_equal(rc[0].cls, HVT_CLASS_READ_MOSTLY);
	assert_int_equal(rc[1].gfn_first, 512);
	assert_int_equal(rc[1].cls, HVT_CLASS_UNTOUCHED);
	assert_int_equal(rc[2].gfn_first, SLOT1);
	assert_int_equal(rc[2].pages[HVT_CLASS_READ_MOSTLY], 300);
	assert_int_equal(rc[2].cls, HVT_CLASS_READ_MOSTLY);
	free(rc);

	/* a stricter write-heavy threshold moves W out of it: written in every interval, it is then mixed */
	struct hvt_class_thresholds t = hvt_class_defaults;
	t.write_heavy = 1.01;
	assert_int_equal(hvt_page_class(&a, &t, 0), HVT_CLASS_MIXED);
	hvt_analysis_fini(&a);
}

static void test_phases(void **state)
{
	struct hvt_analysis a;
	uint64_t wr[N], ac[N], out[N];

	(void)state;
	load_whole(&a, "known.hvt", 0);
	for (int k = 0; k < N; k++) {
		wr[k] = a.iv[k].written;
		ac[k] = a.iv[k].accessed;
	}
	assert_int_equal(hvt_phases_detect(ac, N, NULL, out), 1);
	assert_int_equal(out[0], 20);
	assert_int_equal(hvt_phases_detect(wr, N, NULL, out), 0); /* a periodic ripple is no phase */
	hvt_analysis_fini(&a);

	/* steps both ways, a missing value skipped over, a change mid-interval found within one interval */
	const uint64_t s[] = {10, 10, 10, 10, 50, 50, HVT_NA, 50, 50, 5, 5, 5, 5, 30, 60, 60, 60, 60};
	assert_int_equal(hvt_phases_detect(s, 18, NULL, out), 3);
	assert_int_equal(out[0], 4);
	assert_int_equal(out[1], 9);
	assert_true(out[2] == 13 || out[2] == 14);
}

/*
 * The array program at page level, as the lab traces it (tests/lab/qemu_init.sh, run_array): 16 system
 * pages accessed in every interval; 3 idle intervals; "copy" (writes c, reads a) for 6; the switch to
 * "add" (also reads b) at a fraction tenths/10 through interval ARR_SWITCH, which then holds that fraction
 * of b; "add" for 6; idle for 3. Each array is 100 pages, so the accessed set steps from 216 to 316 pages.
 */
#define ARR_N      19
#define ARR_SWITCH 9
static void write_array(const char *path, int tenths)
{
	struct hvt_trace_writer *w;
	struct hvt_trace_meta meta;
	struct hvt_layout l;
	struct hvt_err err = {{0}};

	make_meta(&meta, true);
	make_layout(&l);
	if (hvt_trace_create(&w, path, &meta, &err) || hvt_trace_write_layout(w, &l, &err))
		fail_msg("create: %s", err.msg);
	for (int k = 0; k < ARR_N; k++) {
		bool copy = k >= 3 && k <= ARR_SWITCH, add = k >= ARR_SWITCH && k < ARR_N - 3;
		struct hvt_interval iv;

		assert_int_equal(hvt_interval_init(&iv, &l, HVT_IV_WRITTEN | HVT_IV_ACCESSED), 0);
		iv.seq = (uint64_t)k + 1;
		iv.t_start_ns = T0 + (uint64_t)k * SEC;
		iv.t_end_ns = iv.t_start_ns + SEC;
		set_gfns(iv.accessed, 0, 16);
		if (copy || add) {
			set_gfns(iv.written, 300, 100); /* c */
			set_gfns(iv.accessed, 300, 100);
			set_gfns(iv.accessed, 100, 100); /* a */
		}
		if (add && (k > ARR_SWITCH || tenths))
			set_gfns(iv.accessed, 200, k > ARR_SWITCH ? 100 : 10 * (uint64_t)tenths); /* b */
		if (hvt_trace_write_interval(w, &iv, &err))
			fail_msg("interval %d: %s", k, err.msg);
		hvt_interval_fini(&iv);
	}
	if (hvt_trace_close(w, &err))
		fail_msg("close: %s", err.msg);
	hvt_trace_meta_fini(&meta);
	hvt_layout_fini(&l);
}

/* Wherever in its interval the copy→add switch falls, a boundary lies in that interval or the next. */
static void test_phase_switch_mid_interval(void **state)
{
	struct hvt_selection sel = {0};
	struct hvt_err err = {{0}};
	char p[128];

	(void)state;
	path_of(p, sizeof(p), "array.hvt");
	for (int tenths = 0; tenths <= 10; tenths++) {
		struct hvt_analysis a;
		uint64_t ac[ARR_N], out[ARR_N], n, at_switch = 0;

		write_array(p, tenths);
		if (load(&a, p, &sel, 0, &err))
			fail_msg("load: %s", err.msg);
		for (int k = 0; k < ARR_N; k++)
			ac[k] = a.iv[k].accessed;
		assert_int_equal(ac[ARR_SWITCH], 216 + 10 * tenths);
		n = hvt_phases_detect(ac, ARR_N, NULL, out);
		for (uint64_t i = 0; i < n; i++)
			at_switch += out[i] == ARR_SWITCH || out[i] == ARR_SWITCH + 1;
		if (n != 3 || out[0] != 3 || at_switch != 1 || out[2] != ARR_N - 3)
			fail_msg("switch %d/10 through interval %d: %" PRIu64 " boundaries (%" PRIu64
				 ", %" PRIu64 ", %" PRIu64 "); expected 3, 9 or 10, 16",
				 tenths, ARR_SWITCH, n, n > 0 ? out[0] : 0, n > 1 ? out[1] : 0,
				 n > 2 ? out[2] : 0);
		hvt_analysis_fini(&a);
	}
}

static void test_selection(void **state)
{
	struct hvt_selection sel = {0};
	struct hvt_analysis a;
	struct hvt_err err = {{0}};
	char p[128];

	(void)state;
	path_of(p, sizeof(p), "known.hvt");
	assert_int_equal(hvt_point_parse(&sel.from, "5", &err), 0);
	assert_int_equal(hvt_point_parse(&sel.to, "9", &err), 0);
	if (load(&a, p, &sel, 0, &err))
		fail_msg("load: %s", err.msg);
	assert_int_equal(a.n, 5);
	assert_int_equal(a.first_index, 4);
	assert_int_equal(a.iv[0].seq, 5);
	assert_int_equal(hvt_page_count(&a, HVT_SET_WRITTEN, 0), 5);
	assert_int_equal(hvt_page_count(&a, HVT_SET_WRITTEN, 310), 2); /* k = 4 and 8 */
	hvt_analysis_fini(&a);

	assert_int_equal(hvt_point_parse(&sel.from, "10s", &err), 0);
	assert_int_equal(sel.from.kind, HVT_POINT_TIME);
	assert_int_equal(hvt_point_parse(&sel.to, "15000ms", &err), 0);
	assert_int_equal(sel.to.value, 15 * SEC);
	if (load(&a, p, &sel, 0, &err))
		fail_msg("load: %s", err.msg);
	assert_int_equal(a.n, 5);
	assert_int_equal(a.iv[0].seq, 11);
	assert_int_equal(a.iv[4].seq, 15);
	hvt_analysis_fini(&a);

	sel = (struct hvt_selection){0};
	assert_int_equal(hvt_gfn_range_parse(&sel, "0x1000-4200", &err), 0);
	if (load(&a, p, &sel, 0, &err))
		fail_msg("load: %s", err.msg);
	assert_int_equal(a.gfn_first, SLOT1);
	assert_int_equal(a.npages, 105);
	assert_int_equal(a.ram_pages, 105);
	assert_int_equal(a.iv[0].written, 0);
	assert_int_equal(a.iv[0].accessed, 100);
	assert_int_equal(a.iv[N - 1].accessed, 105);
	hvt_analysis_fini(&a);
}

static void test_bad_selections(void **state)
{
	struct hvt_selection sel = {0};
	struct hvt_analysis a;
	struct hvt_err err = {{0}};
	char p[128], empty[128];

	(void)state;
	path_of(p, sizeof(p), "known.hvt");
	assert_int_equal(hvt_point_parse(&sel.from, "12x", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'12x'"));
	assert_int_equal(hvt_point_parse(&sel.from, "-3", &err), -EINVAL);
	assert_int_equal(hvt_gfn_range_parse(&sel, "10", &err), -EINVAL);
	assert_int_equal(hvt_gfn_range_parse(&sel, "20-10", &err), -EINVAL);
	assert_int_equal(hvt_gfn_range_parse(&sel, "-10", &err), -EINVAL);

	sel = (struct hvt_selection){0};
	assert_int_equal(hvt_gfn_range_parse(&sel, "5000-6000", &err), 0);
	assert_int_equal(load(&a, p, &sel, 0, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "outside the guest's RAM"));
	assert_int_equal(hvt_gfn_range_parse(&sel, "1100-1200", &err), 0); /* the hole */
	assert_int_equal(load(&a, p, &sel, 0, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no guest RAM"));

	sel = (struct hvt_selection){0};
	assert_int_equal(hvt_point_parse(&sel.from, "100s", &err), 0);
	assert_int_equal(load(&a, p, &sel, 0, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "select no interval"));
	sel = (struct hvt_selection){0};
	assert_int_equal(hvt_point_parse(&sel.from, "41", &err), 0);
	assert_int_equal(load(&a, p, &sel, 0, &err), -EINVAL);

	path_of(empty, sizeof(empty), "empty.hvt");
	write_known("empty.hvt", true, 0, false);
	sel = (struct hvt_selection){0};
	assert_int_equal(load(&a, empty, &sel, 0, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "no intervals"));
}

static void test_dirty_log_not_available(void **state)
{
	struct hvt_analysis a;

	(void)state;
	write_known("dirty.hvt", false, N, false);
	load_whole(&a, "dirty.hvt", 0);
	assert_int_equal(a.n_accessed, 0);
	for (int k = 0; k < N; k++) {
		assert_int_equal(a.iv[k].accessed, HVT_NA);
		assert_int_equal(a.iv[k].win_accessed, HVT_NA);
		assert_int_not_equal(a.iv[k].written, HVT_NA);
	}
	for (uint64_t g = 0; g < a.npages; g++)
		if (hvt_page_is_ram(&a, g))
			assert_int_equal(hvt_page_class(&a, &hvt_class_defaults, g), known_class(g, false));
	hvt_analysis_fini(&a);
}

static void test_torn(void **state)
{
	struct hvt_analysis a;

	(void)state;
	write_known("torn.hvt", true, 10, true);
	load_whole(&a, "torn.hvt", 0);
	assert_false(a.complete);
	assert_true(a.truncated);
	assert_int_equal(a.n, 9);
	assert_true(strlen(a.problem) > 0);
	assert_int_equal(hvt_page_count(&a, HVT_SET_WRITTEN, 0), 9);
	hvt_analysis_fini(&a);
}

/* ---- windows against brute force ---- */

static uint64_t rng;

static void random_sets(struct hvt_pageset *sets, uint32_t nslots)
{
	for (uint32_t s = 0; s < nslots; s++) {
		uint64_t ops = hvt_splitmix64(&rng) % 6;

		for (uint64_t k = 0; k < ops; k++) {
			uint64_t first = hvt_splitmix64(&rng) % sets[s].npages;
			uint64_t count = 1 + hvt_splitmix64(&rng) % 40;

			hvt_pageset_set_range(
			    &sets[s], first, first + count > sets[s].npages ? sets[s].npages - first : count);
		}
	}
}

/*
 * The chunked counts against a dense reference kept only here: every page of the range visited one by one
 * (what the analyses did with an array per page before issue 25), for the spans, the class runs and the
 * 2 MiB regions. acc[g]: the accessed count of GFN g (the trace's sets); written sets are none.
 */
struct dense_walk {
	const struct hvt_analysis *a;
	uint64_t next; /* the page the next span or run must start at or after */
	uint64_t seen; /* RAM pages seen */
	const uint32_t *acc;
};

static int dense_span(void *ctx, const struct hvt_page_span *s)
{
	struct dense_walk *x = ctx;

	assert_true(s->count > 0 && s->first >= x->next);
	for (uint64_t i = x->next; i < s->first; i++)
		assert_false(hvt_page_is_ram(x->a, i)); /* a page skipped is not RAM */
	for (uint64_t j = 0; j < s->count; j++) {
		uint64_t i = s->first + j;

		assert_true(hvt_page_is_ram(x->a, i));
		assert_int_equal(s->count_of[1] ? s->count_of[1][j] : 0, x->acc[x->a->gfn_first + i]);
		assert_int_equal(hvt_page_count(x->a, HVT_SET_ACCESSED, i), x->acc[x->a->gfn_first + i]);
	}
	x->next = s->first + s->count;
	x->seen += s->count;
	return 0;
}

static int dense_run(void *ctx, uint64_t first, uint64_t count, enum hvt_page_class c)
{
	struct dense_walk *x = ctx;
	const struct hvt_analysis *a = x->a;
	uint64_t i = x->next, j;

	while (i < a->npages && !hvt_page_is_ram(a, i))
		i++;
	/* the old loop: from the next RAM page, as far as RAM of one class goes */
	for (j = i + 1;
	     j < a->npages && hvt_page_is_ram(a, j) &&
	     hvt_page_class(a, &hvt_class_defaults, j) == hvt_page_class(a, &hvt_class_defaults, i);
	     j++)
		;
	assert_int_equal(first, i);
	assert_int_equal(count, j - i);
	assert_int_equal(c, hvt_page_class(a, &hvt_class_defaults, i));
	x->next = j;
	return 0;
}

static void check_dense(const struct hvt_analysis *a, const uint32_t *acc)
{
	struct dense_walk x = {.a = a, .acc = acc};
	struct hvt_region_class *rc;
	uint64_t nrc, n = 0, first = a->gfn_first / HVT_REGION_PAGES * HVT_REGION_PAGES;

	assert_int_equal(hvt_page_spans(a, dense_span, &x), 0);
	assert_int_equal(x.seen, a->ram_pages);
	x.next = 0;
	assert_int_equal(hvt_class_runs(a, &hvt_class_defaults, dense_run, &x), 0);
	for (uint64_t i = x.next; i < a->npages; i++)
		assert_false(hvt_page_is_ram(a, i)); /* no RAM after the last run */
	assert_int_equal(hvt_region_classes(a, &hvt_class_defaults, UINT64_MAX, &rc, &nrc), 0);
	for (uint64_t g = first; g < a->gfn_first + a->npages; g += HVT_REGION_PAGES) {
		uint64_t pages[HVT_CLASS_COUNT] = {0};
		bool ram = false;

		for (uint64_t p = g; p < g + HVT_REGION_PAGES; p++)
			if (p >= a->gfn_first && p < a->gfn_first + a->npages &&
			    hvt_page_is_ram(a, p - a->gfn_first)) {
				pages[hvt_page_class(a, &hvt_class_defaults, p - a->gfn_first)]++;
				ram = true;
			}
		if (!ram)
			continue;
		assert_true(n < nrc);
		assert_int_equal(rc[n].gfn_first, g);
		assert_memory_equal(rc[n].pages, pages, sizeof(pages));
		n++;
	}
	assert_int_equal(n, nrc);
	free(rc);
}

static void test_windows_brute_force(void **state)
{
	enum { NI = 37 };
	static const uint32_t windows[] = {1, 2, 3, 5, 7, 36, 40};
	char p[128];

	(void)state;
	path_of(p, sizeof(p), "random.hvt");
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct hvt_trace_writer *w;
		struct hvt_trace_meta meta;
		struct hvt_layout l;
		struct hvt_err err = {{0}};
		static struct hvt_pageset sets[NI][2]; /* [interval][slot], the accessed sets */
		static uint32_t acc[SLOT1 + 512];      /* by GFN: intervals that accessed it */

		rng = seed;
		make_meta(&meta, true);
		make_layout(&l);
		assert_int_equal(hvt_trace_create(&w, p, &meta, &err), 0);
		assert_int_equal(hvt_trace_write_layout(w, &l, &err), 0);
		for (int k = 0; k < NI; k++) {
			struct hvt_interval iv;

			assert_int_equal(hvt_interval_init(&iv, &l, HVT_IV_WRITTEN | HVT_IV_ACCESSED), 0);
			iv.seq = (uint64_t)k + 1;
			iv.t_start_ns = (uint64_t)k * SEC;
			iv.t_end_ns = iv.t_start_ns + SEC;
			random_sets(iv.accessed, 2);
			for (int s = 0; s < 2; s++)
				assert_int_equal(hvt_pageset_copy(&sets[k][s], &iv.accessed[s]), 0);
			assert_int_equal(hvt_trace_write_interval(w, &iv, &err), 0);
			hvt_interval_fini(&iv);
		}
		assert_int_equal(hvt_trace_close(w, &err), 0);
		hvt_trace_meta_fini(&meta);
		memset(acc, 0, sizeof(acc));
		for (int k = 0; k < NI; k++)
			for (int s = 0; s < 2; s++)
				for (uint64_t i = 0; i < sets[k][s].npages; i++)
					acc[(s ? SLOT1 : 0) + i] += hvt_pageset_test(&sets[k][s], i);
		/* a range that starts and ends inside regions, over the hole, with chunks cut by it */
		{
			struct hvt_selection sel = {0};
			struct hvt_analysis a;

			assert_int_equal(hvt_gfn_range_parse(&sel, "0x1ff-0x1100", &err), 0);
			if (load(&a, p, &sel, 0, &err))
				fail_msg("load: %s", err.msg);
			check_dense(&a, acc);
			hvt_analysis_fini(&a);
		}

		/* --no-windows: the same counts from the sweep of counts only, and no window */
		{
			struct hvt_selection sel = {0};
			struct hvt_analysis a;
			struct hvt_trace_reader *r = open_trace(p);
			struct hvt_analysis_opts o = {.window = 7, .no_windows = true};

			if (hvt_analysis_load(&a, r, &sel, &o, &err))
				fail_msg("load: %s", err.msg);
			hvt_trace_reader_close(r);
			check_dense(&a, acc);
			assert_int_equal(a.window, 0);
			for (int k = 0; k < NI; k++) {
				assert_int_equal(a.iv[k].win_accessed, HVT_NA);
				assert_int_equal(a.iv[k].win_written, HVT_NA);
			}
			hvt_analysis_fini(&a);
		}

		for (size_t wi = 0; wi < sizeof(windows) / sizeof(windows[0]) * 3; wi++) {
			struct hvt_selection sel = {0};
			struct hvt_analysis a;
			struct hvt_trace_reader *r = open_trace(p);
			struct hvt_analysis_opts o = {.window = windows[wi / 3]};
			/* the sweep on two threads as report runs it (the blocks of 128 MiB: here all in the
			 * reading thread's one), on two with blocks of a chunk (each thread many), on one */
			static const struct hvt_sweep_tuning how[3] = {
			    {0}, {.block = HVT_COUNT_CHUNK}, {.one_part = true}};

			if (hvt_analysis_load_tuned(&a, r, &sel, &o, &how[wi % 3], &err))
				fail_msg("load: %s", err.msg);
			hvt_trace_reader_close(r);
			if (wi < 3)
				check_dense(&a, acc);
			for (int k = 0; k < NI; k++) {
				uint64_t want = 0;

				for (int s = 0; s < 2; s++) {
					struct hvt_pageset u;

					assert_int_equal(hvt_pageset_init(&u, sets[k][s].npages), 0);
					for (int j = k; j >= 0 && j > k - (int)windows[wi / 3]; j--)
						hvt_pageset_union(&u, &sets[j][s]);
					want += hvt_pageset_count(&u);
					hvt_pageset_fini(&u);
				}
				if (a.iv[k].win_accessed != want)
					fail_msg(
					    "seed %llu window %u (sweep %zu) interval %d: %llu pages, brute force %llu",
					    (unsigned long long)seed, windows[wi / 3], wi % 3, k,
					    (unsigned long long)a.iv[k].win_accessed,
					    (unsigned long long)want);
			}
			hvt_analysis_fini(&a);
		}
		for (int k = 0; k < NI; k++)
			for (int s = 0; s < 2; s++)
				hvt_pageset_fini(&sets[k][s]);
		hvt_layout_fini(&l);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_known_counts),
	    cmocka_unit_test(test_histogram_cdf),
	    cmocka_unit_test(test_classes),
	    cmocka_unit_test(test_phases),
	    cmocka_unit_test(test_phase_switch_mid_interval),
	    cmocka_unit_test(test_selection),
	    cmocka_unit_test(test_bad_selections),
	    cmocka_unit_test(test_dirty_log_not_available),
	    cmocka_unit_test(test_torn),
	    cmocka_unit_test(test_windows_brute_force),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
