// SPDX-License-Identifier: MIT
/*
 * Unit tests for the energy what-if (lib/analysis/analysis_energy.c, lib/analysis/energy_model.c) on traces
 * written through the trace writer whose bytes and pages are known by construction: a block written in every
 * interval (write-heavy), a block written in one interval of five (not), a read-only block, and per-interval
 * bytes that grow with the interval. The expected bytes and joules are worked out here from the construction
 * and the model's figures, not from the code under test. The same blocks moved apart, the write-heavy one
 * inside a later chunk of counts and the read one across it (the walk for the write-heavy share is cut to the
 * chunks holding write-heavy pages), and without a write-heavy block. Also: the defaults' derivations
 * (docs/energy.md), the model file's overrides and its bad input.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "hvmtrace/analysis.h"
#include "hvmtrace/energy.h"
#include "hvmtrace/error.h"
#include "hvmtrace/trace.h"

#define TEST_TMPDIR_NAME "energy"
#include "test_tmpdir.h"

#define PAGE  4096ull
#define NPG   1024 /* one slot of 4 MiB */
#define N     10   /* intervals of 1 s */
#define SEC   1000000000ull
#define HEAVY 100 /* pages [0, 100): written in every interval */
#define SOME  40  /* pages [200, 240): written when k % 5 == 0 */
#define READ  300 /* pages [0, 300): accessed in every interval */

enum bw { BW_NONE, BW_SPLIT, BW_TOTAL };

/* Where the blocks lie: pages [heavy_first, + heavy) written in every interval, [some_first, + SOME) in one
 * of five, [read_first, + read) accessed in every interval, of npg pages. */
struct blocks {
	uint64_t npg, heavy_first, heavy, some_first, read_first, read;
};
static const struct blocks together = {NPG, 0, HEAVY, 200, 0, READ};
static const struct blocks apart = {4 * HVT_COUNT_CHUNK, 600, HEAVY, 1700, 100, 1800};
static const struct blocks no_heavy = {NPG, 0, 0, 200, 0, READ};

static void near(double got, double want)
{
	if (fabs(got - want) > 1e-9 * fabs(want) + 1e-15)
		fail_msg("got %.17g, want %.17g", got, want);
}

static void make_meta(struct hvt_trace_meta *m, bool accessed, enum bw bw)
{
	char text[2048];
	struct json_object *o;
	struct hvt_err err = {{0}};
	char chans[256];

	snprintf(chans, sizeof(chans), "%s", "");
	if (bw != BW_NONE) {
		char a[100], b[100];

#define CH "{\"id\": \"c%d\", \"source\": \"synthetic\", \"reads_writes_split\": %s}"
		snprintf(a, sizeof(a), CH, 0, bw == BW_SPLIT ? "true" : "false");
		snprintf(b, sizeof(b), CH, 1, bw == BW_SPLIT ? "true" : "false");
#undef CH
		snprintf(chans, sizeof(chans), "%s, %s", a, b);
	}
	snprintf(
	    text, sizeof(text),
	    "{\"tool\": \"test_energy\", \"created\": \"\", \"host\": {\"hostname\": \"h\"}, \"vm\": "
	    "{\"name\": \"t\", \"uuid\": \"\", \"pid\": 1, \"vmm\": \"\", \"accel\": \"kvm\"}, \"tracer\": "
	    "{\"version\": \"\", \"cpu\": 0, \"harvest_cpu\": -1, \"command\": []}, \"mode\": \"%s\", "
	    "\"interval_ns\": 1000000000, \"page_size\": 4096, \"written_available\": true, "
	    "\"accessed_available\": %s, \"bandwidth_available\": %s, %s\"channels\": [%s], "
	    "\"t_armed_ns\": 0}",
	    accessed ? "ad" : "dirty-log", accessed ? "true" : "false", bw ? "true" : "false",
	    bw == BW_SPLIT   ? "\"bandwidth_source\": \"pmu\", "
	    : bw == BW_TOTAL ? "\"bandwidth_source\": \"resctrl-total\", "
			     : "",
	    chans);
	o = json_tokener_parse(text);
	assert_non_null(o);
	if (hvt_trace_meta_from_json(m, o, &err))
		fail_msg("metadata: %s", err.msg);
	json_object_put(o);
}

/* Interval k's bytes on channel c: reads and writes (or their total) growing with k. */
static uint64_t rd_bytes(int k, int c)
{
	return 1000000ull * (uint64_t)(k + 1) * (uint64_t)(c + 1);
}
static uint64_t wr_bytes(int k, int c)
{
	return 300000ull * (uint64_t)(k + 1) * (uint64_t)(c + 1);
}
/* With totals: interval 3's total is smaller than its page-model writes (the cap). */
static uint64_t total_bytes(int k, int c)
{
	return k == 3 ? 1000 : 2000000ull * (uint64_t)(k + 1) + (uint64_t)c;
}

static uint64_t written_pages(const struct blocks *bl, int k)
{
	return bl->heavy + (k % 5 == 0 ? SOME : 0);
}

static void write_trace(const char *path, bool accessed, enum bw bw, const struct blocks *bl)
{
	struct hvt_trace_writer *w;
	struct hvt_trace_meta meta;
	struct hvt_layout l = {.generation = 1, .page_size = PAGE, .nslots = 1};
	struct hvt_err err = {{0}};

	make_meta(&meta, accessed, bw);
	l.slots = calloc(1, sizeof(*l.slots));
	assert_non_null(l.slots);
	l.slots[0] = (struct hvt_memslot){.slot = 0, .gpa = 0, .size = bl->npg * PAGE, .backing = "anon"};
	if (hvt_trace_create(&w, path, &meta, &err) || hvt_trace_write_layout(w, &l, &err))
		fail_msg("create: %s", err.msg);
	for (int k = 0; k < N; k++) {
		struct hvt_interval iv;
		struct hvt_channel_bytes ch[2];
		uint32_t flags = HVT_IV_WRITTEN | (accessed ? HVT_IV_ACCESSED : 0) |
				 (bw ? HVT_IV_BANDWIDTH : 0) | (bw == BW_TOTAL ? HVT_IV_BW_TOTAL : 0);

		assert_int_equal(hvt_interval_init(&iv, &l, flags), 0);
		iv.seq = (uint64_t)k + 1;
		iv.t_start_ns = 100 * SEC + (uint64_t)k * SEC;
		iv.t_end_ns = iv.t_start_ns + SEC;
		hvt_pageset_set_range(&iv.written[0], bl->heavy_first, bl->heavy);
		if (k % 5 == 0)
			hvt_pageset_set_range(&iv.written[0], bl->some_first, SOME);
		if (accessed)
			hvt_pageset_set_range(&iv.accessed[0], bl->read_first, bl->read);
		if (bw) {
			for (int c = 0; c < 2; c++)
				ch[c] = (struct hvt_channel_bytes){
				    .channel = (uint32_t)c,
				    .read_bytes = bw == BW_SPLIT ? rd_bytes(k, c) : total_bytes(k, c),
				    .write_bytes = bw == BW_SPLIT ? wr_bytes(k, c) : 0};
			iv.channels = ch;
			iv.nchannels = 2;
		}
		if (hvt_trace_write_interval(w, &iv, &err))
			fail_msg("interval %d: %s", k, err.msg);
		iv.channels = NULL;
		hvt_interval_fini(&iv);
	}
	if (hvt_trace_close(w, &err))
		fail_msg("close: %s", err.msg);
	hvt_trace_meta_fini(&meta);
	hvt_layout_fini(&l);
}

/* Loads the whole trace and computes its energy bytes with model m. */
static void energy_bytes(const char *name, bool accessed, enum bw bw, const struct blocks *bl,
			 const struct hvt_energy_model *m, struct hvt_energy_bytes *b)
{
	char path[128];
	struct hvt_trace_reader *r;
	struct hvt_analysis a;
	struct hvt_selection sel = {0};
	struct hvt_err err = {{0}};

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	write_trace(path, accessed, bw, bl);
	if (hvt_trace_open(&r, path, &err) || hvt_analysis_load(&a, r, &sel, NULL, &err))
		fail_msg("%s: %s", path, err.msg);
	if (hvt_energy_bytes(&a, r, &hvt_class_defaults, m, b, &err))
		fail_msg("energy: %s", err.msg);
	hvt_analysis_fini(&a);
	hvt_trace_reader_close(r);
}

/* Measured bytes of the blocks bl: the write-heavy share of each interval's bytes is the heavy pages' share
 * of its written (accessed) pages. */
static void measured_split(const char *name, const struct blocks *bl, struct hvt_energy_bytes *b)
{
	double rd = 0, wr = 0, hrd = 0, hwr = 0;

	energy_bytes(name, true, BW_SPLIT, bl, &hvt_energy_defaults, b);
	for (int k = 0; k < N; k++) {
		double r = (double)(rd_bytes(k, 0) + rd_bytes(k, 1)),
		       w = (double)(wr_bytes(k, 0) + wr_bytes(k, 1));

		rd += r;
		wr += w;
		hrd += r * (double)bl->heavy / (double)bl->read; /* the heavy pages among the accessed */
		hwr += written_pages(bl, k) ? w * (double)bl->heavy / (double)written_pages(bl, k) : 0;
	}
	assert_int_equal(b->source, HVT_BYTES_MEASURED);
	assert_int_equal(b->ram_pages, bl->npg);
	assert_int_equal(b->heavy_pages, bl->heavy);
	near(b->read, rd);
	near(b->write, wr);
	near(b->heavy_read, hrd);
	near(b->heavy_write, hwr);
}

static void test_measured_split(void **state)
{
	const struct hvt_energy_model *m = &hvt_energy_defaults;
	const struct hvt_tech_energy *dram = &m->tech[HVT_TECH_DRAM], *mram = &m->tech[HVT_TECH_MRAM];
	struct hvt_energy_bytes b;
	struct hvt_energy_joules j, pd, pm;
	double rd = 0, wr = 0, hrd = 0, hwr = 0, want;

	(void)state;
	energy_bytes("split.hvt", true, BW_SPLIT, &together, m, &b);
	for (int k = 0; k < N; k++) {
		double r = (double)(rd_bytes(k, 0) + rd_bytes(k, 1)),
		       w = (double)(wr_bytes(k, 0) + wr_bytes(k, 1));

		rd += r;
		wr += w;
		hrd += r * HEAVY / READ; /* the 100 heavy pages among the 300 accessed */
		hwr += w * HEAVY / (double)written_pages(&together, k);
	}
	assert_int_equal(b.source, HVT_BYTES_MEASURED);
	assert_true(b.reads_known);
	assert_int_equal(b.modelled_intervals, 0);
	assert_int_equal(b.ram_pages, NPG);
	assert_int_equal(b.heavy_pages, HEAVY);
	near(b.seconds, N);
	near(b.read, rd);
	near(b.write, wr);
	near(b.heavy_read, hrd);
	near(b.heavy_write, hwr);

	/* all DRAM: bytes x pJ/B + mW/GiB x GiB x s */
	hvt_energy_of(dram, b.read, b.write, true, NPG * PAGE, b.seconds, &j);
	want = rd * dram->read_pj_per_byte * 1e-12 + wr * dram->write_pj_per_byte * 1e-12 +
	       dram->standby_mw_per_gib * 1e-3 * (NPG * PAGE / 1073741824.0) * N;
	near(j.total, want);
	/* the placement: heavy pages' share in DRAM, the rest in MRAM */
	hvt_energy_of(dram, b.heavy_read, b.heavy_write, true, HEAVY * PAGE, b.seconds, &pd);
	hvt_energy_of(mram, b.read - b.heavy_read, b.write - b.heavy_write, true, (NPG - HEAVY) * PAGE,
		      b.seconds, &pm);
	want = (hrd * dram->read_pj_per_byte + hwr * dram->write_pj_per_byte +
		(rd - hrd) * mram->read_pj_per_byte + (wr - hwr) * mram->write_pj_per_byte) *
		   1e-12 +
	       (dram->standby_mw_per_gib * HEAVY + mram->standby_mw_per_gib * (NPG - HEAVY)) * 1e-3 * PAGE /
		   1073741824.0 * N;
	near(pd.total + pm.total, want);
}

/* The write-heavy block inside chunk 1, the accessed run from chunk 0 into chunk 3, the other written block
 * in chunk 3: runs cut at the write-heavy chunks give the same shares; without a write-heavy page, none. */
static void test_heavy_apart(void **state)
{
	struct hvt_energy_bytes b;

	(void)state;
	measured_split("apart.hvt", &apart, &b);
	assert_true(b.heavy_read > 0 && b.heavy_write > 0);
	measured_split("no-heavy.hvt", &no_heavy, &b);
	near(b.heavy_read, 0);
	near(b.heavy_write, 0);
}

static void test_page_model(void **state)
{
	struct hvt_energy_model m = hvt_energy_defaults;
	struct hvt_energy_bytes b;
	struct hvt_energy_joules j;
	double wr = 0, hwr = 0;

	(void)state;
	m.bytes_per_written_page = 1000;
	m.bytes_per_accessed_page = 3000;
	/* ad without bandwidth: writes and reads from the page counts */
	energy_bytes("pm-ad.hvt", true, BW_NONE, &together, &m, &b);
	for (int k = 0; k < N; k++) {
		wr += 1000.0 * (double)written_pages(&together, k);
		hwr += 1000.0 * HEAVY;
	}
	assert_int_equal(b.source, HVT_BYTES_PAGE_MODEL);
	assert_int_equal(b.modelled_intervals, N);
	assert_true(b.reads_known);
	near(b.write, wr);
	near(b.heavy_write, hwr);
	near(b.read, 3000.0 * READ * N);
	near(b.heavy_read, 3000.0 * HEAVY * N);

	/* dirty-log without bandwidth: no read estimate, and the totals leave reads out */
	energy_bytes("pm-dl.hvt", false, BW_NONE, &together, &m, &b);
	assert_false(b.reads_known);
	near(b.write, wr);
	near(b.read, 0);
	hvt_energy_of(&m.tech[HVT_TECH_PCM], 1e9, b.write, false, NPG * PAGE, N, &j);
	near(j.read, 0);
	near(j.total, wr * m.tech[HVT_TECH_PCM].write_pj_per_byte * 1e-12 + j.standby);
}

static void test_totals_split(void **state)
{
	const struct hvt_energy_model *m = &hvt_energy_defaults;
	struct hvt_energy_bytes b;
	double rd = 0, wr = 0;

	(void)state;
	energy_bytes("total.hvt", true, BW_TOTAL, &together, m, &b);
	for (int k = 0; k < N; k++) {
		double t = (double)(total_bytes(k, 0) + total_bytes(k, 1));
		double w = 4096.0 * (double)written_pages(&together, k);

		w = w < t ? w : t; /* interval 3: capped at its total */
		wr += w;
		rd += t - w;
	}
	assert_int_equal(b.source, HVT_BYTES_TOTAL_SPLIT);
	assert_int_equal(b.modelled_intervals, 0);
	near(b.write, wr);
	near(b.read, rd);
}

/* The defaults are the derivations docs/energy.md shows (mA x V x ns = pJ). */
static void test_defaults(void **state)
{
	const struct hvt_tech_energy *t = hvt_energy_defaults.tech;

	(void)state;
	near(t[HVT_TECH_DRAM].read_pj_per_byte, 3136.0 / 64);  /* (972 - 188) x 1.2 x 10/3 */
	near(t[HVT_TECH_DRAM].write_pj_per_byte, 2896.0 / 64); /* (912 - 188) x 1.2 x 10/3 */
	near(t[HVT_TECH_DRAM].standby_mw_per_gib, (163.2 + 932 * 1.2 * 350 / 7800) / 4);
	near(t[HVT_TECH_MRAM].read_pj_per_byte, 2448.0 / 64);  /* 4 x (180 - 95) x 1.2 x 6 */
	near(t[HVT_TECH_MRAM].write_pj_per_byte, 3888.0 / 64); /* 4 x (230 - 95) x 1.2 x 6 */
	near(t[HVT_TECH_MRAM].standby_mw_per_gib, 864);        /* 90 x 1.2 per 1/8 GiB */
	near(t[HVT_TECH_PCM].read_pj_per_byte, 19.76);
	near(t[HVT_TECH_PCM].write_pj_per_byte, 134.56);
	assert_string_equal(hvt_tech_name(HVT_TECH_MRAM), "mram");
}

static int load_model(const char *text, struct hvt_energy_model *m, struct hvt_err *err)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/model.json", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	*m = hvt_energy_defaults;
	return hvt_energy_model_load(m, path, err);
}

static void test_model_file(void **state)
{
	struct hvt_energy_model m;
	struct hvt_err err = {{0}};

	(void)state;
	if (load_model("{\"mram\": {\"write_pj_per_byte\": 7.5}, \"pcm\": {\"standby_mw_per_gib\": 12}, "
		       "\"bytes_per_written_page\": 64}",
		       &m, &err))
		fail_msg("%s", err.msg);
	near(m.tech[HVT_TECH_MRAM].write_pj_per_byte, 7.5);
	near(m.tech[HVT_TECH_PCM].standby_mw_per_gib, 12);
	near(m.bytes_per_written_page, 64);
	/* what the file leaves out keeps its default */
	near(m.tech[HVT_TECH_MRAM].read_pj_per_byte,
	     hvt_energy_defaults.tech[HVT_TECH_MRAM].read_pj_per_byte);
	near(m.bytes_per_accessed_page, 4096);
}

static void test_model_file_bad(void **state)
{
	static const struct {
		const char *text, *says;
	} cases[] = {
	    {"{\"sram\": {}}", "unknown member \"sram\" (known: dram, mram, pcm,"},
	    {"{\"dram\": {\"refresh_mw\": 1}}",
	     "dram: unknown member \"refresh_mw\" (known: read_pj_per_byte,"},
	    {"{\"dram\": {\"read_pj_per_byte\": 1, \"bogus\": 2}}", "dram: unknown member \"bogus\""},
	    {"{\"dram\": {\"read_pj_per_byte\": \"49\"}}",
	     "dram: \"read_pj_per_byte\" is not a number (got a string)"},
	    {"{\"mram\": {\"write_pj_per_byte\": -1}}",
	     "mram: \"write_pj_per_byte\" = -1 is out of range (at least 0)"},
	    {"{\"bytes_per_written_page\": null}", "\"bytes_per_written_page\" is not a number (got null)"},
	    {"{\"pcm\": 3}", "\"pcm\" is not an object (got an integer)"},
	    {"[1, 2]", "not a JSON object"},
	    {"{\"dram\": ", "not a JSON object"},
	    {"{} {}", "not a JSON object"},
	    {"", "not a JSON object"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hvt_energy_model m;
		struct hvt_err err = {{0}};

		assert_int_equal(load_model(cases[i].text, &m, &err), -EINVAL);
		if (!strstr(err.msg, cases[i].says) || !strstr(err.msg, "model.json") ||
		    strchr(err.msg, '\n'))
			fail_msg("%s: message \"%s\", want \"%s\" naming the file", cases[i].text, err.msg,
				 cases[i].says);
		/* a file with an error changes nothing, not even its good keys */
		near(m.tech[HVT_TECH_DRAM].read_pj_per_byte,
		     hvt_energy_defaults.tech[HVT_TECH_DRAM].read_pj_per_byte);
	}
	{
		struct hvt_energy_model m = hvt_energy_defaults;
		struct hvt_err err = {{0}};

		assert_int_equal(hvt_energy_model_load(&m, "/nonexistent/model.json", &err), -EINVAL);
		assert_non_null(strstr(err.msg, "/nonexistent/model.json"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_measured_split), cmocka_unit_test(test_heavy_apart),
	    cmocka_unit_test(test_page_model),     cmocka_unit_test(test_totals_split),
	    cmocka_unit_test(test_defaults),       cmocka_unit_test(test_model_file),
	    cmocka_unit_test(test_model_file_bad),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
