// SPDX-License-Identifier: MIT
/*
 * synth_trace: writes a synthetic trace through the trace writer, for benchmarks and command-line tests of
 * the reading commands. Guest RAM is laid out like QEMU's around the PCI hole (below 3 GiB, then from
 * 4 GiB on). Each phase of --phase intervals has a working set: --runs runs of pages (lengths geometric,
 * mean 16) scattered over a 4 GiB region that moves from phase to phase. Each interval touches a random 80 %
 * of the phase's runs plus 10 % fresh random runs (--no-locality: all fresh, every interval), writes part
 * of what it touches (a third of the phase's runs are the written ones), and writes a fixed hot block of
 * 8 MiB. With --bandwidth, two channels carry read and write bytes derived from the page counts.
 *
 * --shape kbuild is what a kernel build looks like (issue 25): in the high slot a 1 GiB hot window that
 * drifts from the slot's start to its end over the trace, each interval accessing about 2,000 runs of 1-96
 * pages inside it (a quarter of them half written), and 20,000 single pages scattered over the low slot (a
 * third of them written); with --bandwidth, eight channels. --runs, --phase and --no-locality do not apply.
 * Deterministic for a given --seed.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hvmtrace/error.h"
#include "hvmtrace/options.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/util.h"

#define PAGE   4096ull
#define GIB    (1ull << 30)
#define T0     1000000000000ull
#define SEC    1000000000ull
#define HOT_PG 2048ull /* pages of the hot block, written in every interval */

/* --shape kbuild */
#define KB_WINDOW_PG (GIB / PAGE) /* the hot window in the high slot */
#define KB_RUNS      2000         /* runs accessed in the window per interval */
#define KB_RUN_MAX   96           /* pages of the longest run */
#define KB_SCATTERED 20000        /* single pages accessed in the low slot per interval */
#define KB_CHANNELS  8
#define MAX_CHANNELS KB_CHANNELS

static uint64_t rng;

static double unit(void)
{
	return (double)(hvt_splitmix64(&rng) >> 11) * 0x1p-53;
}

static uint64_t geometric(double mean)
{
	return 1 + (uint64_t)floor(log(1.0 - unit()) / log(1.0 - 1.0 / mean));
}

static void make_layout(struct hvt_layout *l, uint64_t guest)
{
	uint64_t low = guest > 3 * GIB ? 3 * GIB : guest;

	l->generation = 1;
	l->page_size = PAGE;
	l->nslots = guest > low ? 2 : 1;
	l->slots = calloc(l->nslots, sizeof(*l->slots));
	if (!l->slots)
		exit(2);
	l->slots[0] =
	    (struct hvt_memslot){.slot = 0, .gpa = 0, .size = low, .backing = "anon", .name = "pc.ram"};
	if (l->nslots == 2)
		l->slots[1] = (struct hvt_memslot){
		    .slot = 1, .gpa = 4 * GIB, .size = guest - low, .backing = "anon", .name = "pc.ram.high"};
}

/* RAM page index i (0 .. guest pages) as a slot and a page inside it. */
static void set_pages(struct hvt_pageset *sets, const struct hvt_layout *l, uint64_t i, uint64_t count)
{
	uint64_t low = hvt_memslot_npages(l, &l->slots[0]);

	while (count) {
		uint32_t s = i < low ? 0 : 1;
		uint64_t at = s ? i - low : i;
		uint64_t room = hvt_memslot_npages(l, &l->slots[s]) - at;
		uint64_t n = count < room ? count : room;

		hvt_pageset_set_range(&sets[s], at, n);
		i += n;
		count -= n;
		if (s == 1 || l->nslots == 1)
			break;
	}
}

static struct hvt_trace_meta *make_meta(bool ad, bool bw, int nchannels)
{
	static struct hvt_trace_meta m;
	char text[2048], channels[1024] = "";
	size_t used = 0;
	struct hvt_err err = {{0}};
	struct json_object *o;

	for (int c = 0; bw && c < nchannels; c++) /* s0.mc0.ch0, s0.mc0.ch1, s0.mc1.ch0, ... */
		used += (size_t)snprintf(channels + used, sizeof(channels) - used,
					 "%s{\"id\": \"s0.mc%d.ch%d\", \"source\": \"synthetic\", "
					 "\"reads_writes_split\": true}",
					 c ? ", " : "", c / 2, c % 2);
	snprintf(text, sizeof(text),
		 "{\"tool\": \"synth_trace\", \"created\": \"\", \"host\": {\"hostname\": \"synthetic\"}, "
		 "\"vm\": {\"name\": \"synthetic\", \"uuid\": \"\", \"pid\": 1, \"vmm\": \"synth_trace\", "
		 "\"accel\": \"kvm\"}, \"tracer\": {\"version\": \"\", \"cpu\": 0, \"harvest_cpu\": -1, "
		 "\"command\": []}, \"mode\": \"%s\", \"interval_ns\": 1000000000, \"page_size\": 4096, "
		 "\"written_available\": true, \"accessed_available\": %s, \"bandwidth_available\": %s, %s"
		 "\"channels\": [%s], \"t_armed_ns\": 0}",
		 ad ? "ad" : "dirty-log", ad ? "true" : "false", bw ? "true" : "false",
		 bw ? "\"bandwidth_source\": \"pmu\", " : "", channels);
	o = json_tokener_parse(text);
	if (!o || hvt_trace_meta_from_json(&m, o, &err)) {
		fprintf(stderr, "synth_trace: metadata: %s\n", err.msg);
		exit(2);
	}
	json_object_put(o);
	return &m;
}

/* What a shape needs from one interval to the next. */
struct gen {
	const struct hvt_layout *l;
	bool ad, no_locality;
	int intervals, runs, phase;
	uint64_t total, region;
	struct hvt_run *pool; /* the phase's working set */
};

/* The default shape: phases of working sets with locality, and a hot block. 0, or 2 (out of memory). */
static int phases_interval(struct gen *g, struct hvt_interval *iv, int k)
{
	const struct hvt_layout *l = g->l;
	uint64_t base = (uint64_t)(k / g->phase) * (g->region / 3) % (g->total - g->region);

	set_pages(iv->written, l, g->total / 2, HOT_PG);
	if (g->ad)
		set_pages(iv->accessed, l, g->total / 2, HOT_PG);
	if (k % g->phase == 0 || !g->pool) { /* a new phase: its working set */
		free(g->pool);
		g->pool = calloc(g->runs ? (size_t)g->runs : 1, sizeof(*g->pool));
		if (!g->pool)
			return 2;
		for (int i = 0; i < g->runs; i++)
			g->pool[i] = (struct hvt_run){base + hvt_splitmix64(&rng) % g->region, geometric(16)};
	}
	for (int i = 0; i < g->runs + g->runs / 10; i++) {
		bool fresh = g->no_locality || i >= g->runs;
		struct hvt_run r =
		    fresh ? (struct hvt_run){base + hvt_splitmix64(&rng) % g->region, geometric(16)}
			  : g->pool[i];
		bool write = fresh ? hvt_splitmix64(&rng) % 3 == 0 : i % 3 == 0;

		if (!fresh && hvt_splitmix64(&rng) % 10 >= 8)
			continue;
		if (g->ad)
			set_pages(iv->accessed, l, r.first, r.count);
		if (write)
			set_pages(iv->written, l, r.first,
				  fresh ? 1 + hvt_splitmix64(&rng) % r.count : r.count);
	}
	return 0;
}

/* --shape kbuild: the hot window drifting over the high slot, single pages scattered over the low one. */
static void kbuild_interval(struct gen *g, struct hvt_interval *iv, int k)
{
	const struct hvt_layout *l = g->l;
	uint64_t low = hvt_memslot_npages(l, &l->slots[0]);
	uint64_t travel = g->total - low - KB_WINDOW_PG;
	uint64_t window = low + travel * (uint64_t)k / (uint64_t)(g->intervals > 1 ? g->intervals - 1 : 1);

	for (int i = 0; i < KB_RUNS; i++) {
		uint64_t count = 1 + hvt_splitmix64(&rng) % KB_RUN_MAX;
		uint64_t first = window + hvt_splitmix64(&rng) % (KB_WINDOW_PG - count + 1);

		if (g->ad)
			set_pages(iv->accessed, l, first, count);
		if (hvt_splitmix64(&rng) % 4 == 0)
			set_pages(iv->written, l, first, (count + 1) / 2);
	}
	for (int i = 0; i < KB_SCATTERED; i++) {
		uint64_t page = hvt_splitmix64(&rng) % low;

		if (g->ad)
			set_pages(iv->accessed, l, page, 1);
		if (hvt_splitmix64(&rng) % 3 == 0)
			set_pages(iv->written, l, page, 1);
	}
}

/* Read and write bytes on each channel, from the interval's page counts. */
static void add_bandwidth(struct hvt_interval *iv, bool ad, int nchannels, struct hvt_channel_bytes *ch)
{
	uint64_t wp = hvt_interval_count_pages(iv->written, iv->nslots);
	uint64_t ap = ad ? hvt_interval_count_pages(iv->accessed, iv->nslots) : wp;

	for (int c = 0; c < nchannels; c++)
		ch[c] = (struct hvt_channel_bytes){.channel = (uint32_t)c,
						   .read_bytes = ap * PAGE * (2 + c % 2),
						   .write_bytes = wp * PAGE * (1 + c % 2)};
	iv->channels = ch;
	iv->nchannels = (uint32_t)nchannels;
}

int main(int argc, char **argv)
{
	const char *out = NULL, *mode = "ad", *shape = "phases";
	uint64_t guest = 16 * GIB;
	int intervals = 3600, runs = 17000, phase = 600, seed = 1;
	bool bw = false, torn = false, no_locality = false;
	const struct hvt_option opts[] = {
	    HVT_OPT_PATH('o', "output", &out, "FILE", "the trace to write", .required = true),
	    HVT_OPT_SIZE(0, "guest", &guest, 64ull << 20, 1ull << 42, 64ull << 20, "SIZE", "guest RAM (16G)"),
	    HVT_OPT_INT(0, "intervals", &intervals, 0, 1000000, "N", "intervals (3600)"),
	    HVT_OPT_STRING(0, "shape", &shape, "phases|kbuild",
			   "phases: working sets that move (default); kbuild: a kernel build's sets"),
	    HVT_OPT_INT(0, "runs", &runs, 0, 10000000, "N",
			"accessed runs per interval (17000; phases only)"),
	    HVT_OPT_INT(0, "phase", &phase, 1, 1000000, "N",
			"intervals per working region (600; phases only)"),
	    HVT_OPT_INT(0, "seed", &seed, 0, 1000000, "N", "random seed (1)"),
	    HVT_OPT_STRING(0, "mode", &mode, "ad|dirty-log", "ad: accessed and written sets (default)"),
	    HVT_OPT_FLAG(0, "bandwidth", &bw, "read and write bytes on two channels (kbuild: eight)"),
	    HVT_OPT_FLAG(0, "no-locality", &no_locality,
			 "fresh random runs in every interval (a stress case; phases only)"),
	    HVT_OPT_FLAG(0, "torn", &torn, "leave the trace as a killed writer would, its last record cut"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "synth_trace", .synopsis = "-o FILE [options]", .options = opts, .usage_status = 2};
	int st = hvt_opts_parse(&cmd, argc, argv);
	bool ad = !strcmp(mode, "ad"), kbuild = !strcmp(shape, "kbuild");
	struct hvt_trace_writer *w;
	struct hvt_trace_meta *meta;
	struct hvt_layout l = {0};
	struct hvt_err err = {{0}};
	struct hvt_channel_bytes ch[MAX_CHANNELS];
	struct gen g;

	if (st != HVT_OPTS_RUN)
		return st;
	if (!kbuild && strcmp(shape, "phases")) {
		fprintf(stderr, "synth_trace: --shape %s: not phases or kbuild\n", shape);
		return 2;
	}
	if (kbuild && guest < 4 * GIB + KB_WINDOW_PG * PAGE) {
		fprintf(stderr,
			"synth_trace: --shape kbuild needs a --guest of at least 5G (its window is 1 GiB "
			"above the 3 GiB low slot)\n");
		return 2;
	}
	rng = (uint64_t)seed;
	make_layout(&l, guest);
	g = (struct gen){.l = &l,
			 .ad = ad,
			 .no_locality = no_locality,
			 .intervals = intervals,
			 .runs = runs,
			 .phase = phase,
			 .total = hvt_layout_total_pages(&l)};
	g.region = g.total < (4 * GIB / PAGE) * 2 ? g.total / 2 : 4 * GIB / PAGE;
	meta = make_meta(ad, bw, kbuild ? KB_CHANNELS : 2);
	if (hvt_trace_create(&w, out, meta, &err) || hvt_trace_write_layout(w, &l, &err)) {
		fprintf(stderr, "synth_trace: %s\n", err.msg);
		return 2;
	}
	for (int k = 0; k < intervals; k++) {
		struct hvt_interval iv;

		if (hvt_interval_init(
			&iv, &l, HVT_IV_WRITTEN | (ad ? HVT_IV_ACCESSED : 0) | (bw ? HVT_IV_BANDWIDTH : 0))) {
			fprintf(stderr, "synth_trace: out of memory\n");
			return 2;
		}
		iv.seq = (uint64_t)k + 1;
		iv.t_start_ns = T0 + (uint64_t)k * SEC;
		iv.t_end_ns = iv.t_start_ns + SEC;
		iv.wall_start_ns = 1700000000ll * 1000000000ll + (int64_t)k * (int64_t)SEC;
		if (kbuild)
			kbuild_interval(&g, &iv, k);
		else if (phases_interval(&g, &iv, k))
			return 2;
		if (bw)
			add_bandwidth(&iv, ad, kbuild ? KB_CHANNELS : 2, ch);
		if (hvt_trace_write_interval(w, &iv, &err)) {
			fprintf(stderr, "synth_trace: interval %d: %s\n", k, err.msg);
			return 2;
		}
		iv.channels = NULL;
		hvt_interval_fini(&iv);
	}
	if (torn) {
		hvt_trace_abandon(w);
		FILE *f = fopen(out, "r+");
		if (!f || fseek(f, 0, SEEK_END) || ftruncate(fileno(f), ftell(f) - 20)) {
			perror(out);
			return 2;
		}
		fclose(f);
	} else if (hvt_trace_close(w, &err)) {
		fprintf(stderr, "synth_trace: %s\n", err.msg);
		return 2;
	}
	free(g.pool);
	hvt_layout_fini(&l);
	hvt_trace_meta_fini(meta);
	return 0;
}
