// SPDX-License-Identifier: MIT
/*
 * synth_arrays: writes a synthetic trace through the library's trace writer, whose pages are known by
 * construction, for the pictures' tests and benchmarks (docs/plots.md). The guest: --memory of RAM, split
 * as QEMU's pc machine does above 3 GiB (slot "pc.ram-low" below the PCI hole at 3-4 GiB, "pc.ram-high"
 * above it). The run, the seed paper's array program at scale:
 *   arrays a, b, c of --array bytes each, at 1/8, 3/8 and 5/8 of RAM (rounded down to 2 MiB);
 *   first half of the intervals (copy): c written, a read; second half (add): c written, a and b read;
 *   every interval also writes --noise-written and reads --noise-accessed random pages (seeded).
 * Mode ad: accessed = written + read pages; mode dirty-log: written only. --channels N: N memory channels
 * (devmem extents of --extent bytes, 1 GiB by default, round robin) with read bytes = 4096 × read pages
 * and write bytes = 4096 × written pages per interval (a model: each touched page moved once), channel c
 * taking c + 1 shares of them; --channel-ids names them (default s0.mc0.ch0, s0.mc0.ch1, ...) and
 * --channel-source says what counted them (a generation name such as "skx", as record writes it).
 * --owners SEQ:FILE,...: after interval SEQ (0: before the first), an OWNERS record of the snapshot in FILE
 * (hvmtrace-guest's format), received at that interval's end (the first's start for 0).
 * --stride-written N: every interval also writes every Nth page of a and every N²th page of b (densities 1/N
 * and 1/N², for the heatmap's colour scale). It prints the arrays' GFN runs and the intervals of each phase:
 *
 *     array c 0x14000 0x2000     (first GFN, pages)
 *     phase copy 1 10            (first and last seq)
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "hvmtrace/options.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/util.h"

#define GIB (1ull << 30)

static char chan_ids[16][32]; /* the channels' ids */
static const char *chan_source = "synthetic (synth_arrays)";

/* --channel-ids A,B,...: sets the ids and returns how many, or -1. */
static int parse_ids(const char *list)
{
	int n = 0;

	for (const char *p = list; *p && n < 16; n++) {
		size_t len = strcspn(p, ",");

		if (!len || len >= sizeof(chan_ids[0]))
			return -1;
		memcpy(chan_ids[n], p, len);
		chan_ids[n][len] = 0;
		p += len + (p[len] == ',');
	}
	return n;
}

static int die(const char *what, const struct hvt_err *err)
{
	fprintf(stderr, "synth_arrays: %s: %s\n", what, err->msg);
	return 1;
}

static struct json_object *layout_json(uint64_t memory, int channels, uint64_t extent)
{
	struct json_object *o = json_object_new_object(), *slots = json_object_new_array();
	uint64_t low = memory > 3 * GIB ? 3 * GIB : memory;

	json_object_object_add(o, "generation", json_object_new_int(1));
	json_object_object_add(o, "page_size", json_object_new_int(4096));
	for (int k = 0; k < (memory > low ? 2 : 1); k++) {
		struct json_object *s = json_object_new_object(), *ext = json_object_new_array();
		uint64_t gpa = k ? 4 * GIB : 0, size = k ? memory - low : low;

		json_object_object_add(s, "slot", json_object_new_int(k));
		json_object_object_add(s, "gpa", json_object_new_uint64(gpa));
		json_object_object_add(s, "size", json_object_new_uint64(size));
		json_object_object_add(s, "backing", json_object_new_string(channels ? "devmem" : "anon"));
		json_object_object_add(s, "name", json_object_new_string(k ? "pc.ram-high" : "pc.ram-low"));
		for (uint64_t off = 0; channels && off < size; off += extent) {
			struct json_object *e = json_object_new_object();
			char ch[32];

			snprintf(ch, sizeof(ch), "%s", chan_ids[((gpa + off) / extent) % channels]);
			json_object_object_add(e, "gpa", json_object_new_uint64(gpa + off));
			json_object_object_add(e, "hpa", json_object_new_uint64(64 * GIB + gpa + off));
			json_object_object_add(
			    e, "size", json_object_new_uint64(size - off < extent ? size - off : extent));
			json_object_object_add(e, "channel", json_object_new_string(ch));
			json_object_array_add(ext, e);
		}
		if (channels)
			json_object_object_add(s, "extents", ext);
		else
			json_object_put(ext);
		json_object_array_add(slots, s);
	}
	json_object_object_add(o, "slots", slots);
	return o;
}

static struct json_object *meta_json(bool ad, int channels, uint64_t interval_ns)
{
	char text[1024];
	struct json_object *o, *chs;

	snprintf(
	    text, sizeof(text),
	    "{\"tool\": \"synth_arrays\", \"created\": \"\", \"host\": {\"hostname\": \"synthetic\"}, \"vm\": "
	    "{\"name\": \"synthetic\", \"uuid\": \"\", \"pid\": 1, \"vmm\": \"synth_arrays\", \"accel\": \"kvm\"}, "
	    "\"tracer\": {\"version\": \"\", \"cpu\": 0, \"harvest_cpu\": -1, \"command\": []}, \"mode\": "
	    "\"%s\", \"interval_ns\": %" PRIu64 ", \"page_size\": 4096, \"written_available\": true, "
	    "\"accessed_available\": %s, \"bandwidth_available\": %s, \"channels\": [], \"t_armed_ns\": 0}",
	    ad ? "ad" : "dirty-log", interval_ns, ad ? "true" : "false", channels ? "true" : "false");
	o = json_tokener_parse(text);
	if (!channels)
		return o;
	json_object_object_add(o, "bandwidth_source", json_object_new_string("pmu-stand-in"));
	chs = json_object_object_get(o, "channels");
	for (int c = 0; c < channels; c++) {
		struct json_object *ch = json_object_new_object();

		json_object_object_add(ch, "id", json_object_new_string(chan_ids[c]));
		json_object_object_add(ch, "source", json_object_new_string(chan_source));
		json_object_object_add(ch, "reads_writes_split", json_object_new_boolean(1));
		json_object_array_add(chs, ch);
	}
	return o;
}

/* Sets GFNs [first, first + n) in the slot sets of l. */
static void set_gfns(struct hvt_pageset *sets, const struct hvt_layout *l, uint64_t first, uint64_t n)
{
	for (uint32_t i = 0; i < l->nslots; i++) {
		uint64_t a = hvt_memslot_first_gfn(l, &l->slots[i]),
			 b = a + hvt_memslot_npages(l, &l->slots[i]);
		uint64_t x = first > a ? first : a, y = first + n < b ? first + n : b;

		if (x < y)
			hvt_pageset_set_range(&sets[i], x - a, y - x);
	}
}

/* --owners: the OWNERS records written after interval `after` (they are written in the list's order). */
static int write_owners(struct hvt_trace_writer *w, const char *list, uint64_t after, uint64_t at_ns)
{
	char *copy = strdup(list), *save = NULL;
	int rc = 0;

	for (char *item = strtok_r(copy, ",", &save); item && !rc; item = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(item, ':'), *end;
		unsigned long long seq = strtoull(item, &end, 10);
		struct hvt_err err = {{0}};
		FILE *f;
		uint8_t buf[1 << 16];
		size_t n;

		if (!colon || end != colon) {
			fprintf(stderr, "synth_arrays: --owners %s: not SEQ:FILE\n", item);
			rc = 2;
			break;
		}
		if (seq != after)
			continue;
		f = fopen(colon + 1, "rb");
		if (!f) {
			fprintf(stderr, "synth_arrays: --owners: cannot open %s\n", colon + 1);
			rc = 2;
			break;
		}
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		if (hvt_trace_write_owners(w, at_ns, buf, n, &err))
			rc = die(colon + 1, &err);
	}
	free(copy);
	return rc;
}

/* The GFN of the k-th page of RAM (RAM laid out slot after slot). */
static uint64_t ram_gfn(const struct hvt_layout *l, uint64_t k)
{
	for (uint32_t i = 0; i < l->nslots; i++) {
		uint64_t n = hvt_memslot_npages(l, &l->slots[i]);

		if (k < n)
			return hvt_memslot_first_gfn(l, &l->slots[i]) + k;
		k -= n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t memory = GIB, extent = GIB, array = 0, interval_ns = 1000000000, noise_w = 256,
		 noise_a = 2048, seed = 1, stride = 0;
	int intervals = 60, channels = 0;
	const char *out = NULL, *mode = "ad", *vm_name = "synthetic", *ids = NULL, *owners = "";
	const struct hvt_option opts[] = {
	    HVT_OPT_PATH('o', "output", &out, "FILE", "the trace to write", .required = true),
	    HVT_OPT_SIZE(0, "memory", &memory, 64 << 20, 1ull << 42, 2 << 20, "SIZE",
			 "guest RAM (default 1G)"),
	    HVT_OPT_SIZE(0, "array", &array, 2 << 20, 1ull << 40, 2 << 20, "SIZE",
			 "bytes of each array (default RAM/16)"),
	    HVT_OPT_INT(0, "intervals", &intervals, 0, 10000000, "N", "intervals (default 60)"),
	    HVT_OPT_DURATION(0, "interval", &interval_ns, 1000000, "DUR", "interval length (default 1s)"),
	    HVT_OPT_STRING(0, "mode", &mode, "ad|dirty-log", "accessed sets too (ad, default) or not"),
	    HVT_OPT_INT(0, "channels", &channels, 0, 16, "N", "memory channels with bytes (default 0: none)"),
	    HVT_OPT_STRING(0, "channel-ids", &ids, "ID,...", "the channels' ids (sets --channels)"),
	    HVT_OPT_STRING(0, "channel-source", &chan_source, "NAME",
			   "what counted them (default synthetic)"),
	    HVT_OPT_SIZE(0, "extent", &extent, 2 << 20, 1ull << 40, 2 << 20, "SIZE",
			 "bytes per devmem extent, channels round robin (default 1G)"),
	    HVT_OPT_INT(0, "noise-written", &noise_w, 0, 1u << 30, "N", "random pages written per interval"),
	    HVT_OPT_INT(0, "noise-accessed", &noise_a, 0, 1u << 30, "N", "random pages read per interval"),
	    HVT_OPT_INT(0, "stride-written", &stride, 0, 1u << 20, "N",
			"also write every Nth page of a and every N^2th of b (default 0: none)"),
	    HVT_OPT_STRING(0, "vm-name", &vm_name, "NAME",
			   "the VM's name in the metadata (default synthetic)"),
	    HVT_OPT_STRING(0, "owners", &owners, "SEQ:FILE,...", "owners snapshots after these intervals"),
	    HVT_OPT_INT(0, "seed", &seed, 0, INT64_MAX, "N", "seed of the random pages (default 1)"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {.prog = "synth_arrays", .options = opts, .usage_status = 2};
	int rc = hvt_opts_parse(&cmd, argc, argv);
	struct hvt_err err = {{0}};
	struct hvt_trace_writer *w;
	struct hvt_trace_meta meta;
	struct hvt_layout l;
	struct json_object *o;
	uint64_t arr_gfn[3], arr_pages, ram;
	bool ad;

	if (rc != HVT_OPTS_RUN)
		return rc;
	for (int c = 0; c < 16; c++)
		snprintf(chan_ids[c], sizeof(chan_ids[c]), "s0.mc0.ch%d", c);
	if (ids && (channels = parse_ids(ids)) < 1) {
		fprintf(stderr, "synth_arrays: --channel-ids %s: not a list of up to 16 ids\n", ids);
		return 2;
	}
	ad = !strcmp(mode, "ad");
	if (!ad && strcmp(mode, "dirty-log")) {
		fprintf(stderr, "synth_arrays: --mode %s: not ad or dirty-log\n", mode);
		return 2;
	}
	o = layout_json(memory, channels, extent);
	if (hvt_layout_from_json(&l, o, &err))
		return die("layout", &err);
	json_object_put(o);
	o = meta_json(ad, channels, interval_ns);
	json_object_object_add(json_object_object_get(o, "vm"), "name", json_object_new_string(vm_name));
	if (hvt_trace_meta_from_json(&meta, o, &err))
		return die("metadata", &err);
	json_object_put(o);
	ram = hvt_layout_total_pages(&l);
	arr_pages = (array ? array : memory / 16) / 4096;
	for (int k = 0; k < 3; k++) {
		arr_gfn[k] = ram_gfn(&l, (ram * (2 * k + 1) / 8) & ~511ull);
		printf("array %c 0x%" PRIx64 " 0x%" PRIx64 "\n", "abc"[k], arr_gfn[k], arr_pages);
	}
	printf("phase copy 1 %d\nphase add %d %d\n", intervals / 2, intervals / 2 + 1, intervals);
	if (hvt_trace_create(&w, out, &meta, &err) || hvt_trace_write_layout(w, &l, &err))
		return die(out, &err);
	if ((rc = write_owners(w, owners, 0, 1000000000ull)))
		return rc;
	for (int i = 0; i < intervals; i++) {
		uint32_t flags = HVT_IV_WRITTEN | (ad ? HVT_IV_ACCESSED | HVT_IV_WNA_COUNTED : 0) |
				 (channels ? HVT_IV_BANDWIDTH : 0);
		struct hvt_interval iv;
		uint64_t state = seed * 1000003 + i, read_pages = 0, written;
		bool add = i >= intervals / 2;

		if (hvt_interval_init(&iv, &l, flags)) {
			fprintf(stderr, "synth_arrays: out of memory\n");
			return 1;
		}
		iv.seq = i + 1;
		iv.t_start_ns = 1000000000ull + i * interval_ns;
		iv.t_end_ns = iv.t_start_ns + interval_ns;
		iv.wall_start_ns = 1795000000000000000ll + (int64_t)(i * interval_ns);
		iv.generation = 1;
		set_gfns(iv.written, &l, arr_gfn[2], arr_pages);
		for (uint64_t k = 0; k < noise_w; k++)
			set_gfns(iv.written, &l, ram_gfn(&l, hvt_splitmix64(&state) % ram), 1);
		for (uint64_t k = 0; stride && k < arr_pages; k += stride)
			set_gfns(iv.written, &l, arr_gfn[0] + k, 1);
		for (uint64_t k = 0; stride && k < arr_pages; k += stride * stride)
			set_gfns(iv.written, &l, arr_gfn[1] + k, 1);
		if (ad) {
			set_gfns(iv.accessed, &l, arr_gfn[0], arr_pages);
			if (add)
				set_gfns(iv.accessed, &l, arr_gfn[1], arr_pages);
			for (uint64_t k = 0; k < noise_a; k++)
				set_gfns(iv.accessed, &l, ram_gfn(&l, hvt_splitmix64(&state) % ram), 1);
			for (uint32_t s = 0; s < l.nslots; s++)
				hvt_pageset_union(&iv.accessed[s], &iv.written[s]);
		}
		read_pages = (add ? 2 : 1) * arr_pages + noise_a;
		written = hvt_interval_count_pages(iv.written, iv.nslots);
		if (channels) {
			iv.nchannels = channels;
			iv.channels = calloc(channels, sizeof(*iv.channels));
			for (int c = 0; c < channels; c++) {
				iv.channels[c].channel = c;
				/* channel c takes (c + 1) shares, so that the channels' lines differ */
				uint64_t shares = (uint64_t)channels * (channels + 1) / 2;

				iv.channels[c].read_bytes = 4096 * read_pages * (c + 1) / shares;
				iv.channels[c].write_bytes = 4096 * written * (c + 1) / shares;
			}
		}
		if (hvt_trace_write_interval(w, &iv, &err))
			return die(out, &err);
		if ((rc = write_owners(w, owners, i + 1, iv.t_end_ns)))
			return rc;
		hvt_interval_fini(&iv);
	}
	if (hvt_trace_close(w, &err))
		return die(out, &err);
	hvt_trace_meta_fini(&meta);
	hvt_layout_fini(&l);
	return 0;
}
