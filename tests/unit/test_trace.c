// SPDX-License-Identifier: MIT
/*
 * Unit tests for the trace file (lib/format/trace_*.c): round trips over two layout generations, and what the
 * reader recovers from torn, truncated, corrupted and foreign files. The records are located by a small
 * parser written here from docs/formats.md, independent of the library's.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "hvmtrace/error.h"
#include "hvmtrace/interval_json.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/trace_runs.h"
#include "hvmtrace/util.h"
#include "../../lib/format/trace_decode.h"
#include "../../lib/format/trace_format.h"
#include "test_records.h"

#define NIV      24 /* intervals in the fixture */
#define SWITCH   12 /* intervals 0..SWITCH-1 use generation 1, the rest generation 2 */
#define PAGE     4096ull
#define MAX_RECS 64

static char dir[64];
static char path[128], path2[128];

static struct hvt_layout layouts[2];
static struct hvt_interval expected[NIV];

static uint64_t rng = 99;

static uint64_t rnd(void)
{
	return hvt_splitmix64(&rng);
}

/* ---- fixture ---- */

static void make_layouts(void)
{
	/* generation 1: two slots whose sizes are not multiples of 64 pages; generation 2 adds a third */
	static const uint64_t pages[] = {1000, 333, 70};
	static const uint64_t gpas[] = {0, 4ull << 30, 8ull << 30};

	for (int g = 0; g < 2; g++) {
		struct hvt_layout *l = &layouts[g];

		l->generation = g == 0 ? 1 : 5;
		l->page_size = PAGE;
		l->nslots = g == 0 ? 2 : 3;
		l->slots = calloc(l->nslots, sizeof(*l->slots));
		assert_non_null(l->slots);
		for (uint32_t i = 0; i < l->nslots; i++) {
			l->slots[i].slot = i;
			l->slots[i].gpa = gpas[i];
			l->slots[i].size = pages[i] * PAGE;
			strcpy(l->slots[i].backing, i == 1 ? "memfd" : "anon");
			snprintf(l->slots[i].name, sizeof(l->slots[i].name), "ram%u", i);
		}
	}
}

static void random_set(struct hvt_pageset *s)
{
	uint64_t n = s->npages, ops = rnd() % 12;

	for (uint64_t k = 0; k < ops; k++) {
		uint64_t first = rnd() % n;

		if (rnd() % 3)
			hvt_pageset_set(s, first);
		else
			hvt_pageset_set_range(s, first, 1 + rnd() % (n / 3)); /* may touch the slot end */
	}
}

/* Pages of w that a lacks, page by page (independent of the library's word operations). */
static uint64_t count_not_in(const struct hvt_pageset *w, const struct hvt_pageset *a)
{
	uint64_t n = 0;

	for (uint64_t p = 0; p < w->npages; p++)
		n += hvt_pageset_test(w, p) && !hvt_pageset_test(a, p);
	return n;
}

static void make_intervals(void)
{
	for (int i = 0; i < NIV; i++) {
		const struct hvt_layout *l = &layouts[i < SWITCH ? 0 : 1];
		struct hvt_interval *iv = &expected[i];
		uint32_t flags = HVT_IV_WRITTEN;

		if (i % 2 == 0)
			flags |= HVT_IV_ACCESSED;
		if (i % 3 == 0)
			flags |= HVT_IV_BANDWIDTH;
		if (i == NIV - 1)
			flags |= HVT_IV_FINAL;
		if (i == 7)
			flags = HVT_IV_BANDWIDTH; /* no sets at all */
		assert_int_equal(hvt_interval_init(iv, l, flags), 0);
		iv->seq = (uint64_t)i + 1 + (i > 4); /* increasing, with a gap */
		iv->t_start_ns = 1000000000ull * (uint64_t)i;
		iv->t_end_ns = iv->t_start_ns + 999999999ull;
		iv->wall_start_ns = -5 + (int64_t)i; /* negative values survive */
		iv->harvest_ns = 1234 + (uint64_t)i;
		iv->missed_deadlines = (uint32_t)i % 2;
		iv->lost_pages = i == SWITCH ? 17 : 0;
		uint64_t not_accessed = 0;
		for (uint32_t s = 0; s < iv->nslots; s++) {
			if (iv->written)
				random_set(&iv->written[s]);
			if (iv->accessed) {
				random_set(&iv->accessed[s]);
				not_accessed += count_not_in(&iv->written[s], &iv->accessed[s]);
				if (i % 4 == 2) /* made consistent without the tracer's check: no count */
					hvt_pageset_union(&iv->accessed[s], &iv->written[s]);
			}
		}
		/* i % 4 == 0: as record leaves it, the written pages added to the accessed ones and counted
		 */
		if (i % 4 == 0 && iv->accessed) {
			assert_int_equal(hvt_interval_close_written_in_accessed(iv), 0);
			assert_int_equal(iv->written_not_accessed, not_accessed);
		}
		if (i % 6 == 3)
			iv->flags |= HVT_IV_BW_TOTAL; /* totals only (resctrl): write_bytes 0 */
		if (flags & HVT_IV_BANDWIDTH) {
			iv->nchannels = 3;
			iv->channels = calloc(3, sizeof(*iv->channels));
			assert_non_null(iv->channels);
			for (uint32_t c = 0; c < 3; c++)
				iv->channels[c] = (struct hvt_channel_bytes){
				    c, rnd(), (iv->flags & HVT_IV_BW_TOTAL) ? 0 : rnd() >> 20};
		}
	}
}

/* The metadata of the traces written here: what the reader requires, and the 3 channels of their intervals.
 */
static void make_meta(struct hvt_trace_meta *m)
{
	static const char text[] =
	    "{\"tool\": \"test_trace\", \"created\": \"\", \"host\": {\"hostname\": \"h\"}, \"vm\": {\"name\": \"\", \"uuid\": \"\", \"pid\": 1, \"vmm\": \"\", \"accel\": \"kvm\"}, \"tracer\": {\"version\": \"\", \"cpu\": 0, \"harvest_cpu\": -1, \"command\": []}, \"mode\": \"dirty-log\", \"interval_ns\": 1000000000, \"page_size\": 4096, \"written_available\": true, \"accessed_available\": true, \"bandwidth_available\": true, \"bandwidth_source\": \"pmu\", \"channels\": [{\"id\": \"c0\", \"source\": \"t\", \"reads_writes_split\": true}, {\"id\": \"c1\", \"source\": \"t\", \"reads_writes_split\": true}, {\"id\": \"c2\", \"source\": \"t\", \"reads_writes_split\": true}], \"t_armed_ns\": 0}";
	struct json_object *o = json_tokener_parse(text);
	struct hvt_err err = {{0}};

	assert_non_null(o);
	if (hvt_trace_meta_from_json(m, o, &err))
		fail_msg("test metadata: %s", err.msg);
	json_object_put(o);
}

/* Writes the fixture to p; closes it, or abandons it (as a killed writer would). */
static void write_trace(const char *p, bool close_it)
{
	struct hvt_trace_writer *w;
	struct hvt_err err = {{0}};
	struct hvt_trace_meta meta;

	make_meta(&meta);
	if (hvt_trace_create(&w, p, &meta, &err))
		fail_msg("create: %s", err.msg);
	hvt_trace_meta_fini(&meta);
	if (hvt_trace_write_layout(w, &layouts[0], &err))
		fail_msg("layout: %s", err.msg);
	for (int i = 0; i < NIV; i++) {
		if (i == SWITCH && hvt_trace_write_layout(w, &layouts[1], &err))
			fail_msg("layout: %s", err.msg);
		if (hvt_trace_write_interval(w, &expected[i], &err))
			fail_msg("interval %d: %s", i, err.msg);
	}
	if (!close_it)
		hvt_trace_abandon(w);
	else if (hvt_trace_close(w, &err))
		fail_msg("close: %s", err.msg);
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/hvt-test-trace-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/t.hvt", dir);
	snprintf(path2, sizeof(path2), "%s/cut.hvt", dir);
	make_layouts();
	make_intervals();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	for (int i = 0; i < NIV; i++)
		hvt_interval_fini(&expected[i]);
	hvt_layout_fini(&layouts[0]);
	hvt_layout_fini(&layouts[1]);
	unlink(path);
	unlink(path2);
	rmdir(dir);
	return 0;
}

/* ---- file helpers ---- */

static uint8_t *slurp(const char *p, size_t *len)
{
	char *buf;

	assert_int_equal(hvt_read_file(p, "trace", 1u << 30, &buf, len, NULL), 0);
	return (uint8_t *)buf;
}

static void spit(const char *p, const void *buf, size_t len)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

struct rec {
	size_t off, end;
	uint32_t type;
};

/* The records of a well-formed file, per docs/formats.md: 16-byte file header, then framed records. */
static int find_records(const uint8_t *buf, size_t len, struct rec *recs)
{
	size_t off = 16;
	int n = 0;

	while (off + 16 <= len && n < MAX_RECS) {
		uint32_t type = hvt_get_le32(buf + off), plen = hvt_get_le32(buf + off + 4);

		recs[n].off = off;
		recs[n].end = off + 16 + ((plen + 7u) & ~7u);
		recs[n].type = type;
		off = recs[n++].end;
		if (type == HVT_REC_INDEX)
			break;
	}
	return n;
}

/* Index into recs of the record holding interval k. */
static int interval_record(const struct rec *recs, int n, int k)
{
	for (int i = 0; i < n; i++)
		if (recs[i].type == HVT_REC_INTERVAL && k-- == 0)
			return i;
	fail_msg("no interval record %d", k);
	return -1;
}

/* ---- comparisons ---- */

static void assert_sets_equal(const struct hvt_pageset *a, const struct hvt_pageset *b, uint32_t n)
{
	assert_true((a == NULL) == (b == NULL));
	for (uint32_t i = 0; a && i < n; i++)
		assert_true(hvt_pageset_equal(&a[i], &b[i]));
}

static void assert_interval_equal(const struct hvt_interval *a, const struct hvt_interval *b)
{
	assert_int_equal(a->seq, b->seq);
	assert_int_equal(a->t_start_ns, b->t_start_ns);
	assert_int_equal(a->t_end_ns, b->t_end_ns);
	assert_true(a->wall_start_ns == b->wall_start_ns);
	assert_int_equal(a->harvest_ns, b->harvest_ns);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->missed_deadlines, b->missed_deadlines);
	assert_int_equal(a->generation, b->generation);
	assert_int_equal(a->lost_pages, b->lost_pages);
	assert_int_equal(a->written_not_accessed, b->written_not_accessed);
	assert_int_equal(a->nslots, b->nslots);
	assert_sets_equal(a->written, b->written, a->nslots);
	assert_sets_equal(a->accessed, b->accessed, a->nslots);
	assert_int_equal(a->nchannels, b->nchannels);
	for (uint32_t c = 0; c < a->nchannels; c++) {
		assert_int_equal(a->channels[c].channel, b->channels[c].channel);
		assert_int_equal(a->channels[c].read_bytes, b->channels[c].read_bytes);
		assert_int_equal(a->channels[c].write_bytes, b->channels[c].write_bytes);
	}
}

/* Opens p, expects exactly `want` intervals, each identical to the fixture's; returns the status. */
static struct hvt_trace_status open_and_check(const char *p, uint64_t want)
{
	struct hvt_trace_reader *r;
	struct hvt_trace_status st;
	struct hvt_err err = {{0}};

	if (hvt_trace_open(&r, p, &err))
		fail_msg("open: %s", err.msg);
	hvt_trace_get_status(r, &st);
	if (st.intervals != want)
		fail_msg("%llu intervals recovered, want %llu (%s)", (unsigned long long)st.intervals,
			 (unsigned long long)want, st.problem);
	assert_int_equal(hvt_trace_interval_count(r), want);
	for (uint64_t i = 0; i < want; i++) {
		struct hvt_interval iv;

		if (hvt_trace_read_interval(r, i, &iv, &err))
			fail_msg("interval %llu: %s", (unsigned long long)i, err.msg);
		assert_interval_equal(&iv, &expected[i]);
		hvt_interval_fini(&iv);
	}
	hvt_trace_reader_close(r);
	return st;
}

/* ---- tests ---- */

static void test_crc32c(void **state)
{
	static const uint8_t zeros[32];

	(void)state;
	/* the check value of CRC-32C, and the 32-zero-byte vector of RFC 3720 */
	assert_int_equal(hvt_crc32c(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(hvt_crc32c(hvt_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
	assert_int_equal(hvt_crc32c(0, zeros, sizeof(zeros)), 0x8A9136AAu);
	assert_int_equal(hvt_crc32c(0, "", 0), 0);
}

static void test_interval_helpers(void **state)
{
	struct hvt_interval iv;

	(void)state;
	assert_int_equal(hvt_interval_init(&iv, &layouts[1], HVT_IV_WRITTEN), 0);
	assert_int_equal(iv.nslots, 3);
	assert_int_equal(iv.generation, 5);
	assert_non_null(iv.written);
	assert_null(iv.accessed);
	assert_int_equal(iv.written[0].npages, 1000);
	assert_int_equal(iv.written[2].npages, 70);
	hvt_pageset_set_range(&iv.written[0], 10, 20);
	hvt_pageset_set(&iv.written[2], 69);
	assert_int_equal(hvt_interval_count_pages(iv.written, iv.nslots), 21);
	assert_int_equal(hvt_interval_count_pages(iv.accessed, iv.nslots), 0);
	hvt_interval_fini(&iv);
	assert_null(iv.written);
	assert_int_equal(iv.nslots, 0);
	hvt_interval_fini(&iv); /* twice is harmless */
}

static void test_round_trip(void **state)
{
	struct hvt_trace_reader *r;
	struct hvt_trace_status st;
	struct hvt_err err = {{0}};
	struct hvt_interval iv;
	struct stat sb;

	(void)state;
	spit(path, "old contents, longer than nothing", 33); /* replaced, not appended to */
	write_trace(path, true);
	st = open_and_check(path, NIV);
	assert_true(st.complete);
	assert_string_equal(st.problem, "");
	assert_int_equal(st.layouts, 2);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(st.file_bytes, (uint64_t)sb.st_size);
	assert_int_equal(st.valid_bytes, st.file_bytes);
	assert_int_equal(sb.st_mode & 0777, 0600);

	assert_int_equal(hvt_trace_open(&r, path, &err), 0);
	assert_string_equal(hvt_trace_meta(r)->tool, "test_trace");
	assert_non_null(hvt_trace_layout(r, 1));
	assert_int_equal(hvt_trace_layout(r, 5)->nslots, 3);
	assert_int_equal(hvt_trace_layout(r, 5)->slots[2].size, 70 * PAGE);
	assert_string_equal(hvt_trace_layout(r, 5)->slots[1].backing, "memfd");
	assert_null(hvt_trace_layout(r, 2));
	assert_int_equal(hvt_trace_read_interval(r, NIV, &iv, &err), -EINVAL);
	assert_null(iv.written);
	hvt_trace_reader_close(r);
}

static void test_abandoned_writer(void **state)
{
	struct hvt_trace_status st;

	(void)state;
	write_trace(path, false);
	st = open_and_check(path, NIV);
	assert_false(st.complete);
	assert_non_null(strstr(st.problem, "not closed"));
	assert_int_equal(st.valid_bytes, st.file_bytes);
}

/* The known trace written to path, closed or not, and read back: its bytes (*len of them) and its *n records.
 */
static uint8_t *written_records(bool close_it, size_t *len, struct rec *recs, int *n)
{
	uint8_t *buf;

	write_trace(path, close_it);
	buf = slurp(path, len);
	*n = find_records(buf, *len, recs);
	return buf;
}

/* Cuts at every record boundary and at offsets inside every record (header, payload, padding, trailer). */
static void test_truncations(void **state)
{
	struct rec recs[MAX_RECS];
	size_t len, cuts[16];
	uint8_t *buf;
	int n;

	(void)state;
	buf = written_records(true, &len, recs, &n);
	assert_int_equal(recs[n - 1].type, HVT_REC_INDEX);
	assert_int_equal(recs[n - 1].end + HVT_TRAILER_SIZE, len);
	for (int i = 0; i <= n; i++) {
		size_t off = i < n ? recs[i].off : recs[n - 1].end, end = i < n ? recs[i].end : len;
		size_t ncuts = 0;

		cuts[ncuts++] = off; /* the boundary */
		for (size_t d = 1; d < 18; d += 4)
			cuts[ncuts++] = off + d; /* inside the header, and just past it */
		cuts[ncuts++] = off + (end - off) / 2;
		cuts[ncuts++] = end - 1;
		for (size_t c = 0; c < ncuts; c++) {
			size_t cut = cuts[c];
			uint64_t want = 0;
			struct hvt_trace_status st;

			if (cut >= end)
				continue;
			for (int k = 0; k < n; k++)
				want += recs[k].type == HVT_REC_INTERVAL && recs[k].end <= cut;
			spit(path2, buf, cut);
			if (cut < recs[0].end) { /* no intact META: not a trace */
				struct hvt_trace_reader *r;
				struct hvt_err err = {{0}};

				assert_int_equal(hvt_trace_open(&r, path2, &err), -EINVAL);
				assert_null(r);
				assert_non_null(strstr(err.msg, path2));
				continue;
			}
			st = open_and_check(path2, want);
			assert_false(st.complete);
			assert_true(st.problem[0] != '\0');
			assert_true(st.valid_bytes <= cut);
			if (i < n && cut > off)
				assert_non_null(strstr(st.problem, "past end of file"));
		}
	}
	free(buf);
}

static void flip_and_expect(const uint8_t *buf, size_t len, size_t at, uint64_t want, size_t rec_off)
{
	uint8_t *mut = malloc(len);
	struct hvt_trace_status st;
	char where[64];

	assert_non_null(mut);
	memcpy(mut, buf, len);
	mut[at] ^= (uint8_t)(1 + rnd() % 255);
	spit(path2, mut, len);
	st = open_and_check(path2, want);
	assert_false(st.complete);
	snprintf(where, sizeof(where), "record at offset %zu:", rec_off);
	if (!strstr(st.problem, where))
		fail_msg("flip at %zu: problem \"%s\" does not name %s", at, st.problem, where);
	free(mut);
}

/* Any byte of interval k changed (header, payload or padding): exactly k intervals survive. */
static void test_byte_flips(void **state)
{
	static const int every_byte[] = {0, SWITCH, NIV - 1};
	struct rec recs[MAX_RECS];
	size_t len;
	uint8_t *buf;
	int n;

	(void)state;
	buf = written_records(true, &len, recs, &n);
	for (size_t e = 0; e < sizeof(every_byte) / sizeof(every_byte[0]); e++) {
		const struct rec *r = &recs[interval_record(recs, n, every_byte[e])];

		for (size_t at = r->off; at < r->end; at++)
			flip_and_expect(buf, len, at, (uint64_t)every_byte[e], r->off);
	}
	for (int k = 0; k < NIV; k++) {
		const struct rec *r = &recs[interval_record(recs, n, k)];

		flip_and_expect(buf, len, r->off + rnd() % (r->end - r->off), (uint64_t)k, r->off);
	}
	free(buf);
}

/* A damaged INDEX or trailer costs the "complete" status, never an interval. */
static void test_index_damage(void **state)
{
	struct rec recs[MAX_RECS];
	struct hvt_trace_status st;
	size_t len;
	uint8_t *buf;
	int n;

	(void)state;
	buf = written_records(true, &len, recs, &n);
	flip_and_expect(buf, len, recs[n - 1].off + 20, NIV, recs[n - 1].off); /* INDEX payload */
	for (size_t at = len - HVT_TRAILER_SIZE; at < len; at++) {
		flip_and_expect(buf, len, at, NIV, recs[n - 1].off);
	}
	spit(path2, buf, len - HVT_TRAILER_SIZE);
	st = open_and_check(path2, NIV);
	assert_non_null(strstr(st.problem, "trailer"));
	free(buf);
}

static void test_semantic_stops(void **state)
{
	struct rec recs[MAX_RECS];
	struct hvt_trace_status st;
	size_t len;
	uint8_t *buf, *last;
	const struct rec *r;
	uint32_t plen;
	int n;

	(void)state;
	buf = written_records(false, &len, recs, &n);
	r = &recs[interval_record(recs, n, NIV - 1)];
	plen = hvt_get_le32(buf + r->off + 4);
	last = malloc(plen);
	assert_non_null(last);

	/* an unknown record type */
	spit(path2, buf, len);
	append_record(path2, 99, (const uint8_t *)"x", 1);
	st = open_and_check(path2, NIV);
	assert_non_null(strstr(st.problem, "unknown record type 99"));

	/* the last interval again: its seq does not increase */
	spit(path2, buf, len);
	memcpy(last, buf + r->off + 16, plen);
	append_record(path2, HVT_REC_INTERVAL, last, plen);
	st = open_and_check(path2, NIV);
	assert_non_null(strstr(st.problem, "does not follow"));

	/* a later interval referring to a generation no LAYOUT record defines */
	hvt_put_le64(last, 1000);
	hvt_put_le64(last + 40, 77);
	spit(path2, buf, len);
	append_record(path2, HVT_REC_INTERVAL, last, plen);
	st = open_and_check(path2, NIV);
	assert_non_null(strstr(st.problem, "generation 77"));

	/* a layout that is not JSON, and a second META */
	spit(path2, buf, len);
	append_record(path2, HVT_REC_LAYOUT, (const uint8_t *)"{\"generation\":", 14);
	st = open_and_check(path2, NIV);
	assert_non_null(strstr(st.problem, "JSON"));
	spit(path2, buf, len);
	append_record(path2, HVT_REC_META, (const uint8_t *)"{}", 2);
	st = open_and_check(path2, NIV);
	assert_non_null(strstr(st.problem, "META"));
	free(last);
	free(buf);
}

static void expect_not_a_trace(const char *p, const char *msg_part)
{
	struct hvt_trace_reader *r = (struct hvt_trace_reader *)1;
	struct hvt_err err = {{0}};

	assert_int_equal(hvt_trace_open(&r, p, &err), -EINVAL);
	assert_null(r);
	if (!strstr(err.msg, p) || !strstr(err.msg, msg_part))
		fail_msg("message \"%s\" should name %s and say \"%s\"", err.msg, p, msg_part);
}

static void test_not_a_trace(void **state)
{
	uint8_t garbage[4096], *buf;
	size_t len;

	(void)state;
	spit(path2, "", 0);
	expect_not_a_trace(path2, "empty");
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (uint8_t)rnd();
	spit(path2, garbage, sizeof(garbage));
	expect_not_a_trace(path2, "magic");
	spit(path2, "HVMTRACE", 8);
	expect_not_a_trace(path2, "too short");
	expect_not_a_trace(dir, "not a regular file");
	unlink(path2);
	expect_not_a_trace(path2, "cannot open");

	write_trace(path, true);
	buf = slurp(path, &len);
	buf[7] = 'X';
	spit(path2, buf, len);
	expect_not_a_trace(path2, "magic");
	buf[7] = 'E';
	hvt_put_le32(buf + 8, 2);
	spit(path2, buf, len);
	expect_not_a_trace(path2, "version 2");
	hvt_put_le32(buf + 8, HVT_TRACE_VERSION);
	hvt_put_le32(buf + 12, 1); /* a flag this reader must know and does not */
	spit(path2, buf, len);
	expect_not_a_trace(path2, "flags");
	hvt_put_le32(buf + 12, 0x10000); /* an informational flag: fine */
	spit(path2, buf, len);
	open_and_check(path2, NIV);
	hvt_put_le32(buf + 12, 0);
	buf[16 + 16 + 1] ^= 0x20; /* inside the META JSON */
	spit(path2, buf, len);
	expect_not_a_trace(path2, "META");
	free(buf);
}

/* The CRC is checked again when an interval is read: the file may change after open. */
static void test_read_rechecks_crc(void **state)
{
	struct rec recs[MAX_RECS];
	struct hvt_trace_reader *r;
	struct hvt_err err = {{0}};
	struct hvt_interval iv;
	size_t len;
	uint8_t *buf, byte;
	int n, fd;

	(void)state;
	buf = written_records(true, &len, recs, &n);
	assert_int_equal(hvt_trace_open(&r, path, &err), 0);
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	byte = buf[recs[interval_record(recs, n, 3)].off + 40] ^ 0xff;
	assert_int_equal(pwrite(fd, &byte, 1, (off_t)recs[interval_record(recs, n, 3)].off + 40), 1);
	close(fd);
	assert_int_equal(hvt_trace_read_interval(r, 2, &iv, &err), 0);
	hvt_interval_fini(&iv);
	assert_int_equal(hvt_trace_read_interval(r, 3, &iv, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "CRC"));
	assert_non_null(strstr(err.msg, path));
	assert_null(iv.written);
	hvt_trace_reader_close(r);
	free(buf);
}

static void test_writer_refuses(void **state)
{
	struct hvt_trace_writer *w;
	struct hvt_err err = {{0}};
	struct hvt_interval iv, bad;
	struct hvt_pageset *keep;
	struct hvt_trace_meta meta;

	(void)state;
	make_meta(&meta);
	assert_int_equal(hvt_trace_create(&w, path, &meta, &err), 0);
	/* no layout yet */
	assert_int_equal(hvt_trace_write_interval(w, &expected[0], &err), -EINVAL);
	assert_non_null(strstr(err.msg, "generation 1"));
	assert_int_equal(hvt_trace_write_layout(w, &layouts[1], &err), 0);
	assert_int_equal(hvt_trace_write_layout(w, &layouts[0], &err), -EINVAL); /* generation goes back */
	assert_int_equal(hvt_trace_write_interval(w, &expected[0], &err), -EINVAL);
	assert_int_equal(hvt_trace_write_interval(w, &expected[SWITCH + 1], &err), 0);
	/* seq must increase */
	assert_int_equal(hvt_trace_write_interval(w, &expected[SWITCH], &err), -EINVAL);
	assert_non_null(strstr(err.msg, "does not follow"));
	/* sets that do not match the layout */
	assert_int_equal(hvt_interval_init(&iv, &layouts[1], HVT_IV_WRITTEN), 0);
	iv.seq = 1000;
	hvt_pageset_fini(&iv.written[2]);
	assert_int_equal(hvt_pageset_init(&iv.written[2], 71), 0);
	assert_int_equal(hvt_trace_write_interval(w, &iv, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "slot 2"));
	bad = iv;
	keep = bad.written;
	bad.written = NULL;
	assert_int_equal(hvt_trace_write_interval(w, &bad, &err), -EINVAL);
	bad.written = keep;
	bad.flags |= 1u << 20;
	assert_int_equal(hvt_trace_write_interval(w, &bad, &err), -EINVAL);
	/* BW_TOTAL needs BANDWIDTH, and its channels carry no separate write bytes */
	bad = expected[SWITCH + 3];
	bad.seq = 1001;
	assert_true(bad.flags & HVT_IV_BW_TOTAL);
	bad.flags &= ~HVT_IV_BANDWIDTH;
	assert_int_equal(hvt_trace_write_interval(w, &bad, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "BW_TOTAL"));
	bad.flags |= HVT_IV_BANDWIDTH;
	bad.channels[1].write_bytes = 5;
	assert_int_equal(hvt_trace_write_interval(w, &bad, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "channel 1"));
	bad.channels[1].write_bytes = 0;
	hvt_interval_fini(&iv);
	/* refusals are not write failures: the trace goes on */
	assert_int_equal(hvt_trace_write_interval(w, &expected[NIV - 1], &err), 0);
	assert_int_equal(hvt_trace_close(w, &err), 0);
	{
		struct hvt_trace_reader *r;
		struct hvt_trace_status st;

		assert_int_equal(hvt_trace_open(&r, path, &err), 0);
		hvt_trace_get_status(r, &st);
		assert_true(st.complete);
		assert_int_equal(st.intervals, 2);
		assert_int_equal(st.layouts, 1);
		hvt_trace_reader_close(r);
	}
	assert_int_equal(hvt_trace_close(NULL, &err), 0);
	assert_int_equal(hvt_trace_create(&w, "/nonexistent-dir/t.hvt", &meta, &err), -ENOENT);
	assert_null(w);
	assert_non_null(strstr(err.msg, "/nonexistent-dir/t.hvt"));
	hvt_trace_meta_fini(&meta);
}

/*
 * A write that fails stops the writer for good and close reports it. /dev/full fails the first write;
 * RLIMIT_FSIZE makes the kernel cut the write of interval 3 short, leaving a torn record behind.
 */
static void test_write_failure(void **state)
{
	struct rec recs[MAX_RECS];
	struct hvt_trace_writer *w;
	struct hvt_trace_status st;
	struct hvt_err err = {{0}};
	struct rlimit old, lim;
	void (*old_handler)(int);
	size_t len;
	uint8_t *buf;
	int n;
	struct hvt_trace_meta meta;

	(void)state;
	make_meta(&meta);
	if (!access("/dev/full", W_OK)) {
		assert_int_equal(hvt_trace_create(&w, "/dev/full", &meta, &err), -ENOSPC);
		assert_null(w);
		assert_non_null(strstr(err.msg, "/dev/full"));
	}

	buf = written_records(true, &len, recs, &n);
	free(buf);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = recs[interval_record(recs, n, 3)].off + 50;
	old_handler = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);

	/* Nothing may assert while the limit is in force: a failing assert would leave it set. */
	int rc_create, rc_layout, rc_iv[5], rc_close;
	struct hvt_err errs[5];

	rc_create = hvt_trace_create(&w, path2, &meta, &err);
	rc_layout = rc_create ? -1 : hvt_trace_write_layout(w, &layouts[0], &err);
	for (int i = 0; i < 5; i++)
		rc_iv[i] = rc_layout ? -1 : hvt_trace_write_interval(w, &expected[i], &errs[i]);
	rc_close = rc_layout ? -1 : hvt_trace_close(w, &err);
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, old_handler);
	hvt_trace_meta_fini(&meta);

	assert_int_equal(rc_create, 0);
	assert_int_equal(rc_layout, 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(rc_iv[i], 0);
	assert_true(rc_iv[3] < 0); /* EFBIG or a short write: the record is torn */
	assert_non_null(strstr(errs[3].msg, path2));
	assert_int_equal(rc_iv[4], -EIO); /* nothing goes after a torn record */
	assert_non_null(strstr(errs[4].msg, "earlier write failed"));
	assert_int_equal(rc_close, -EIO);
	st = open_and_check(path2, 3);
	assert_false(st.complete);
	assert_non_null(strstr(st.problem, "past end of file"));
}

/* ---- written ⊆ accessed (issue 15): the tracer's check, its count, and the field on disk ---- */

static void test_written_in_accessed(void **state)
{
	struct hvt_pageset a, b;
	struct hvt_interval iv, before;
	uint64_t added = 99, total = 0;

	(void)state;
	/* the set operation: union, and the pages it added */
	assert_int_equal(hvt_pageset_init(&a, 200), 0);
	assert_int_equal(hvt_pageset_init(&b, 200), 0);
	hvt_pageset_set_range(&a, 10, 5);  /* 10..14 */
	hvt_pageset_set_range(&b, 12, 70); /* 12..81: 67 of them new to a, across a word boundary */
	hvt_pageset_set(&b, 199);
	assert_int_equal(hvt_pageset_union_count(&a, &b, &added), 0);
	assert_int_equal(added, 68);
	assert_int_equal(hvt_pageset_count(&a), 73);
	assert_true(hvt_pageset_is_subset(&b, &a));
	assert_int_equal(hvt_pageset_union_count(&a, &b, &added), 0);
	assert_int_equal(added, 0);
	hvt_pageset_fini(&b);
	assert_int_equal(hvt_pageset_init(&b, 201), 0);
	added = 7;
	assert_int_equal(hvt_pageset_union_count(&a, &b, &added), -EINVAL);
	assert_int_equal(added, 7);
	hvt_pageset_fini(&a);
	hvt_pageset_fini(&b);

	/* an interval with both sets: written pages join the accessed ones, and are counted */
	assert_int_equal(hvt_interval_init(&iv, &layouts[1], HVT_IV_WRITTEN | HVT_IV_ACCESSED), 0);
	assert_int_equal(hvt_interval_init(&before, &layouts[1], HVT_IV_WRITTEN | HVT_IV_ACCESSED), 0);
	for (uint32_t s = 0; s < iv.nslots; s++) {
		random_set(&iv.written[s]);
		random_set(&iv.accessed[s]);
		hvt_pageset_set(&iv.written[s], iv.written[s].npages - 1); /* at least one per slot ... */
		hvt_pageset_subtract(&iv.accessed[s], &iv.written[s]);     /* ... none of them accessed */
		hvt_pageset_set(&iv.accessed[s], 0);
		total += count_not_in(&iv.written[s], &iv.accessed[s]);
		hvt_pageset_union(&before.written[s], &iv.written[s]);
		hvt_pageset_union(&before.accessed[s], &iv.accessed[s]);
	}
	assert_true(total >= iv.nslots);
	assert_int_equal(hvt_interval_close_written_in_accessed(&iv), 0);
	assert_true(iv.flags & HVT_IV_WNA_COUNTED);
	assert_int_equal(iv.written_not_accessed, total);
	for (uint32_t s = 0; s < iv.nslots; s++) {
		assert_true(hvt_pageset_equal(&iv.written[s], &before.written[s])); /* written untouched */
		for (uint64_t p = 0; p < iv.accessed[s].npages; p++)
			assert_int_equal(hvt_pageset_test(&iv.accessed[s], p),
					 hvt_pageset_test(&before.accessed[s], p) ||
					     hvt_pageset_test(&before.written[s], p));
	}
	/* again: nothing more to add, and the count is kept */
	assert_int_equal(hvt_interval_close_written_in_accessed(&iv), 0);
	assert_int_equal(iv.written_not_accessed, total);
	hvt_interval_fini(&before);

	/* sets of different sizes: refused, nothing changed */
	hvt_interval_fini(&iv);
	assert_int_equal(hvt_interval_init(&iv, &layouts[1], HVT_IV_WRITTEN | HVT_IV_ACCESSED), 0);
	hvt_pageset_set(&iv.written[0], 3);
	hvt_pageset_fini(&iv.accessed[2]);
	assert_int_equal(hvt_pageset_init(&iv.accessed[2], 71), 0);
	assert_int_equal(hvt_interval_close_written_in_accessed(&iv), -EINVAL);
	assert_false(iv.flags & HVT_IV_WNA_COUNTED);
	assert_false(hvt_pageset_test(&iv.accessed[0], 3));
	hvt_interval_fini(&iv);

	/* written sets only (dirty-log): nothing to check, and no count, not a count of 0 */
	assert_int_equal(hvt_interval_init(&iv, &layouts[1], HVT_IV_WRITTEN), 0);
	hvt_pageset_set(&iv.written[0], 3);
	assert_int_equal(hvt_interval_close_written_in_accessed(&iv), 0);
	assert_int_equal(iv.flags, HVT_IV_WRITTEN);
	assert_null(iv.accessed);
	hvt_interval_fini(&iv);
}

/* The field's bytes, read by this file's own parser from docs/formats.md: bit 5, then u64 at offset 72 and
 * the channel entries after it; an interval without bit 5 keeps the 72-byte fixed part. */
static void test_written_not_accessed_on_disk(void **state)
{
	struct rec recs[MAX_RECS];
	size_t len;
	uint8_t *buf;
	int n, k;

	(void)state;
	assert_true(expected[0].flags & HVT_IV_WNA_COUNTED);
	assert_true(expected[0].flags & HVT_IV_BANDWIDTH);
	assert_false(expected[6].flags & HVT_IV_WNA_COUNTED); /* both sets, made consistent elsewhere */
	assert_true(expected[6].flags & HVT_IV_ACCESSED);
	assert_true(expected[6].flags & HVT_IV_BANDWIDTH);
	buf = written_records(true, &len, recs, &n);

	const uint8_t *p = buf + recs[interval_record(recs, n, 0)].off + 16;
	assert_int_equal(hvt_get_le32(p + 56), expected[0].flags);
	assert_int_equal(hvt_get_le64(p + 72), expected[0].written_not_accessed);
	assert_int_equal(hvt_get_le32(p + 68), 3); /* nchannels */
	assert_int_equal(hvt_get_le64(p + 80 + 8), expected[0].channels[0].read_bytes);

	k = interval_record(recs, n, 6);
	p = buf + recs[k].off + 16;
	assert_int_equal(hvt_get_le32(p + 56) & HVT_IV_WNA_COUNTED, 0);
	assert_int_equal(hvt_get_le64(p + 72 + 8), expected[6].channels[0].read_bytes);
	free(buf);

	/* every interval with the flag holds written ⊆ accessed, and some count is not 0 */
	uint64_t sum = 0;
	for (int i = 0; i < NIV; i++) {
		if (!(expected[i].flags & HVT_IV_WNA_COUNTED))
			continue;
		sum += expected[i].written_not_accessed;
		for (uint32_t s = 0; s < expected[i].nslots; s++)
			assert_true(hvt_pageset_is_subset(&expected[i].written[s], &expected[i].accessed[s]));
	}
	assert_true(sum > 0);
}

/* A new interval with these flags (and no pages): the writer refuses it, naming what. */
static void expect_encode_refused(const struct hvt_layout *l, uint32_t flags, const char *needle)
{
	struct hvt_interval iv;
	struct hvt_buf b = {0};
	struct hvt_err err = {{0}};

	assert_int_equal(hvt_interval_init(&iv, l, flags), 0);
	assert_int_equal(hvt_interval_encode(&iv, l, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, needle));
	hvt_interval_fini(&iv);
	free(b.p);
}

/* Interval 1 with both sets, page 5 of slot 1 written and not (yet) accessed. */
static void page5_written(struct hvt_interval *iv, const struct hvt_layout *l)
{
	assert_int_equal(hvt_interval_init(iv, l, HVT_IV_WRITTEN | HVT_IV_ACCESSED), 0);
	iv->seq = 1;
	hvt_pageset_set(&iv->written[1], 5);
}

/* The flag promises both sets and written ⊆ accessed: the writer and the decoder refuse anything else. */
static void test_written_not_accessed_refused(void **state)
{
	struct hvt_interval iv, out;
	struct hvt_buf b = {0};
	struct hvt_err err = {{0}};
	const struct hvt_layout *l = &layouts[0];

	(void)state;
	page5_written(&iv, l); /* written, not accessed */
	iv.flags |= HVT_IV_WNA_COUNTED;
	assert_int_equal(hvt_interval_encode(&iv, l, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "slot 1: flag WNA_COUNTED, but a written page is not accessed"));

	/* the same interval without the flag (as an older tracer wrote it), then given the flag by hand */
	b.len = 0;
	iv.flags &= ~HVT_IV_WNA_COUNTED;
	assert_int_equal(hvt_interval_encode(&iv, l, &b, &err), 0);
	uint8_t *bad = calloc(1, 4096);
	assert_non_null(bad);
	assert_true(b.len + 8 <= 4096);
	memcpy(bad, b.p, HVT_IV_FIXED_SIZE);
	memcpy(bad + HVT_IV_FIXED_SIZE + 8, b.p + HVT_IV_FIXED_SIZE, b.len - HVT_IV_FIXED_SIZE);
	hvt_put_le32(bad + 56, iv.flags | HVT_IV_WNA_COUNTED);
	hvt_put_le64(bad + HVT_IV_FIXED_SIZE, 1);
	assert_int_equal(hvt_interval_decode(&out, l, bad, b.len + 8, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "a written page is not accessed"));
	assert_null(out.written);
	/* made consistent, it decodes, count and all */
	hvt_pageset_set(&iv.accessed[1], 5);
	b.len = 0;
	assert_int_equal(hvt_interval_encode(&iv, l, &b, &err), 0);
	assert_true(b.len + 8 <= 4096);
	memcpy(bad + HVT_IV_FIXED_SIZE + 8, b.p + HVT_IV_FIXED_SIZE, b.len - HVT_IV_FIXED_SIZE);
	assert_int_equal(hvt_interval_decode(&out, l, bad, b.len + 8, &err), 0);
	assert_int_equal(out.written_not_accessed, 1);
	assert_true(out.flags & HVT_IV_WNA_COUNTED);
	hvt_interval_fini(&out);
	/* a payload too short for the field */
	assert_int_equal(hvt_interval_decode(&out, l, bad, HVT_IV_FIXED_SIZE + 4, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "shorter than its fixed part of 80"));
	free(bad);

	/* the flag without accessed sets */
	hvt_interval_fini(&iv);
	free(b.p);
	expect_encode_refused(l, HVT_IV_WRITTEN | HVT_IV_WNA_COUNTED, "WNA_COUNTED without both");
}

/* The tracer's CPU time (flag 6) lies after written_not_accessed when both are there, and round-trips, as
 * the dirty ring's full exits (flag 9) after both; the busy and layout-refused flags are refused where they
 * make no sense. */
static void test_tracer_cost_fields(void **state)
{
	struct hvt_interval iv, out;
	struct hvt_buf b = {0};
	struct hvt_err err = {{0}};
	const struct hvt_layout *l = &layouts[0];

	(void)state;
	page5_written(&iv, l);
	assert_int_equal(hvt_interval_close_written_in_accessed(&iv), 0); /* flag 5 and its u64 */
	iv.flags |= HVT_IV_TRACER_CPU | HVT_IV_TRACER_BUSY;
	iv.tracer_cpu_ns = 0x1122334455667788ull;
	assert_int_equal(hvt_interval_encode(&iv, l, &b, &err), 0);
	assert_int_equal(hvt_get_le64(b.p + HVT_IV_FIXED_SIZE), 1);
	assert_int_equal(hvt_get_le64(b.p + HVT_IV_FIXED_SIZE + 8), 0x1122334455667788ull);
	assert_int_equal(hvt_interval_decode(&out, l, b.p, b.len, &err), 0);
	assert_int_equal(out.tracer_cpu_ns, 0x1122334455667788ull);
	assert_int_equal(out.written_not_accessed, 1);
	assert_int_equal(out.flags, iv.flags);
	hvt_interval_fini(&out);
	/* cut inside the new field */
	assert_int_equal(hvt_interval_decode(&out, l, b.p, HVT_IV_FIXED_SIZE + 12, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "shorter than its fixed part of 88"));

	/* the dirty ring's full exits (flag 9) follow the CPU time, and without it follow what is there */
	iv.flags |= HVT_IV_RING_FULL;
	iv.ring_full = 0x0a0b0c0d0e0f1011ull;
	b.len = 0;
	assert_int_equal(hvt_interval_encode(&iv, l, &b, &err), 0);
	assert_int_equal(hvt_get_le64(b.p + HVT_IV_FIXED_SIZE + 16), 0x0a0b0c0d0e0f1011ull);
	assert_int_equal(hvt_interval_decode(&out, l, b.p, b.len, &err), 0);
	assert_int_equal(out.ring_full, 0x0a0b0c0d0e0f1011ull);
	assert_int_equal(out.tracer_cpu_ns, 0x1122334455667788ull);
	assert_int_equal(out.flags, iv.flags);
	hvt_interval_fini(&out);
	assert_int_equal(hvt_interval_decode(&out, l, b.p, HVT_IV_FIXED_SIZE + 20, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "shorter than its fixed part of 96"));
	iv.flags &= ~(HVT_IV_TRACER_CPU | HVT_IV_TRACER_BUSY);
	b.len = 0;
	assert_int_equal(hvt_interval_encode(&iv, l, &b, &err), 0);
	assert_int_equal(hvt_get_le64(b.p + HVT_IV_FIXED_SIZE + 8), 0x0a0b0c0d0e0f1011ull);
	assert_int_equal(hvt_interval_decode(&out, l, b.p, b.len, &err), 0);
	assert_int_equal(out.ring_full, 0x0a0b0c0d0e0f1011ull);
	hvt_interval_fini(&out);
	iv.flags = (iv.flags & ~HVT_IV_RING_FULL) | HVT_IV_TRACER_CPU | HVT_IV_TRACER_BUSY;

	/* busy without the CPU time */
	iv.flags &= ~HVT_IV_TRACER_CPU;
	b.len = 0;
	assert_int_equal(hvt_interval_encode(&iv, l, &b, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "TRACER_BUSY without TRACER_CPU"));
	hvt_interval_fini(&iv);

	/* a refused layout ends the trace with an interval without sets; with sets, or not final, it is
	 * refused */
	assert_int_equal(hvt_interval_init(&iv, l, HVT_IV_LAYOUT_REFUSED | HVT_IV_FINAL), 0);
	iv.seq = 2;
	b.len = 0;
	assert_int_equal(hvt_interval_encode(&iv, l, &b, &err), 0);
	assert_int_equal(hvt_interval_decode(&out, l, b.p, b.len, &err), 0);
	assert_null(out.written);
	assert_true(out.flags & HVT_IV_LAYOUT_REFUSED);
	hvt_interval_fini(&out);
	hvt_put_le32(b.p + 56, HVT_IV_LAYOUT_REFUSED);
	assert_int_equal(hvt_interval_decode(&out, l, b.p, b.len, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "LAYOUT_REFUSED"));
	hvt_interval_fini(&iv);
	free(b.p);
	expect_encode_refused(l, HVT_IV_WRITTEN | HVT_IV_LAYOUT_REFUSED | HVT_IV_FINAL, "LAYOUT_REFUSED");
}

/* A trace written before the field existed (tests/fixtures/trace/README.md): it reads, its sets as they
 * were, and the count is not available, which JSON says with null. */
static void test_written_not_accessed_old_trace(void **state)
{
	struct hvt_trace_reader *r;
	struct hvt_trace_status st;
	struct hvt_err err = {{0}};
	struct hvt_interval iv;
	struct hvt_json_opts opts = {.page_ranges = true};

	(void)state;
	if (hvt_trace_open(&r, "tests/fixtures/trace/v1-ad-unchecked.hvt", &err))
		fail_msg("open: %s", err.msg);
	hvt_trace_get_status(r, &st);
	assert_true(st.complete);
	assert_int_equal(st.intervals, 2);
	assert_int_equal(hvt_trace_read_interval(r, 0, &iv, &err), 0);
	assert_int_equal(iv.flags, HVT_IV_WRITTEN | HVT_IV_ACCESSED);
	assert_int_equal(iv.written_not_accessed, 0);
	assert_int_equal(hvt_pageset_count(&iv.written[0]), 4);
	assert_true(hvt_pageset_test(&iv.written[0], 9));
	assert_false(hvt_pageset_test(&iv.accessed[0], 9)); /* kept as recorded */
	assert_int_equal(hvt_pageset_count(&iv.accessed[0]), 2);

	struct json_object *o = hvt_interval_to_json(&iv, hvt_trace_layout(r, 1), &opts), *v;
	assert_true(json_object_object_get_ex(o, "written_not_accessed", &v));
	assert_null(v);
	json_object_put(o);

	/* what the tracer now does to such an interval: pages 1, 9, 10 become accessed, and are counted */
	assert_int_equal(hvt_interval_close_written_in_accessed(&iv), 0);
	assert_int_equal(iv.written_not_accessed, 3);
	assert_int_equal(hvt_pageset_count(&iv.accessed[0]), 5);
	o = hvt_interval_to_json(&iv, hvt_trace_layout(r, 1), &opts);
	assert_true(json_object_object_get_ex(o, "written_not_accessed", &v));
	assert_int_equal(json_object_get_uint64(v), 3);
	assert_string_equal(
	    json_object_to_json_string_ext(json_object_object_get(o, "accessed"), JSON_C_TO_STRING_PLAIN),
	    "[[0,2],[8,3]]");
	json_object_put(o);
	hvt_interval_fini(&iv);

	assert_int_equal(hvt_trace_read_interval(r, 1, &iv, &err), 0);
	assert_int_equal(iv.flags, HVT_IV_WRITTEN | HVT_IV_ACCESSED | HVT_IV_FINAL);
	hvt_interval_fini(&iv);
	hvt_trace_reader_close(r);
}

/* Fields whose bytes are intact but whose values are not sane: each stops the reader with the field named. */
static void test_insane_fields(void **state)
{
	const struct hvt_layout *l = &layouts[0];
	struct hvt_trace_writer *w;
	struct hvt_trace_reader *r;
	struct hvt_trace_status st;
	struct hvt_trace_meta meta;
	struct hvt_interval iv, out;
	struct hvt_layout big;
	struct hvt_buf b = {0};
	struct hvt_err err = {{0}};

	(void)state;
	/* an interval that ends before it starts; more pages counted not accessed than written */
	assert_int_equal(hvt_interval_init(&iv, l, HVT_IV_WRITTEN | HVT_IV_ACCESSED), 0);
	iv.seq = 1;
	iv.t_start_ns = 100;
	iv.t_end_ns = 99;
	hvt_pageset_set(&iv.written[0], 3);
	assert_int_equal(hvt_interval_close_written_in_accessed(&iv), 0);
	assert_int_equal(hvt_interval_encode(&iv, l, &b, &err), 0);
	assert_int_equal(hvt_interval_decode(&out, l, b.p, b.len, &err), -EINVAL);
	assert_string_equal(err.msg, "field t_end_ns: 99 is before t_start_ns 100");
	iv.t_end_ns = 200;
	iv.written_not_accessed = 2;
	b.len = 0;
	assert_int_equal(hvt_interval_encode(&iv, l, &b, &err), 0);
	assert_int_equal(hvt_interval_decode(&out, l, b.p, b.len, &err), -EINVAL);
	assert_string_equal(err.msg, "field written_not_accessed: 2 is more than the 1 written pages");
	hvt_interval_fini(&iv);
	free(b.p);

	/* a channel META does not list; then a layout whose page size is not META's */
	make_meta(&meta);
	assert_int_equal(hvt_trace_create(&w, path2, &meta, &err), 0);
	hvt_trace_meta_fini(&meta);
	assert_int_equal(hvt_trace_write_layout(w, l, &err), 0);
	assert_int_equal(hvt_interval_init(&iv, l, HVT_IV_WRITTEN | HVT_IV_BANDWIDTH), 0);
	iv.seq = 1;
	iv.nchannels = 1;
	iv.channels = calloc(1, sizeof(*iv.channels));
	assert_non_null(iv.channels);
	iv.channels[0].channel = 7;
	assert_int_equal(hvt_trace_write_interval(w, &iv, &err), 0);
	assert_int_equal(hvt_layout_copy(&big, l), 0);
	big.generation = l->generation + 1;
	big.page_size = 8192;
	big.slots[1].size += PAGE; /* 333 pages of 4 KiB: a whole number of 8 KiB pages */
	assert_int_equal(hvt_trace_write_layout(w, &big, &err), 0);
	hvt_layout_fini(&big);
	hvt_interval_fini(&iv);
	assert_int_equal(hvt_trace_close(w, &err), 0);

	assert_int_equal(hvt_trace_open(&r, path2, &err), 0);
	hvt_trace_get_status(r, &st);
	assert_false(st.complete);
	assert_int_equal(st.intervals, 1);
	assert_non_null(strstr(st.problem, ": layout generation "));
	assert_non_null(strstr(st.problem, ": field page_size: 8192, but META's is 4096"));
	assert_int_equal(hvt_trace_read_interval(r, 0, &out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "interval 0, record at offset "));
	assert_non_null(strstr(err.msg, ": channel entry 0: field channel: 7, but META lists 3 channels"));
	assert_null(out.written);
	hvt_trace_reader_close(r);
	unlink(path2);
}

/* hvt_runs_range against a scan of every run, over random run lists and ranges (12 seeds). */
static void test_runs_range(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 12; seed++) {
		struct hvt_run v[64];
		struct hvt_runs r = {.v = v};
		uint64_t x = seed, at = hvt_splitmix64(&x) % 5;

		for (size_t i = 0; i < (seed * 5) % 64; i++) {
			v[i] = (struct hvt_run){at + 1 + hvt_splitmix64(&x) % 4, 1 + hvt_splitmix64(&x) % 4};
			at = v[i].first + v[i].count;
			r.n++;
		}
		for (int q = 0; q < 500; q++) {
			uint64_t first = hvt_splitmix64(&x) % (at + 3), end = first + hvt_splitmix64(&x) % 20;
			size_t b, e, wb = r.n, we = 0;

			for (size_t i = 0; i < r.n; i++)
				if (v[i].first < end && v[i].first + v[i].count > first) {
					wb = i < wb ? i : wb;
					we = i + 1;
				}
			hvt_runs_range(&r, first, end, &b, &e);
			if (we == 0) /* none inside: an empty range, anywhere */
				assert_int_equal(b, e);
			else if (b != wb || e != we)
				fail_msg("seed %llu [%llu, %llu): got [%zu, %zu), want [%zu, %zu)",
					 (unsigned long long)seed, (unsigned long long)first,
					 (unsigned long long)end, b, e, wb, we);
		}
	}
}

/* The payload of b with flag WNA_COUNTED and its field (count) added, in out, of b->len + 8 bytes. */
static void add_wna_field(uint8_t *out, const struct hvt_buf *b, uint64_t count)
{
	memcpy(out, b->p, HVT_IV_FIXED_SIZE);
	memcpy(out + HVT_IV_FIXED_SIZE + 8, b->p + HVT_IV_FIXED_SIZE, b->len - HVT_IV_FIXED_SIZE);
	hvt_put_le32(out + 56, hvt_get_le32(b->p + 56) | HVT_IV_WNA_COUNTED);
	hvt_put_le64(out + HVT_IV_FIXED_SIZE, count);
}

/*
 * A payload has one decoder, into runs (trace_decode.h); the bitmaps are those runs set slot by slot. With
 * the slots out of guest-physical order the runs are sorted, and each slot's bitmap still gets its own
 * pages. Both forms refuse a layout of another generation, and name the first slot in layout order whose
 * written page is not accessed.
 */
static void test_one_decoder(void **state)
{
	struct hvt_layout l;
	struct hvt_interval iv, out;
	struct hvt_iv_runs ir = {0};
	struct hvt_memslot lowest;
	struct hvt_run run;
	struct hvt_buf b = {0};
	struct hvt_err err = {{0}};
	uint8_t *bad;

	(void)state;
	assert_int_equal(hvt_layout_copy(&l, &layouts[1]), 0);
	lowest = l.slots[0]; /* slot indexes 0, 1, 2 now descend in guest-physical space */
	l.slots[0] = l.slots[2];
	l.slots[2] = lowest;
	assert_int_equal(hvt_layout_validate(&l, &err), 0);
	assert_int_equal(hvt_interval_init(&iv, &l, HVT_IV_WRITTEN | HVT_IV_ACCESSED), 0);
	iv.seq = 1;
	for (uint32_t i = 0; i < l.nslots; i++) {
		random_set(&iv.written[i]);
		random_set(&iv.accessed[i]);
		hvt_pageset_set(&iv.accessed[i], i + 1); /* every slot holds something */
	}
	assert_int_equal(hvt_interval_close_written_in_accessed(&iv), 0);
	assert_int_equal(hvt_interval_encode(&iv, &l, &b, &err), 0);
	assert_int_equal(hvt_interval_decode(&out, &l, b.p, b.len, &err), 0);
	for (uint32_t i = 0; i < l.nslots; i++) {
		assert_true(hvt_pageset_equal(&out.written[i], &iv.written[i]));
		assert_true(hvt_pageset_equal(&out.accessed[i], &iv.accessed[i]));
	}
	assert_int_equal(out.written_not_accessed, iv.written_not_accessed);
	hvt_interval_fini(&out);
	assert_int_equal(hvt_iv_runs_decode(&ir, &l, b.p, b.len, &err), 0);
	assert_int_equal(ir.set[1].pages, hvt_interval_count_pages(iv.accessed, l.nslots));
	assert_true(hvt_pageset_next_run(&iv.accessed[2], &(uint64_t){0}, &run));
	assert_int_equal(ir.set[1].v[0].first, run.first); /* slot 2 (at GFN 0), decoded last, comes first */
	for (size_t k = 1; k < ir.set[1].n; k++)
		assert_true(ir.set[1].v[k].first > ir.set[1].v[k - 1].first + ir.set[1].v[k - 1].count);

	/* the layout of another generation */
	l.generation++;
	assert_int_equal(hvt_iv_runs_decode(&ir, &l, b.p, b.len, &err), -EINVAL);
	assert_string_equal(err.msg, "interval has 3 slots of generation 5, the layout 3 of 6");
	assert_int_equal(ir.set[0].n + ir.set[1].n, 0);
	assert_int_equal(hvt_interval_decode(&out, &l, b.p, b.len, &err), -EINVAL);
	assert_string_equal(err.msg, "interval has 3 slots of generation 5, the layout 3 of 6");
	assert_null(out.written);
	l.generation--;

	/* written, not accessed, in slots 2 (sorted first) and 1: slot 1 is named */
	hvt_interval_fini(&iv);
	assert_int_equal(hvt_interval_init(&iv, &l, HVT_IV_WRITTEN | HVT_IV_ACCESSED), 0);
	hvt_pageset_set(&iv.written[1], 7);
	hvt_pageset_set(&iv.written[2], 3);
	b.len = 0;
	assert_int_equal(hvt_interval_encode(&iv, &l, &b, &err), 0);
	bad = malloc(b.len + 8);
	assert_non_null(bad);
	add_wna_field(bad, &b, 0);
	assert_int_equal(hvt_iv_runs_decode(&ir, &l, bad, b.len + 8, &err), -EINVAL);
	assert_string_equal(err.msg, "slot 1: flag WNA_COUNTED, but a written page is not accessed");
	assert_int_equal(hvt_interval_decode(&out, &l, bad, b.len + 8, &err), -EINVAL);
	assert_string_equal(err.msg, "slot 1: flag WNA_COUNTED, but a written page is not accessed");
	free(bad);
	hvt_iv_runs_fini(&ir);
	hvt_interval_fini(&iv);
	hvt_layout_fini(&l);
	free(b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crc32c),
	    cmocka_unit_test(test_interval_helpers),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_abandoned_writer),
	    cmocka_unit_test(test_truncations),
	    cmocka_unit_test(test_byte_flips),
	    cmocka_unit_test(test_index_damage),
	    cmocka_unit_test(test_semantic_stops),
	    cmocka_unit_test(test_not_a_trace),
	    cmocka_unit_test(test_read_rechecks_crc),
	    cmocka_unit_test(test_writer_refuses),
	    cmocka_unit_test(test_write_failure),
	    cmocka_unit_test(test_written_in_accessed),
	    cmocka_unit_test(test_written_not_accessed_on_disk),
	    cmocka_unit_test(test_written_not_accessed_refused),
	    cmocka_unit_test(test_written_not_accessed_old_trace),
	    cmocka_unit_test(test_insane_fields),
	    cmocka_unit_test(test_tracer_cost_fields),
	    cmocka_unit_test(test_runs_range),
	    cmocka_unit_test(test_one_decoder),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
