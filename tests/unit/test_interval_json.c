// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/format/trace_format.h"
#include "../../lib/format/trace_decode.h"
#include "hvmtrace/error.h"
#include "hvmtrace/interval_json.h"
#include "hvmtrace/util.h"

/* Two slots listed high-first, as a VMM may: the ranges must still come out in GFN order. */
static struct hvt_memslot slots[] = {
    {.slot = 1, .gpa = 4ull << 30, .size = 1ull << 20, .backing = "anon"},
    {.slot = 0, .gpa = 0, .size = 2ull << 20, .backing = "anon"},
};
static const struct hvt_layout layout = {.generation = 7, .page_size = 4096, .nslots = 2, .slots = slots};

static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	assert_true(json_object_object_get_ex(o, key, &v)); /* present, even when null */
	return v;
}

static void test_written_only(void **state)
{
	struct hvt_interval iv = {0};
	struct hvt_json_opts opts = {.page_ranges = true};
	struct json_object *o, *w;

	(void)state;
	assert_int_equal(hvt_interval_init(&iv, &layout, HVT_IV_WRITTEN), 0);
	iv.seq = 3;
	iv.t_start_ns = 1000000000;
	iv.t_end_ns = 2500000000;
	iv.wall_start_ns = 1700000000123456789ll;
	iv.generation = 7;
	iv.missed_deadlines = 2;
	hvt_pageset_set_range(&iv.written[0], 0, 3);  /* GFN 0x100000.. */
	hvt_pageset_set(&iv.written[1], 5);           /* GFN 5 */
	hvt_pageset_set_range(&iv.written[1], 10, 2); /* GFN 10, 11 */

	o = hvt_interval_to_json(&iv, &layout, &opts);
	assert_int_equal(json_object_get_int64(member(o, "seq")), 3);
	assert_int_equal(json_object_get_int64(member(o, "written_pages")), 6);
	assert_int_equal(json_object_get_int64(member(o, "written_bytes")), 6 * 4096);
	assert_int_equal(json_object_get_int64(member(o, "missed_deadlines")), 2);
	assert_int_equal(json_object_get_int64(member(o, "generation")), 7);
	assert_true(json_object_get_double(member(o, "duration_s")) == 1.5);
	assert_false(json_object_get_boolean(member(o, "final")));
	assert_null(member(o, "accessed_pages"));
	assert_null(member(o, "accessed"));
	assert_null(member(o, "written_not_accessed")); /* no accessed sets: not applicable */
	assert_null(member(o, "read_bytes"));
	assert_string_equal(json_object_get_string(member(o, "wall_start")), "2023-11-14T22:13:20.123456Z");
	w = member(o, "written");
	assert_string_equal(json_object_to_json_string_ext(w, JSON_C_TO_STRING_PLAIN),
			    "[[5,1],[10,2],[1048576,3]]");
	json_object_put(o);

	/* Without ranges, counts only. */
	opts.page_ranges = false;
	o = hvt_interval_to_json(&iv, &layout, &opts);
	assert_false(json_object_object_get_ex(o, "written", NULL));
	assert_int_equal(json_object_get_int64(member(o, "written_pages")), 6);
	json_object_put(o);
	hvt_interval_fini(&iv);
}

static void test_empty_set_is_not_null(void **state)
{
	struct hvt_interval iv = {0};
	struct hvt_json_opts opts = {.page_ranges = true};
	struct json_object *o;

	(void)state;
	assert_int_equal(hvt_interval_init(&iv, &layout, HVT_IV_WRITTEN | HVT_IV_ACCESSED), 0);
	iv.flags |= HVT_IV_FINAL;
	o = hvt_interval_to_json(&iv, &layout, &opts);
	assert_string_equal(json_object_to_json_string_ext(member(o, "written"), JSON_C_TO_STRING_PLAIN),
			    "[]");
	assert_string_equal(json_object_to_json_string_ext(member(o, "accessed"), JSON_C_TO_STRING_PLAIN),
			    "[]");
	assert_int_equal(json_object_get_int64(member(o, "accessed_pages")), 0);
	assert_non_null(member(o, "accessed_pages"));
	assert_true(json_object_get_boolean(member(o, "final")));
	assert_null(member(o, "written_not_accessed")); /* both sets, but not checked (an older trace) */
	json_object_put(o);

	/* checked, and nothing to add: 0, not null */
	assert_int_equal(hvt_interval_close_written_in_accessed(&iv), 0);
	o = hvt_interval_to_json(&iv, &layout, &opts);
	assert_non_null(member(o, "written_not_accessed"));
	assert_int_equal(json_object_get_int64(member(o, "written_not_accessed")), 0);
	json_object_put(o);
	hvt_interval_fini(&iv);
}

static void test_bandwidth(void **state)
{
	struct hvt_channel_bytes ch[2] = {{.channel = 0, .read_bytes = 640, .write_bytes = 64},
					  {.channel = 1, .read_bytes = 128, .write_bytes = 0}};
	struct hvt_interval iv = {.flags = HVT_IV_BANDWIDTH, .nchannels = 2, .channels = ch};
	struct hvt_json_opts opts = {.page_ranges = true};
	struct json_object *o = hvt_interval_to_json(&iv, &layout, &opts);

	(void)state;
	assert_int_equal(json_object_get_int64(member(o, "read_bytes")), 768);
	assert_int_equal(json_object_get_int64(member(o, "write_bytes")), 64);
	assert_int_equal(json_object_get_int64(member(o, "total_bytes")), 832);
	assert_int_equal(json_object_array_length(member(o, "channels")), 2);
	struct json_object *c0 = json_object_array_get_idx(member(o, "channels"), 0);
	assert_int_equal(json_object_get_int64(member(c0, "read_bytes")), 640);
	assert_int_equal(json_object_get_int64(member(c0, "total_bytes")), 704);
	assert_null(member(o, "written_pages"));
	json_object_put(o);
}

/* Totals that were never split (resctrl): reads and writes are null, not the total and 0. */
static void test_bandwidth_total_only(void **state)
{
	struct hvt_channel_bytes ch[2] = {{.channel = 0, .read_bytes = 4096},
					  {.channel = 1, .read_bytes = 100}};
	struct hvt_interval iv = {
	    .flags = HVT_IV_BANDWIDTH | HVT_IV_BW_TOTAL, .nchannels = 2, .channels = ch};
	struct hvt_json_opts opts = {.page_ranges = true};
	struct json_object *o = hvt_interval_to_json(&iv, &layout, &opts), *c1;

	(void)state;
	assert_null(member(o, "read_bytes"));
	assert_null(member(o, "write_bytes"));
	assert_int_equal(json_object_get_int64(member(o, "total_bytes")), 4196);
	c1 = json_object_array_get_idx(member(o, "channels"), 1);
	assert_null(member(c1, "read_bytes"));
	assert_null(member(c1, "write_bytes"));
	assert_int_equal(json_object_get_int64(member(c1, "total_bytes")), 100);
	assert_int_equal(json_object_get_int64(member(c1, "channel")), 1);
	json_object_put(o);
}

/* No bandwidth at all: every byte field and the channel list are null. */
static void test_bandwidth_absent(void **state)
{
	struct hvt_interval iv = {.flags = HVT_IV_WRITTEN};
	struct hvt_json_opts opts = {.page_ranges = false};
	struct json_object *o;

	(void)state;
	assert_int_equal(hvt_interval_init(&iv, &layout, HVT_IV_WRITTEN), 0);
	o = hvt_interval_to_json(&iv, &layout, &opts);
	assert_null(member(o, "read_bytes"));
	assert_null(member(o, "write_bytes"));
	assert_null(member(o, "total_bytes"));
	assert_null(member(o, "channels"));
	json_object_put(o);
	hvt_interval_fini(&iv);
}

static void test_jsonl_line(void **state)
{
	struct hvt_interval iv = {0};
	struct hvt_json_opts opts = {.page_ranges = true};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_int_equal(hvt_interval_init(&iv, &layout, HVT_IV_WRITTEN), 0);
	hvt_pageset_set(&iv.written[1], 1);
	assert_int_equal(hvt_jsonl_write(f, &iv, &layout, &opts), 0);
	assert_int_equal(hvt_jsonl_write(f, &iv, &layout, &opts), 0);
	fclose(f);
	/* Two lines, each one complete JSON object, no newline inside. */
	char *nl = strchr(buf, '\n');
	assert_non_null(nl);
	assert_ptr_equal(strchr(nl + 1, '\n'), buf + len - 1);
	*nl = 0;
	struct json_object *o = json_tokener_parse(buf);
	assert_non_null(o);
	json_object_put(o);
	free(buf);
	hvt_interval_fini(&iv);
}

/* The streamed line is byte for byte what json-c prints of hvt_interval_to_json: random intervals of every
 * kind (sets or not, bandwidth split, total or absent, the count of written ⊆ accessed), seeds 1-200. */
/* The line of an interval read back as runs (what export writes) is the line of its bitmaps. */
static void check_runs_line(const struct hvt_interval *iv, const struct hvt_json_opts *opts, const char *want)
{
	struct hvt_buf b = {0};
	struct hvt_iv_runs ir = {0};
	struct hvt_err err = {{0}};
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (hvt_interval_encode(iv, &layout, &b, &err) || hvt_iv_runs_decode(&ir, &layout, b.p, b.len, &err))
		fail_msg("seq %llu: %s", (unsigned long long)iv->seq, err.msg);
	f = open_memstream(&buf, &len);
	assert_int_equal(hvt_jsonl_write_runs(f, &ir, &layout, opts), 0);
	fclose(f);
	if (strcmp(buf, want))
		fail_msg("seq %llu:\n runs %s bitmaps %s", (unsigned long long)iv->seq, buf, want);
	free(buf);
	free(b.p);
	hvt_iv_runs_fini(&ir);
}

static void test_stream_equals_json_c(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 200; seed++) {
		uint64_t x = seed;
		uint32_t flags =
		    (uint32_t)(hvt_splitmix64(&x) & (HVT_IV_WRITTEN | HVT_IV_ACCESSED | HVT_IV_FINAL));
		struct hvt_json_opts opts = {.page_ranges = hvt_splitmix64(&x) & 1};
		struct hvt_interval iv;
		struct json_object *o;
		char *buf = NULL, *want;
		size_t len = 0;
		FILE *f;

		if (hvt_splitmix64(&x) & 1)
			flags |= HVT_IV_BANDWIDTH | ((hvt_splitmix64(&x) & 1) ? HVT_IV_BW_TOTAL : 0);
		if ((flags & 3) == 3 && (hvt_splitmix64(&x) & 1))
			flags |= HVT_IV_WNA_COUNTED;
		assert_int_equal(hvt_interval_init(&iv, &layout, flags), 0);
		iv.seq = hvt_splitmix64(&x) >> (hvt_splitmix64(&x) & 63);
		iv.t_start_ns = hvt_splitmix64(&x) >> 2;
		iv.t_end_ns =
		    iv.t_start_ns + ((hvt_splitmix64(&x) >> 2) >> (hvt_splitmix64(&x) & 63)); /* no wrap */
		iv.wall_start_ns = (int64_t)(hvt_splitmix64(&x) >> 8);
		iv.harvest_ns = (seed % 3) ? hvt_splitmix64(&x) % 100000000 : (seed % 2) * 1000;
		iv.lost_pages = hvt_splitmix64(&x) % 7;
		iv.missed_deadlines = (uint32_t)(hvt_splitmix64(&x) % 5);
		iv.written_not_accessed = hvt_splitmix64(&x) % 1000;
		for (uint32_t s = 0; s < layout.nslots; s++)
			for (int k = 0; k < 40; k++) {
				uint64_t np = hvt_memslot_npages(&layout, &layout.slots[s]);
				uint64_t first = hvt_splitmix64(&x) % np, n = 1 + hvt_splitmix64(&x) % 9;

				n = first + n > np ? np - first : n;
				if (iv.written)
					hvt_pageset_set_range(&iv.written[s], first, n);
				if (iv.accessed)
					hvt_pageset_set_range(&iv.accessed[s], first + (k & 1), n - (k & 1));
			}
		if (flags & HVT_IV_WNA_COUNTED) { /* what the flag promises, which the reader checks */
			for (uint32_t s = 0; s < layout.nslots; s++)
				hvt_pageset_union(&iv.accessed[s], &iv.written[s]);
			iv.written_not_accessed %= hvt_interval_count_pages(iv.written, iv.nslots) + 1;
		}
		if (flags & HVT_IV_BANDWIDTH) {
			iv.nchannels = (uint32_t)(hvt_splitmix64(&x) % 4);
			iv.channels = calloc(iv.nchannels + 1, sizeof(*iv.channels));
			for (uint32_t c = 0; c < iv.nchannels; c++)
				iv.channels[c] = (struct hvt_channel_bytes){
				    .channel = c * 3,
				    .read_bytes = hvt_splitmix64(&x) >> 4,
				    .write_bytes = (flags & HVT_IV_BW_TOTAL) ? 0 : hvt_splitmix64(&x) >> 4};
		}
		f = open_memstream(&buf, &len);
		assert_int_equal(hvt_jsonl_write(f, &iv, &layout, &opts), 0);
		fclose(f);
		o = hvt_interval_to_json(&iv, &layout, &opts);
		assert_int_equal(
		    asprintf(&want, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) > 0,
		    1);
		if (strcmp(buf, want))
			fail_msg("seed %llu:\n stream %s json-c %s", (unsigned long long)seed, buf, want);
		check_runs_line(&iv, &opts, buf);
		free(want);
		free(buf);
		json_object_put(o);
		hvt_interval_fini(&iv);
	}
}

/*
 * A line of a large guest is written in memory that does not grow with its ranges: every other page of a
 * 16 GiB slot (2^21 ranges) written under a data limit of 64 MiB more than the process already uses. Building
 * the line as a json-c tree needed about 1 GiB there and died (record aborted so under its memory lock).
 */
static void test_stream_bounded_memory(void **state)
{
	static struct hvt_memslot big_slot = {.slot = 0, .gpa = 0, .size = 16ull << 30, .backing = "anon"};
	static const struct hvt_layout big = {
	    .generation = 1, .page_size = 4096, .nslots = 1, .slots = &big_slot};
	struct hvt_json_opts opts = {.page_ranges = true};
	struct hvt_interval iv;
	pid_t pid;
	int status;

	(void)state;
	assert_int_equal(hvt_interval_init(&iv, &big, HVT_IV_WRITTEN), 0);
	for (uint64_t p = 0; p < hvt_memslot_npages(&big, &big_slot); p += 2)
		hvt_pageset_set(&iv.written[0], p);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		FILE *out = fopen("/dev/null", "w"), *st = fopen("/proc/self/status", "r");
		char line[128];
		unsigned long data_kb = 0;
		struct rlimit rl;

		while (st && fgets(line, sizeof(line), st))
			sscanf(line, "VmData: %lu kB", &data_kb);
		if (!out || !data_kb)
			_exit(3);
		rl.rlim_cur = rl.rlim_max = (data_kb << 10) + (64ul << 20);
		if (setrlimit(RLIMIT_DATA, &rl))
			_exit(4);
		_exit(hvt_jsonl_write(out, &iv, &big, &opts) ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("writing the line under a data limit: %s %d", WIFEXITED(status) ? "exit" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	hvt_interval_fini(&iv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_written_only),
	    cmocka_unit_test(test_empty_set_is_not_null),
	    cmocka_unit_test(test_bandwidth),
	    cmocka_unit_test(test_bandwidth_total_only),
	    cmocka_unit_test(test_bandwidth_absent),
	    cmocka_unit_test(test_jsonl_line),
	    cmocka_unit_test(test_stream_equals_json_c),
	    cmocka_unit_test(test_stream_bounded_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
