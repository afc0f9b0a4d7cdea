// SPDX-License-Identifier: MIT
/*
 * record's memory budget (hvmtrace/record/mem_budget.c) against what the trace writer and the JSON Lines
 * writer really allocate for the worst written patterns, every other page (one varint byte per page, which
 * the writer encodes with roaring) and random short runs (zstd-runs, just under the switch): the INTERVAL
 * record must fit the budget's record term, a JSON Lines line must need no memory that follows its runs,
 * and a TiB guest's budget must stay within issue 25's 0.5 GiB in both modes. The peak of live heap bytes is
 * taken from the sanitizer's allocator hooks; without the sanitizer those tests are skipped.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "../../hvmtrace/record/mem_budget.h"
#include "hvmtrace/error.h"
#include "hvmtrace/interval_json.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/pageset.h"
#include "hvmtrace/sanitizer.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/trace_meta.h"
#include "hvmtrace/util.h"

#define TEST_TMPDIR_NAME "mem-budget"
#include "test_tmpdir.h"

#ifdef HVT_ASAN
/* The sanitizer runtime's allocator interface (GCC ships no header for it). */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
					      void (*free_hook)(const volatile void *));
size_t __sanitizer_get_allocated_size(const volatile void *p);
#endif

#define PAGE 4096ull
#define GiB  (1ull << 30)

/* ---- the peak of live heap bytes, between heap_watch() and heap_peak() ---- */

static volatile bool watching;
static volatile int64_t live, peak;

#ifdef HVT_ASAN
static void on_malloc(const volatile void *p, size_t n)
{
	(void)p;
	if (watching && (live += (int64_t)n) > peak)
		peak = live;
}

static void on_free(const volatile void *p)
{
	if (watching && p)
		live -= (int64_t)__sanitizer_get_allocated_size(p);
}
#endif

static void heap_watch(void)
{
#ifdef HVT_ASAN
	static bool installed;

	if (!installed)
		__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
	installed = true;
	live = peak = 0;
	watching = true;
#else
	skip(); /* glibc's allocator has no hooks left: the sanitizer build measures */
#endif
}

static uint64_t heap_peak(void)
{
	watching = false;
	return (uint64_t)peak;
}

/*
 * ---- fixture: a layout of two slots, neither a multiple of 64 pages, 8 GiB in all. Every other page would
 * be a varint byte a page with zstd-runs: the writer takes roaring, a bitmap's size; random short runs (two
 * varint bytes every 18 pages or so) stay zstd-runs, compressed in one call. ----
 */

static void make_layout(struct hvt_layout *l)
{
	static const uint64_t pages[] = {786432 + 5, 1310720 + 12};
	static const uint64_t gpas[] = {0, 4 * GiB};

	memset(l, 0, sizeof(*l));
	l->generation = 1;
	l->page_size = PAGE;
	l->nslots = 2;
	l->slots = calloc(l->nslots, sizeof(*l->slots));
	assert_non_null(l->slots);
	for (uint32_t i = 0; i < l->nslots; i++) {
		l->slots[i].slot = i;
		l->slots[i].gpa = gpas[i];
		l->slots[i].size = pages[i] * PAGE;
		strcpy(l->slots[i].backing, "anon");
	}
}

static uint64_t layout_pages(const struct hvt_layout *l)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < l->nslots; i++)
		n += hvt_memslot_npages(l, &l->slots[i]);
	return n;
}

/* Every other page: the longest varint stream there is (docs/performance.md, "Memory"). */
static void every_other_page(struct hvt_pageset *s, uint64_t phase)
{
	for (uint64_t p = phase; p < s->npages; p += 2)
		hvt_pageset_set(s, p);
}

/* Runs and gaps of 1 to 16 pages at random: a stream zstd can hardly shrink. */
static void random_short_runs(struct hvt_pageset *s, uint64_t seed)
{
	uint64_t p = hvt_splitmix64(&seed) % 16;

	while (p < s->npages) {
		uint64_t len = 1 + hvt_splitmix64(&seed) % 16;

		hvt_pageset_set_range(s, p, len < s->npages - p ? len : s->npages - p);
		p += len + 1 + hvt_splitmix64(&seed) % 16;
	}
}

static void make_interval(struct hvt_interval *iv, const struct hvt_layout *l, uint32_t flags, uint64_t seq,
			  bool random)
{
	assert_int_equal(hvt_interval_init(iv, l, flags), 0);
	iv->seq = seq;
	iv->t_start_ns = seq * 1000000000ull;
	iv->t_end_ns = iv->t_start_ns + 1000000000ull;
	for (uint32_t i = 0; i < l->nslots; i++) {
		if (random)
			random_short_runs(&iv->written[i], seq * 7 + i);
		else
			every_other_page(&iv->written[i], i);
		if (flags & HVT_IV_ACCESSED)
			every_other_page(&iv->accessed[i], 1 - i % 2);
	}
}

static void make_meta(struct hvt_trace_meta *m, const char *mode)
{
	char text[1024];
	struct json_object *o;
	struct hvt_err err = {{0}};

	snprintf(
	    text, sizeof(text),
	    "{\"tool\": \"test_mem_budget\", \"created\": \"\", \"host\": {\"hostname\": \"h\"}, \"vm\": {\"name\": \"\", \"uuid\": \"\", \"pid\": 1, \"vmm\": \"\", \"accel\": \"kvm\"}, \"tracer\": {\"version\": \"\", \"cpu\": 0, \"harvest_cpu\": -1, \"command\": []}, \"mode\": \"%s\", \"interval_ns\": 1000000000, \"page_size\": 4096, \"written_available\": true, \"accessed_available\": %s, \"bandwidth_available\": false, \"channels\": [], \"t_armed_ns\": 0}",
	    mode, strcmp(mode, "ad") ? "false" : "true");
	o = json_tokener_parse(text);
	assert_non_null(o);
	if (hvt_trace_meta_from_json(m, o, &err))
		fail_msg("test metadata: %s", err.msg);
	json_object_put(o);
}

static bool same_sets(const struct hvt_pageset *a, const struct hvt_pageset *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (!hvt_pageset_is_subset(&a[i], &b[i]) || !hvt_pageset_is_subset(&b[i], &a[i]))
			return false;
	return true;
}

/*
 * Writes an interval of each worst pattern through the trace writer, as record does, and holds the peak of
 * what each write allocated to the budget's record term; then reads them back.
 */
static void record_fits(const char *mode, uint32_t flags)
{
	struct mem_budget_terms t;
	struct hvt_trace_writer *w;
	struct hvt_trace_reader *r;
	struct hvt_trace_meta meta;
	struct hvt_interval iv[3], back;
	struct hvt_layout l;
	struct hvt_err err = {{0}};
	char p[128];

	make_layout(&l);
	mem_budget_terms(&(struct mem_budget_in){.max_guest_bytes = layout_pages(&l) * PAGE,
						 .page_size = PAGE,
						 .max_slots = l.nslots,
						 .nsets = (flags & HVT_IV_ACCESSED) ? 2 : 1,
						 .max_intervals = 3},
			 &t);
	snprintf(p, sizeof(p), "%s/%s.hvt", dir, mode);
	make_meta(&meta, mode);
	assert_int_equal(hvt_trace_create(&w, p, &meta, &err), 0);
	hvt_trace_meta_fini(&meta);
	assert_int_equal(hvt_trace_write_layout(w, &l, &err), 0);
	for (int k = 0; k < 3; k++) {
		make_interval(&iv[k], &l, flags, k + 1, k != 1);
		/* the first write, random short runs (zstd-runs), makes zstd's contexts (the budget's fixed
		 * part): watch the later ones */
		if (k)
			heap_watch();
		if (hvt_trace_write_interval(w, &iv[k], &err))
			fail_msg("%s interval %d: %s", mode, k + 1, err.msg);
		if (k) {
			uint64_t used = heap_peak();

			print_message(
			    "%s, %s: the record took %llu bytes at most, the budget's term is %llu\n", mode,
			    k == 1 ? "every other page" : "random short runs", (unsigned long long)used,
			    (unsigned long long)t.record);
			if (used > t.record)
				fail_msg(
				    "%s interval %d: writing it took %llu bytes, more than the %llu the budget "
				    "counts for the record",
				    mode, k + 1, (unsigned long long)used, (unsigned long long)t.record);
		}
	}
	assert_int_equal(hvt_trace_close(w, &err), 0);

	assert_int_equal(hvt_trace_open(&r, p, &err), 0);
	for (int k = 0; k < 3; k++) {
		if (hvt_trace_read_interval(r, k, &back, &err))
			fail_msg("%s interval %d: %s", mode, k + 1, err.msg);
		assert_true(same_sets(back.written, iv[k].written, l.nslots));
		if (flags & HVT_IV_ACCESSED)
			assert_true(same_sets(back.accessed, iv[k].accessed, l.nslots));
		hvt_interval_fini(&back);
		hvt_interval_fini(&iv[k]);
	}
	hvt_trace_reader_close(r);
	hvt_layout_fini(&l);
}

static void test_record_dirty_log(void **state)
{
	(void)state;
	record_fits("dirty-log", HVT_IV_WRITTEN);
}

static void test_record_ad(void **state)
{
	(void)state;
	record_fits("ad", HVT_IV_WRITTEN | HVT_IV_ACCESSED);
}

/* record --jsonl streams each line: its memory must not follow the number of runs (a million here). */
static void test_jsonl_line(void **state)
{
	struct hvt_json_opts opts = {.page_ranges = true};
	struct hvt_interval iv;
	struct hvt_layout l;
	char p[128];
	FILE *f;
	uint64_t used;

	(void)state;
	make_layout(&l);
	make_interval(&iv, &l, HVT_IV_WRITTEN, 1, false);
	snprintf(p, sizeof(p), "%s/line.jsonl", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(hvt_jsonl_write(f, &iv, &l, &opts), 0); /* stdio's buffer is made here */
	heap_watch();
	assert_int_equal(hvt_jsonl_write(f, &iv, &l, &opts), 0);
	used = heap_peak();
	fclose(f);
	print_message("a JSON Lines line of %llu runs took %llu bytes\n",
		      (unsigned long long)hvt_interval_count_pages(iv.written, l.nslots),
		      (unsigned long long)used);
	if (used > 64 * 1024)
		fail_msg("a JSON Lines line of every other page took %llu bytes", (unsigned long long)used);
	hvt_interval_fini(&iv);
	hvt_layout_fini(&l);
}

/*
 * Issue 25's goal: the test VMM's TiB guest (1027 GiB, in mode dirty-log and in mode ad), as record sizes it
 * (its RAM and a quarter, every slot a layout may have, an hour of 1 s intervals), within 0.5 GiB.
 */
static void test_tib_goal(void **state)
{
	struct mem_budget_in in = {.max_guest_bytes = 1027 * GiB + 1027 * GiB / 4,
				   .page_size = PAGE,
				   .max_slots = HVT_LAYOUT_MAX_SLOTS,
				   .nsets = 1,
				   .max_intervals = 3600};
	uint64_t dirty_log = mem_budget_working(&in), ad;

	(void)state;
	in.nsets = 2;
	in.retry_copy = true;
	ad = mem_budget_working(&in);
	print_message("a TiB guest's budget: %.3f GiB in mode dirty-log, %.3f GiB in mode ad\n",
		      (double)dirty_log / GiB, (double)ad / GiB);
	assert_true(dirty_log <= GiB / 2);
	assert_true(ad <= GiB / 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_record_dirty_log),
	    cmocka_unit_test(test_record_ad),
	    cmocka_unit_test(test_jsonl_line),
	    cmocka_unit_test(test_tib_goal),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
