// SPDX-License-Identifier: MIT
/*
 * Unit tests for OWNERS records and optional record types in the trace file (docs/formats.md): written and
 * read back with their times, the interval they follow and their bytes; an unknown optional type read past;
 * CRC damage and a torn record at the end keeping everything before them; frames the reader refuses. The
 * records are located by a parser written here from docs/formats.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "hvmtrace/error.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/owners_format.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/util.h"
#include "../../lib/format/trace_format.h"
#include "test_records.h"

#define NIV   6
#define NSNAP 4
#define PAGE  4096ull

static char dir[64], path[128], path2[128];
static struct hvt_layout layout;
static uint8_t *snaps[NSNAP];
static size_t snap_len[NSNAP];

/* A snapshot's frame: the header (magic, body_bytes) and body bytes the trace does not look into. */
static void make_snapshot(int k)
{
	size_t body = 20 + 1000 * (size_t)k + (size_t)k; /* odd lengths: the record pads */

	snap_len[k] = HVT_OWN_HEADER_BYTES + body;
	snaps[k] = malloc(snap_len[k]);
	assert_non_null(snaps[k]);
	for (size_t i = 0; i < snap_len[k]; i++)
		snaps[k][i] = (uint8_t)(i * 7 + (size_t)k);
	memcpy(snaps[k], HVT_OWN_MAGIC, 8);
	hvt_put_le64(snaps[k] + 32, body);
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/hvt-test-owners-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/t.hvt", dir);
	snprintf(path2, sizeof(path2), "%s/cut.hvt", dir);
	layout = (struct hvt_layout){.generation = 1, .page_size = PAGE, .nslots = 1};
	layout.slots = calloc(1, sizeof(*layout.slots));
	if (!layout.slots)
		return -1;
	layout.slots[0] = (struct hvt_memslot){.slot = 0, .gpa = 0, .size = 256 * PAGE, .backing = "anon"};
	for (int k = 0; k < NSNAP; k++)
		make_snapshot(k);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hvt_layout_fini(&layout);
	for (int k = 0; k < NSNAP; k++)
		free(snaps[k]);
	unlink(path);
	unlink(path2);
	rmdir(dir);
	return 0;
}

static void make_meta(struct hvt_trace_meta *m)
{
	static const char text[] =
	    "{\"tool\": \"t\", \"created\": \"\", \"host\": {\"hostname\": \"h\"}, \"vm\": {\"name\": \"\", \"uuid\": \"\", \"pid\": 1, \"vmm\": \"\", \"accel\": \"kvm\"}, \"tracer\": {\"version\": \"\", \"cpu\": 0, \"harvest_cpu\": -1, \"command\": []}, \"mode\": \"dirty-log\", \"interval_ns\": 1000000000, \"page_size\": 4096, \"written_available\": true, \"accessed_available\": false, \"bandwidth_available\": false, \"channels\": [], \"t_armed_ns\": 0}";
	struct json_object *o = json_tokener_parse(text);
	struct hvt_err err = {{0}};

	assert_non_null(o);
	if (hvt_trace_meta_from_json(m, o, &err))
		fail_msg("test metadata: %s", err.msg);
	json_object_put(o);
}

/* at_ns of snapshot k, and the seq of interval i */
static uint64_t snap_at(int k)
{
	return 5000000000ull + (uint64_t)k * 1000;
}

static uint64_t iv_seq(int i)
{
	return (uint64_t)i * 2 + 1;
}

/* Which snapshots come before interval i: 0 before any interval, then one after intervals 1, 3 and 5. */
static int snap_before(int i)
{
	return i == 0 ? 0 : i == 2 ? 1 : i == 4 ? 2 : -1;
}

/* The trace: snapshot 0 before the first interval, the others between intervals, the last after them. */
static void write_trace(const char *p, bool close_it)
{
	struct hvt_trace_writer *w;
	struct hvt_err err = {{0}};
	struct hvt_trace_meta meta;

	make_meta(&meta);
	if (hvt_trace_create(&w, p, &meta, &err))
		fail_msg("create: %s", err.msg);
	hvt_trace_meta_fini(&meta);
	if (hvt_trace_write_layout(w, &layout, &err))
		fail_msg("layout: %s", err.msg);
	for (int i = 0; i < NIV; i++) {
		struct hvt_interval iv;
		int k = snap_before(i);

		if (k >= 0 && hvt_trace_write_owners(w, snap_at(k), snaps[k], snap_len[k], &err))
			fail_msg("owners %d: %s", k, err.msg);
		assert_int_equal(hvt_interval_init(&iv, &layout, HVT_IV_WRITTEN), 0);
		iv.seq = iv_seq(i);
		iv.t_start_ns = (uint64_t)i * 1000000000ull;
		iv.t_end_ns = iv.t_start_ns + 999;
		hvt_pageset_set(&iv.written[0], (uint64_t)i);
		if (hvt_trace_write_interval(w, &iv, &err))
			fail_msg("interval %d: %s", i, err.msg);
		hvt_interval_fini(&iv);
	}
	if (hvt_trace_write_owners(w, snap_at(3), snaps[3], snap_len[3], &err))
		fail_msg("owners 3: %s", err.msg);
	if (!close_it)
		hvt_trace_abandon(w);
	else if (hvt_trace_close(w, &err))
		fail_msg("close: %s", err.msg);
}

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

/* Offset of the n-th record of `type` (docs/formats.md: 16-byte header, records padded to 8), or 0. */
static size_t find_record(const uint8_t *buf, size_t len, uint32_t type, int n)
{
	for (size_t off = 16; off + 16 <= len;) {
		uint32_t t = hvt_get_le32(buf + off), plen = hvt_get_le32(buf + off + 4);

		if (t == type && n-- == 0)
			return off;
		off += 16 + ((plen + 7u) & ~7u);
	}
	return 0;
}

static size_t record_end(const uint8_t *buf, size_t off)
{
	return off + 16 + ((hvt_get_le32(buf + off + 4) + 7u) & ~7u);
}

/* Opens p: `intervals` intervals and `owners` owners records, the first ones of the fixture, each as
 * written; returns the status. */
static struct hvt_trace_status open_expect(const char *p, uint64_t intervals, uint64_t owners)
{
	static const uint64_t after[NSNAP] = {HVT_OWNERS_NONE_BEFORE, 3, 7, 11};
	struct hvt_trace_reader *r;
	struct hvt_trace_status st;
	struct hvt_err err = {{0}};

	if (hvt_trace_open(&r, p, &err))
		fail_msg("open: %s", err.msg);
	hvt_trace_get_status(r, &st);
	if (st.intervals != intervals || hvt_trace_owners_count(r) != owners)
		fail_msg("%llu intervals and %llu owners records, want %llu and %llu (%s)",
			 (unsigned long long)st.intervals, (unsigned long long)hvt_trace_owners_count(r),
			 (unsigned long long)intervals, (unsigned long long)owners, st.problem);
	for (uint64_t i = 0; i < intervals; i++) {
		struct hvt_interval iv;

		if (hvt_trace_read_interval(r, i, &iv, &err))
			fail_msg("interval %llu: %s", (unsigned long long)i, err.msg);
		assert_int_equal(iv.seq, iv_seq((int)i));
		assert_int_equal(hvt_pageset_count(&iv.written[0]), 1);
		hvt_interval_fini(&iv);
	}
	for (uint64_t k = 0; k < owners; k++) {
		const struct hvt_owners_info *o = hvt_trace_owners_at(r, k);
		uint8_t *data;

		assert_non_null(o);
		assert_int_equal(o->at_ns, snap_at((int)k));
		assert_int_equal(o->after_seq, after[k]);
		assert_int_equal(o->bytes, snap_len[k]);
		if (hvt_trace_read_owners(r, k, &data, &err))
			fail_msg("owners %llu: %s", (unsigned long long)k, err.msg);
		assert_memory_equal(data, snaps[k], snap_len[k]);
		free(data);
	}
	assert_null(hvt_trace_owners_at(r, owners));
	assert_int_equal(hvt_trace_read_owners(r, owners, &(uint8_t *){NULL}, &err), -EINVAL);
	hvt_trace_reader_close(r);
	return st;
}

static void test_round_trip(void **state)
{
	struct hvt_trace_status st;

	(void)state;
	write_trace(path, true);
	st = open_expect(path, NIV, NSNAP);
	assert_true(st.complete);
	write_trace(path, false); /* a killed writer: found by the walk all the same */
	st = open_expect(path, NIV, NSNAP);
	assert_false(st.complete);
}

/* An unknown optional type is read past, even between intervals; an unknown required one, or an optional
 * one with a bad CRC, ends the walk. */
static void test_optional_skipped(void **state)
{
	size_t len, cut, last_iv, iv_end;
	uint8_t *buf, *iv;
	struct hvt_trace_status st;
	uint32_t plen;

	(void)state;
	write_trace(path, false);
	buf = slurp(path, &len);
	last_iv = find_record(buf, len, HVT_REC_INTERVAL, NIV - 1);
	iv_end = record_end(buf, last_iv);
	cut = last_iv; /* without the last interval and snapshot: they are appended after the unknown one */
	plen = hvt_get_le32(buf + last_iv + 4);
	iv = malloc(plen);
	assert_non_null(iv);
	memcpy(iv, buf + last_iv + 16, plen);
	assert_true(iv_end < len);

	for (uint32_t type = 0x8000; type <= 0xffffffffu - 1; type = type * 2 + 0x8000) {
		spit(path2, buf, cut);
		append_record(path2, type, (const uint8_t *)"hello, reader", 13);
		append_record(path2, HVT_REC_INTERVAL, iv, plen);
		open_expect(path2, NIV, NSNAP - 1);
		if (type > 0x7fffffffu)
			break;
	}
	/* a required type: the walk stops there */
	spit(path2, buf, cut);
	append_record(path2, 0x7fff, (const uint8_t *)"x", 1);
	append_record(path2, HVT_REC_INTERVAL, iv, plen);
	st = open_expect(path2, NIV - 1, NSNAP - 1);
	assert_non_null(strstr(st.problem, "unknown record type 32767"));
	/* an optional one with a bad CRC: so does it */
	spit(path2, buf, cut);
	append_record(path2, 0x9000, (const uint8_t *)"hello, reader", 13);
	{
		uint8_t *b2;
		size_t l2;

		b2 = slurp(path2, &l2);
		b2[cut + 16] ^= 1;
		spit(path2, b2, l2);
		free(b2);
	}
	append_record(path2, HVT_REC_INTERVAL, iv, plen);
	st = open_expect(path2, NIV - 1, NSNAP - 1);
	assert_non_null(strstr(st.problem, "CRC"));
	free(iv);
	free(buf);
}

/* A flipped bit in an OWNERS record, or the file cut inside one: everything before it is kept. */
static void test_owners_damage(void **state)
{
	size_t len, off;
	uint8_t *buf;
	struct hvt_trace_status st;

	(void)state;
	write_trace(path, false);
	buf = slurp(path, &len);
	for (int k = 0; k < NSNAP; k++) {
		uint64_t ivs_before = k == 0 ? 0 : k == 1 ? 2 : k == 2 ? 4 : NIV;
		size_t end;

		off = find_record(buf, len, HVT_REC_OWNERS, k);
		assert_true(off > 0);
		end = record_end(buf, off);
		/* every byte of the header, the fixed fields and the snapshot's header; some of its body */
		for (size_t at = off; at < end; at += at < off + 16 + 16 + 40 ? 1 : 97) {
			buf[at] ^= 0x10;
			spit(path2, buf, len);
			buf[at] ^= 0x10;
			st = open_expect(path2, ivs_before, (uint64_t)k);
			assert_false(st.complete);
			assert_int_equal(st.valid_bytes, off);
		}
		if (k == NSNAP - 1) { /* the last record of an abandoned trace: torn at every length */
			for (size_t cut = off + 1; cut < end; cut += cut < off + 80 ? 1 : 113) {
				spit(path2, buf, cut);
				st = open_expect(path2, NIV, NSNAP - 1);
				assert_non_null(strstr(st.problem, "past end of file"));
				assert_int_equal(st.valid_bytes, off);
			}
		}
	}
	free(buf);
}

/* Frames an OWNERS record must have, with the CRC right: a snapshot's magic, a body_bytes that fills the
 * payload, the interval it follows. */
static void test_owners_frame_refused(void **state)
{
	size_t len, off;
	uint8_t *buf, *payload;
	uint32_t plen;
	struct hvt_trace_status st;
	const struct {
		size_t at;
		uint8_t value;
		const char *why;
	} breaks[] = {
	    {16, 'X', "no HVTOWNRS"},     /* magic */
	    {16 + 32, 0, "body_bytes"},   /* body_bytes low byte */
	    {16 + 39, 1, "body_bytes"},   /* body_bytes huge */
	    {8, 2, "follows interval 2"}, /* after_seq */
	};

	(void)state;
	write_trace(path, false);
	buf = slurp(path, &len);
	off = find_record(buf, len, HVT_REC_OWNERS, NSNAP - 1);
	plen = hvt_get_le32(buf + off + 4);
	payload = malloc(plen);
	assert_non_null(payload);
	for (size_t b = 0; b < sizeof(breaks) / sizeof(breaks[0]); b++) {
		memcpy(payload, buf + off + 16, plen);
		payload[breaks[b].at] = breaks[b].value;
		spit(path2, buf, off);
		append_record(path2, HVT_REC_OWNERS, payload, plen);
		st = open_expect(path2, NIV, NSNAP - 1);
		if (!strstr(st.problem, breaks[b].why))
			fail_msg("break %zu: %s", b, st.problem);
	}
	/* too short for a snapshot's header */
	spit(path2, buf, off);
	append_record(path2, HVT_REC_OWNERS, payload, HVT_OWNERS_FIXED_SIZE + HVT_OWN_HEADER_BYTES - 1);
	st = open_expect(path2, NIV, NSNAP - 1);
	assert_non_null(strstr(st.problem, "too short"));
	free(payload);
	free(buf);
}

/* The writer takes only a snapshot's frame. */
static void test_writer_refuses(void **state)
{
	struct hvt_trace_writer *w;
	struct hvt_err err = {{0}};
	struct hvt_trace_meta meta;

	(void)state;
	make_meta(&meta);
	assert_int_equal(hvt_trace_create(&w, path, &meta, &err), 0);
	hvt_trace_meta_fini(&meta);
	assert_int_equal(hvt_trace_write_owners(w, 1, snaps[1], snap_len[1] - 1, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not one snapshot"));
	assert_int_equal(hvt_trace_write_owners(w, 1, "HVTOWNRS", 8, &err), -EINVAL);
	assert_int_equal(hvt_trace_write_owners(w, 1, snaps[1], snap_len[1], &err), 0);
	assert_int_equal(hvt_trace_close(w, &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_optional_skipped),
	    cmocka_unit_test(test_owners_damage),  cmocka_unit_test(test_owners_frame_refused),
	    cmocka_unit_test(test_writer_refuses),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
