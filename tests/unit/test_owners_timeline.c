// SPDX-License-Identifier: MIT
/*
 * Unit tests for the snapshots a trace holds (hvmtrace/attribute/owners_from_trace.c): OWNERS records read
 * back as the snapshots written, in order, with their times; a record whose frame is sound but whose
 * snapshot breaks a rule is refused, naming the trace and the record; a trace without snapshots gives none.
 * (One process across snapshots is one owner: test_owners_interval.)
 */
#include <errno.h>
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

#include "../../hvmtrace/attribute/owners_timeline.h"
#include "hvmtrace/trace.h"

static char dir[64], path[128];

struct bytes {
	uint8_t b[512];
	size_t n;
};

static void le(struct bytes *x, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		x->b[x->n++] = (uint8_t)(v >> (8 * i));
}

/* A snapshot of one process (pid, name) owning PFNs [first, first + 4), and kind anon the same; bad: the
 * process says it has a run in 1 byte (a run takes at least 2). */
static void snapshot(struct bytes *x, uint32_t pid, const char *name, uint8_t first, uint64_t time, bool bad)
{
	const uint8_t runs[] = {first, 3};

	x->n = 0;
	memcpy(x->b, "HVTOWNRS", 8);
	x->n = 8;
	le(x, 1, 2);
	le(x, 0, 2);
	le(x, 4096, 4);
	le(x, 2, 4);
	le(x, 0, 4);
	le(x, time, 8);
	le(x, 0, 8);
	for (int o = 0; o < 2; o++) {
		const char *n = o ? name : "anon";
		size_t rb = o && bad ? 1 : 2;

		le(x, o ? 1 : 2, 1);
		le(x, o ? 0 : 4, 1);
		le(x, 0, 2);
		le(x, o ? pid : 0, 4);
		le(x, strlen(n), 2);
		le(x, 0, 2);
		le(x, 1, 4);
		le(x, rb, 4);
		memcpy(x->b + x->n, n, strlen(n));
		x->n += strlen(n);
		memcpy(x->b + x->n, runs, rb);
		x->n += rb;
	}
	for (int i = 0; i < 8; i++)
		x->b[32 + i] = (uint8_t)((x->n - 40) >> (8 * i));
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/hvt-test-owners-tl-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/t.hvt", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	rmdir(dir);
	return 0;
}

/* A trace of one interval with the snapshots given before and after it. */
static void write_trace(struct bytes *snaps, size_t n, size_t before)
{
	static const char meta_text[] =
	    "{\"tool\": \"t\", \"created\": \"\", \"host\": {\"hostname\": \"h\"}, \"vm\": {\"name\": \"\", \"uuid\": \"\", \"pid\": 1, \"vmm\": \"\", \"accel\": \"kvm\"}, \"tracer\": {\"version\": \"\", \"cpu\": 0, \"harvest_cpu\": -1, \"command\": []}, \"mode\": \"dirty-log\", \"interval_ns\": 1000000000, \"page_size\": 4096, \"written_available\": true, \"accessed_available\": false, \"bandwidth_available\": false, \"channels\": [], \"t_armed_ns\": 0}";
	struct json_object *o = json_tokener_parse(meta_text);
	struct hvt_memslot slot = {.slot = 0, .gpa = 0, .size = 64 * 4096, .backing = "anon"};
	struct hvt_layout l = {.generation = 1, .page_size = 4096, .nslots = 1, .slots = &slot};
	struct hvt_trace_meta meta;
	struct hvt_trace_writer *w;
	struct hvt_interval iv;
	struct hvt_err err = {{0}};

	assert_non_null(o);
	assert_int_equal(hvt_trace_meta_from_json(&meta, o, &err), 0);
	json_object_put(o);
	assert_int_equal(hvt_trace_create(&w, path, &meta, &err), 0);
	hvt_trace_meta_fini(&meta);
	assert_int_equal(hvt_trace_write_layout(w, &l, &err), 0);
	for (size_t i = 0; i < n; i++) {
		if (i == before) {
			assert_int_equal(hvt_interval_init(&iv, &l, HVT_IV_WRITTEN), 0);
			iv.seq = 1;
			iv.t_start_ns = 100;
			iv.t_end_ns = 200;
			assert_int_equal(hvt_trace_write_interval(w, &iv, &err), 0);
			hvt_interval_fini(&iv);
		}
		assert_int_equal(hvt_trace_write_owners(w, 150 + 100 * i, snaps[i].b, snaps[i].n, &err), 0);
	}
	assert_int_equal(hvt_trace_close(w, &err), 0);
}

static void test_read_back(void **state)
{
	struct bytes s[3];
	struct hvt_trace_reader *r;
	struct owners_timeline tl;
	struct hvt_err err = {{0}};

	(void)state;
	snapshot(&s[0], 7, "array", 1, 11, false);
	snapshot(&s[1], 7, "array", 20, 12, false); /* the same process, its pages moved */
	snapshot(&s[2], 8, "cc1", 30, 13, false);
	write_trace(s, 3, 1);
	assert_int_equal(hvt_trace_open(&r, path, &err), 0);
	assert_int_equal(owners_timeline_from_trace(r, &tl, &err), 0);
	assert_int_equal(tl.n, 3);
	assert_true(tl.timed);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(tl.at_ns[i], 150 + 100 * i);
		assert_int_equal(tl.snap[i].time_ns, 11 + i);
		assert_int_equal(tl.snap[i].nowners, 2);
	}
	assert_int_equal(tl.snap[1].runs[tl.snap[1].owners[1].first_run].first, 20);
	owners_timeline_free(&tl);
	hvt_trace_reader_close(r);
}

static void test_bad_snapshot_refused(void **state)
{
	struct bytes s[2];
	struct hvt_trace_reader *r;
	struct owners_timeline tl;
	struct hvt_err err = {{0}};

	(void)state;
	snapshot(&s[0], 7, "array", 1, 11, false);
	snapshot(&s[1], 7, "array", 1, 12, true);
	write_trace(s, 2, 0);
	assert_int_equal(hvt_trace_open(&r, path, &err), 0);
	assert_int_equal(hvt_trace_owners_count(r), 2); /* the frames are sound */
	assert_int_equal(owners_timeline_from_trace(r, &tl, &err), -EINVAL);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "owners record 1"));
	assert_non_null(strstr(err.msg, "owner 1: 1 runs in 1 bytes"));
	assert_int_equal(tl.n, 0);
	assert_null(tl.snap);
	hvt_trace_reader_close(r);
}

static void test_none(void **state)
{
	struct hvt_trace_reader *r;
	struct owners_timeline tl;
	struct hvt_err err = {{0}};

	(void)state;
	write_trace(NULL, 0, 0);
	assert_int_equal(hvt_trace_open(&r, path, &err), 0);
	assert_int_equal(owners_timeline_from_trace(r, &tl, &err), 0);
	assert_int_equal(tl.n, 0);
	owners_timeline_free(&tl);
	hvt_trace_reader_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_read_back),
	    cmocka_unit_test(test_bad_snapshot_refused),
	    cmocka_unit_test(test_none),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
