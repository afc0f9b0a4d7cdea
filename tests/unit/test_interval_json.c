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

#include "hvmtrace/interval_json.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_written_only),     cmocka_unit_test(test_empty_set_is_not_null),
	    cmocka_unit_test(test_bandwidth),        cmocka_unit_test(test_bandwidth_total_only),
	    cmocka_unit_test(test_bandwidth_absent), cmocka_unit_test(test_jsonl_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
