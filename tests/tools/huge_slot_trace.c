// SPDX-License-Identifier: MIT
/*
 * huge_slot_trace -o FILE [--slot SIZE] [--intervals N]: a small trace whose layout declares a huge slot,
 * for testing that a reader's cost follows the file, not the RAM it declares (docs/reliability.md,
 * "Limits"). Two slots, listed out of guest-physical order: "big" (SIZE, default 32 TiB, at 4 GiB) first,
 * then "low" (64 MiB at 0). Mode ad with two bandwidth channels; each interval writes and accesses a few
 * runs at the start, the middle and the end of each slot, and one long run of 2^20 pages. The sets are
 * bitmaps of the slot here (the writer takes nothing else), allocated but never touched where clear, so
 * writing costs time, not resident memory. Exit 0 written, 2 usage or error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "hvmtrace/error.h"
#include "hvmtrace/options.h"
#include "hvmtrace/trace.h"

#define PAGE 4096ull
#define GIB  (1ull << 30)
#define SEC  1000000000ull

static const char meta_json[] =
    "{\"tool\": \"huge_slot_trace\", \"created\": \"\", \"host\": {\"hostname\": \"synthetic\"}, "
    "\"vm\": {\"name\": \"huge\", \"uuid\": \"\", \"pid\": 1, \"vmm\": \"huge_slot_trace\", \"accel\": \"kvm\"}, "
    "\"tracer\": {\"version\": \"\", \"cpu\": 0, \"harvest_cpu\": -1, \"command\": []}, \"mode\": \"ad\", "
    "\"interval_ns\": 1000000000, \"page_size\": 4096, \"written_available\": true, "
    "\"accessed_available\": true, \"bandwidth_available\": true, \"bandwidth_source\": \"pmu\", "
    "\"channels\": [{\"id\": \"s0.mc0.ch0\", \"source\": \"synthetic\", \"reads_writes_split\": true}, "
    "{\"id\": \"s0.mc0.ch1\", \"source\": \"synthetic\", \"reads_writes_split\": true}], \"t_armed_ns\": 0}";

/* A few runs at the start, middle and end of a slot's set, and (when it fits) one of 2^20 pages. */
static void mark(struct hvt_pageset *s, uint64_t k)
{
	uint64_t n = s->npages, mid = n / 2 + 4096 * k;

	hvt_pageset_set_range(s, k, 3);
	hvt_pageset_set_range(s, mid, 17);
	hvt_pageset_set(s, n - 1 - k);
	if (n > (4ull << 20))
		hvt_pageset_set_range(s, n / 4, 1ull << 20);
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	uint64_t slot = 32ull << 40;
	int intervals = 4;
	const struct hvt_option opts[] = {
	    HVT_OPT_PATH('o', "output", &out, "FILE", "the trace to write", .required = true),
	    HVT_OPT_SIZE(0, "slot", &slot, 64ull << 20, 1ull << 46, 64ull << 20, "SIZE",
			 "the big slot's size (32T)"),
	    HVT_OPT_INT(0, "intervals", &intervals, 1, 1000, "N", "intervals (4)"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "huge_slot_trace", .synopsis = "-o FILE [options]", .options = opts, .usage_status = 2};
	int st = hvt_opts_parse(&cmd, argc, argv);
	struct hvt_memslot slots[2] = {
	    {.slot = 0, .gpa = 4 * GIB, .size = slot, .backing = "anon", .name = "big"},
	    {.slot = 1, .gpa = 0, .size = 64ull << 20, .backing = "anon", .name = "low"},
	};
	struct hvt_layout l = {.generation = 1, .page_size = PAGE, .nslots = 2, .slots = slots};
	struct hvt_trace_meta meta;
	struct hvt_trace_writer *w;
	struct hvt_err err = {{0}};
	struct json_object *o;

	if (st != HVT_OPTS_RUN)
		return st;
	o = json_tokener_parse(meta_json);
	if (!o || hvt_trace_meta_from_json(&meta, o, &err)) {
		fprintf(stderr, "huge_slot_trace: metadata: %s\n", err.msg);
		return 2;
	}
	json_object_put(o);
	if (hvt_trace_create(&w, out, &meta, &err) || hvt_trace_write_layout(w, &l, &err)) {
		fprintf(stderr, "huge_slot_trace: %s\n", err.msg);
		return 2;
	}
	for (int k = 0; k < intervals; k++) {
		struct hvt_channel_bytes ch[2] = {{0, 1000000ull * (k + 1), 500000ull * (k + 1)},
						  {1, 2000000ull * (k + 1), 700000ull * (k + 1)}};
		struct hvt_interval iv;

		if (hvt_interval_init(&iv, &l, HVT_IV_WRITTEN | HVT_IV_ACCESSED | HVT_IV_BANDWIDTH)) {
			fprintf(stderr, "huge_slot_trace: out of memory\n");
			return 2;
		}
		iv.seq = (uint64_t)k + 1;
		iv.t_start_ns = 1000 * SEC + (uint64_t)k * SEC;
		iv.t_end_ns = iv.t_start_ns + SEC;
		iv.wall_start_ns = 1700000000ll * 1000000000ll + (int64_t)k * (int64_t)SEC;
		iv.channels = ch;
		iv.nchannels = 2;
		for (uint32_t s = 0; s < 2; s++) {
			mark(&iv.written[s], (uint64_t)k);
			mark(&iv.accessed[s], (uint64_t)k);
			hvt_pageset_set_range(&iv.accessed[s], 100, 5); /* accessed, not written */
		}
		if (hvt_trace_write_interval(w, &iv, &err)) {
			fprintf(stderr, "huge_slot_trace: %s\n", err.msg);
			return 2;
		}
		iv.channels = NULL;
		iv.nchannels = 0;
		hvt_interval_fini(&iv);
	}
	if (hvt_trace_close(w, &err)) {
		fprintf(stderr, "huge_slot_trace: %s\n", err.msg);
		return 2;
	}
	hvt_trace_meta_fini(&meta);
	return 0;
}
