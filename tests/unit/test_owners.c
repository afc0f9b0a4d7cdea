// SPDX-License-Identifier: MIT
/*
 * Unit tests for the owners snapshot reader (hvmtrace/attribute/owners_snapshot.c): a snapshot built here
 * byte by byte reads back as built; then each lie a guest could tell (a count past the bytes, a billion
 * owners, runs that overlap or pass PFN 2^40, a varint without end, two kinds on one page, a pid twice,
 * a name with a control byte, bytes left over) is refused, naming the input and the owner or field, and
 * leaves nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../hvmtrace/attribute/owners_snapshot.h"

struct bytes {
	uint8_t b[4096];
	size_t n;
};

static void le(struct bytes *x, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		x->b[x->n++] = (uint8_t)(v >> (8 * i));
}

static void header(struct bytes *x, uint32_t nowners)
{
	x->n = 0;
	memcpy(x->b, HVT_OWN_MAGIC, 8);
	x->n = 8;
	le(x, 1, 2);
	le(x, 0, 2);
	le(x, 4096, 4);
	le(x, nowners, 4);
	le(x, 0, 4);
	le(x, 123, 8);
	le(x, 0, 8); /* body_bytes, by finish */
}

/* runs: pairs of raw varint bytes already encoded (each < 128) */
static void owner(struct bytes *x, int type, int kind, uint32_t pid, const char *name, const uint8_t *runs,
		  size_t nruns, size_t runs_bytes)
{
	le(x, (uint64_t)type, 1);
	le(x, (uint64_t)kind, 1);
	le(x, 0, 2);
	le(x, pid, 4);
	le(x, strlen(name), 2);
	le(x, 0, 2);
	le(x, nruns, 4);
	le(x, runs_bytes, 4);
	memcpy(x->b + x->n, name, strlen(name));
	x->n += strlen(name);
	memcpy(x->b + x->n, runs, runs_bytes);
	x->n += runs_bytes;
}

static void finish(struct bytes *x)
{
	uint64_t body = x->n - HVT_OWN_HEADER_BYTES;

	for (int i = 0; i < 8; i++)
		x->b[32 + i] = (uint8_t)(body >> (8 * i));
}

/* kind anon: PFNs 10-13, 20; process 7 "a": PFNs 11-12; process 8 "b": 12 */
static void valid(struct bytes *x)
{
	static const uint8_t anon[] = {10, 3, 6, 0}, a[] = {11, 1}, b[] = {12, 0};

	header(x, 3);
	owner(x, HVT_OWN_KIND, HVT_KIND_ANON, 0, "anon", anon, 2, sizeof(anon));
	owner(x, HVT_OWN_PROCESS, 0, 7, "a", a, 1, sizeof(a));
	owner(x, HVT_OWN_PROCESS, 0, 8, "b", b, 1, sizeof(b));
	finish(x);
}

static void test_valid(void **state)
{
	struct bytes x;
	struct owners_snapshot s;
	struct hvt_err err = {{0}};
	size_t used;

	(void)state;
	valid(&x);
	assert_int_equal(owners_parse("snap", x.b, x.n, &used, &s, &err), 0);
	assert_int_equal(used, x.n);
	assert_int_equal(s.nowners, 3);
	assert_int_equal(s.nprocesses, 2);
	assert_int_equal(s.page_size, 4096);
	assert_int_equal(s.time_ns, 123);
	assert_int_equal(s.owners[0].pages, 5);
	assert_int_equal(s.runs[0].first, 10);
	assert_int_equal(s.runs[0].count, 4);
	assert_int_equal(s.runs[1].first, 20);
	assert_int_equal(s.runs[1].count, 1);
	assert_string_equal(s.owners[1].name, "a");
	assert_int_equal(s.owners[1].pid, 7);
	assert_int_equal(s.runs[s.owners[1].first_run].first, 11);
	assert_int_equal(s.runs[s.owners[1].first_run].count, 2);
	owners_free(&s);
}

/* x refused with a message holding want, and nothing left */
static void refused(const struct bytes *x, const char *want)
{
	struct owners_snapshot s;
	struct hvt_err err = {{0}};
	size_t used = 0;

	assert_int_not_equal(owners_parse("snap", x->b, x->n, &used, &s, &err), 0);
	if (!strstr(err.msg, want) || strncmp(err.msg, "snap: ", 6))
		fail_msg("'%s' does not say '%s'", err.msg, want);
	assert_null(s.owners);
	assert_null(s.runs);
	assert_int_equal(s.nowners, 0);
}

static void test_lies(void **state)
{
	static const uint8_t overlap[] = {10, 3, 0, 0}, endless[] = {0x80, 0x80, 0x80, 0x80};
	static const uint8_t far[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0x1f, 0x01}; /* 2^40 - 1, count 2 */
	static const uint8_t k1[] = {10, 3}, k2[] = {12, 0}, one[] = {1, 0};
	struct bytes x;

	(void)state;
	valid(&x);
	x.n = 39;
	refused(&x, "not an owners snapshot");
	valid(&x);
	x.b[8] = 2;
	refused(&x, "version 2 (this reader knows 1)");
	valid(&x);
	x.b[12] = 0, x.b[13] = 0x30; /* page size 12288 */
	refused(&x, "page size 12288");
	valid(&x);
	x.b[16] = 0, x.b[18] = 0x9a, x.b[19] = 0x3b; /* ~10^9 owners */
	refused(&x, "owners in");
	valid(&x);
	x.b[32] += 1; /* body longer than the bytes */
	refused(&x, "a body of");
	valid(&x);
	x.b[HVT_OWN_HEADER_BYTES] = 3;
	refused(&x, "owner 0: type 3");
	valid(&x);
	x.b[HVT_OWN_HEADER_BYTES + 12] = 0xff, x.b[HVT_OWN_HEADER_BYTES + 13] = 0xff; /* nruns 65535 */
	refused(&x, "owner 0: 65535 runs in 4 bytes");

	header(&x, 1);
	owner(&x, HVT_OWN_PROCESS, 0, 1, "p", overlap, 2, sizeof(overlap));
	finish(&x);
	refused(&x, "owner 0: run 1 touches the one before");
	header(&x, 1);
	owner(&x, HVT_OWN_PROCESS, 0, 1, "p", endless, 2, sizeof(endless));
	finish(&x);
	refused(&x, "owner 0: run 0 is cut short or not a varint");
	header(&x, 1);
	owner(&x, HVT_OWN_PROCESS, 0, 1, "p", far, 1, sizeof(far));
	finish(&x);
	refused(&x, "owner 0: run 0 ends past PFN 2^40");
	header(&x, 1);
	owner(&x, HVT_OWN_PROCESS, 0, 1, "p\n", one, 1, sizeof(one));
	finish(&x);
	refused(&x, "owner 0: a byte of its name or cgroup is not printable");
	header(&x, 2);
	owner(&x, HVT_OWN_KIND, HVT_KIND_ANON, 0, "", k1, 1, sizeof(k1));
	owner(&x, HVT_OWN_KIND, HVT_KIND_CACHE, 0, "", k2, 1, sizeof(k2));
	finish(&x);
	refused(&x, "two kinds claim PFN 0xc");
	header(&x, 2);
	owner(&x, HVT_OWN_KIND, HVT_KIND_ANON, 0, "", k1, 1, sizeof(k1));
	owner(&x, HVT_OWN_KIND, HVT_KIND_ANON, 0, "", k2, 1, sizeof(k2));
	finish(&x);
	refused(&x, "owner 1: kind anon a second time");
	header(&x, 2);
	owner(&x, HVT_OWN_PROCESS, 0, 5, "p", one, 1, sizeof(one));
	owner(&x, HVT_OWN_PROCESS, 0, 5, "q", one, 1, sizeof(one));
	finish(&x);
	refused(&x, "pid 5 is two owners");
	header(&x, 1);
	owner(&x, HVT_OWN_PROCESS, 0, 5, "p", one, 1, sizeof(one));
	x.n++;
	finish(&x);
	refused(&x, "1 bytes after its 1 owners");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid),
	    cmocka_unit_test(test_lies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
