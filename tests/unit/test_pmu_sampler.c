// SPDX-License-Identifier: MIT
/*
 * The sampler: window deltas and multiplex scaling (pure), and the real perf_event_open path on the
 * stand-in tree (software events posing as IMC channels; needs root at this host's perf_event_paranoid):
 * counts rise, windows add up to the totals, and a channel with no counter is refused by name.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/pmu.h"
#include "hvmtrace/util.h"

static void test_window_delta(void **state)
{
	uint64_t d;
	double r;

	(void)state;
	/* counted all the time */
	assert_true(
	    hvt_pmu_window_delta((uint64_t[]){100, 1000, 1000}, (uint64_t[]){350, 2000, 2000}, &d, &r));
	assert_int_equal(d, 250);
	assert_true(r == 1.0);
	/* multiplexed: ran 250 of 1000 ns, so 100 counted stand for 400 */
	assert_true(hvt_pmu_window_delta((uint64_t[]){0, 0, 0}, (uint64_t[]){100, 1000, 250}, &d, &r));
	assert_int_equal(d, 400);
	assert_true(r == 0.25);
	/* never ran in a window that had time: not measured, distinct from zero traffic */
	assert_false(hvt_pmu_window_delta((uint64_t[]){5, 10, 10}, (uint64_t[]){5, 500, 10}, &d, &r));
	assert_int_equal(d, 0);
	/* no time passed */
	assert_true(hvt_pmu_window_delta((uint64_t[]){7, 10, 10}, (uint64_t[]){7, 10, 10}, &d, &r));
	assert_int_equal(d, 0);
	/* 64-bit counts beyond 48 bits (the kernel folds the hardware's 48-bit counter into 64) */
	assert_true(hvt_pmu_window_delta((uint64_t[]){(1ull << 48) - 5, 0, 0},
					 (uint64_t[]){(1ull << 48) + 5, 9, 9}, &d, &r));
	assert_int_equal(d, 10);
}

static int discover_standin(struct hvt_pmu_host *h)
{
	struct hvt_pmu_source src = {.sysfs_root = "tests/fixtures/sysfs/standin/sys"};
	struct hvt_err err = {{0}};

	if (hvt_pmu_discover(h, &src, &err))
		fail_msg("%s", err.msg);
	assert_true(h->stand_in);
	return 0;
}

static void test_standin_counts(void **state)
{
	struct hvt_pmu_host h;
	struct hvt_pmu_sampler *s;
	struct hvt_pmu_counts c[2], c2[2];
	struct hvt_err err = {{0}};
	const char *ids[] = {"s1.mc0.ch1", "s0.mc0.ch0"};
	uint64_t t0, t1;

	(void)state;
	discover_standin(&h);
	t0 = hvt_now_ns();
	if (hvt_pmu_open(&s, &h, ids, 2, &err)) {
		if (err.msg[0] && (strstr(err.msg, "refused")))
			skip(); /* not privileged here: the integration test covers the message */
		fail_msg("%s", err.msg);
	}
	/* in the order asked for */
	assert_string_equal(hvt_pmu_channel_at(s, 0)->id, "s1.mc0.ch1");
	assert_string_equal(hvt_pmu_channel_at(s, 1)->id, "s0.mc0.ch0");
	assert_int_equal(hvt_pmu_channel_at(s, 0)->cpu, 1);
	assert_true(hvt_pmu_channel_at(s, 0)->stand_in);
	nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
	assert_int_equal(hvt_pmu_read(s, c, &err), 0);
	t1 = hvt_now_ns();
	for (int i = 0; i < 2; i++) {
		/* cpu-clock counts nanoseconds: the window is at least the sleep, at most open→read */
		assert_true(c[i].counted);
		assert_true(c[i].read_cas >= 19000000 && c[i].read_cas <= t1 - t0);
		assert_int_equal(c[i].read_bytes, 64 * c[i].read_cas);
		assert_int_equal(c[i].read_cas_total, c[i].read_cas);
	}
	nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
	assert_int_equal(hvt_pmu_read(s, c2, &err), 0);
	for (int i = 0; i < 2; i++) {
		assert_true(c2[i].read_cas >= 9000000 && c2[i].read_cas < 1000000000);
		assert_int_equal(c2[i].read_cas_total, c[i].read_cas + c2[i].read_cas);
		assert_int_equal(c2[i].write_cas_total, c[i].write_cas + c2[i].write_cas);
	}
	hvt_pmu_close(s);
	hvt_pmu_host_fini(&h);
}

static void test_unknown_channel(void **state)
{
	struct hvt_pmu_host h;
	struct hvt_pmu_sampler *s = (void *)1;
	struct hvt_err err = {{0}};
	const char *ids[] = {"s0.mc0.ch0", "s0.mc3.ch1"};

	(void)state;
	discover_standin(&h);
	assert_int_equal(hvt_pmu_open(&s, &h, ids, 2, &err) == -ENOENT || strstr(err.msg, "refused"), 1);
	assert_null(s);
	if (!strstr(err.msg, "refused")) {
		assert_non_null(strstr(err.msg, "channel s0.mc3.ch1 has no counter"));
		assert_non_null(strstr(err.msg, "s0.mc0.ch0, s0.mc0.ch1, s1.mc0.ch0, s1.mc0.ch1"));
	}
	hvt_pmu_host_fini(&h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_window_delta),
	    cmocka_unit_test(test_standin_counts),
	    cmocka_unit_test(test_unknown_channel),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
