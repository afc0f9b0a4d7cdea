// SPDX-License-Identifier: MIT
/*
 * The phase hold that follows the tracer's JSON Lines (tests/vmm/phase_hold.c): it counts exactly the
 * intervals check_phases would count as wholly inside the phase, and no others.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../vmm/phase_hold.h"
#include "hvmtrace/error.h"

#define MS 1000000ull

struct fixture {
	char path[64];
	FILE *f;
	struct phase_hold h;
};

static int setup(void **state)
{
	struct fixture *x = calloc(1, sizeof(*x));
	int fd;

	snprintf(x->path, sizeof(x->path), "/tmp/test_phase_hold.XXXXXX");
	fd = mkstemp(x->path);
	assert_true(fd >= 0);
	x->f = fdopen(fd, "w");
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *x = *state;

	phase_hold_fini(&x->h);
	fclose(x->f);
	unlink(x->path);
	free(x);
	return 0;
}

/* One interval line as hvmtrace record --jsonl writes it (the fields the hold reads, and others). */
static void interval(struct fixture *x, uint64_t start_ms, uint64_t end_ms, double harvest_us)
{
	fprintf(
	    x->f,
	    "{\"seq\":1,\"t_start_ns\":%llu,\"t_end_ns\":%llu,\"duration_s\":0.1,\"harvest_us\":%.1f,\"written_pages\":3}\n",
	    (unsigned long long)(start_ms * MS), (unsigned long long)(end_ms * MS), harvest_us);
	fflush(x->f);
}

static int over(struct fixture *x, uint64_t now_ms)
{
	struct hvt_err err = {{0}};

	return phase_hold_over(&x->h, now_ms * MS, &err);
}

/* Counted: the window from the previous interval's end lies in the phase, and a logged pass lies inside. */
static void test_counts_whole_intervals_only(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(phase_hold_init(&x->h, 0, 2, x->path, NULL), 0);
	phase_hold_begin(&x->h, 1000 * MS);
	for (uint64_t t = 1001; t < 1600; t += 10)
		assert_int_equal(phase_hold_pass(&x->h, t * MS, (t + 5) * MS), 0);
	interval(x, 900, 1000, 50);  /* before the phase */
	interval(x, 1000, 1100, 50); /* its window opens at the last end, 1000: inside */
	assert_int_equal(over(x, 1200), 0);
	assert_int_equal(x->h.have, 1);
	interval(x, 1100, 1200, 50);
	assert_int_equal(over(x, 1300), 1);
	assert_int_equal(x->h.have, 2);
	assert_int_equal(x->h.intervals, 3);
}

/* The previous interval's end opens the window, as in check_phases, not the interval's own start. */
static void test_window_opens_at_previous_end(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(phase_hold_init(&x->h, 0, 1, x->path, NULL), 0);
	phase_hold_begin(&x->h, 1000 * MS);
	for (uint64_t t = 1001; t < 1600; t += 10)
		assert_int_equal(phase_hold_pass(&x->h, t * MS, (t + 5) * MS), 0);
	interval(x, 900, 990, 50);
	interval(x, 1001, 1100, 50); /* starts in the phase, but its window opens at 990 */
	assert_int_equal(over(x, 1200), 0);
	interval(x, 1100, 1200, 50);
	assert_int_equal(over(x, 1300), 1);
}

/* No logged pass wholly inside: not counted (the checker holds such an interval to bounds only). */
static void test_needs_a_pass_inside(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(phase_hold_init(&x->h, 0, 1, x->path, NULL), 0);
	phase_hold_begin(&x->h, 1000 * MS);
	assert_int_equal(phase_hold_pass(&x->h, 1050 * MS, 1150 * MS), 0); /* across the end at 1100 */
	interval(x, 1000, 1000, 1);
	interval(x, 1000, 1100, 50);
	assert_int_equal(over(x, 1200), 0);
	assert_int_equal(phase_hold_pass(&x->h, 1160 * MS, 1170 * MS), 0);
	interval(x, 1100, 1200, 50);
	assert_int_equal(over(x, 1300), 1);
}

/* A line counts only once complete; a harvest that ends after "now" cannot be before the phase's end. */
static void test_partial_lines_and_harvest_end(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(phase_hold_init(&x->h, 0, 1, x->path, NULL), 0);
	phase_hold_begin(&x->h, 1000 * MS);
	assert_int_equal(phase_hold_pass(&x->h, 1010 * MS, 1020 * MS), 0);
	interval(x, 1000, 1000, 1);
	fputs("{\"t_start_ns\":1000000000,\"t_end_ns\":11", x->f);
	fflush(x->f);
	assert_int_equal(over(x, 1200), 0);
	fputs("00000000,\"harvest_us\":200000.0}\n", x->f); /* harvest until 1300 ms */
	fflush(x->f);
	assert_int_equal(over(x, 1250), 0);
	assert_int_equal(x->h.intervals, 2);
	assert_int_equal(x->h.have, 0);
}

/* Lines hundreds of kilobytes long (the page ranges) are read by their head, one interval each. */
static void test_long_lines(void **state)
{
	struct fixture *x = *state;

	assert_int_equal(phase_hold_init(&x->h, 0, 3, x->path, NULL), 0);
	phase_hold_begin(&x->h, 1000 * MS);
	for (uint64_t t = 1000; t < 1400; t += 100) {
		assert_int_equal(phase_hold_pass(&x->h, (t + 10) * MS, (t + 20) * MS), 0);
		fprintf(x->f,
			"{\"seq\":1,\"t_start_ns\":%llu,\"t_end_ns\":%llu,\"harvest_us\":10.0,\"written\":[",
			(unsigned long long)(t * MS), (unsigned long long)((t + 100) * MS));
		for (int i = 0; i < 20000; i++)
			fprintf(x->f, "%s[%d,1]", i ? "," : "", 64 * i);
		fputs("]}\n", x->f);
	}
	fflush(x->f);
	assert_int_equal(over(x, 1500), 1);
	assert_int_equal(x->h.intervals, 4);
	assert_int_equal(x->h.have, 4);
}

/* The hold time still applies; without --follow it is the whole rule. */
static void test_hold_time(void **state)
{
	struct fixture *x = *state;
	struct hvt_err err = {{0}};

	assert_int_equal(phase_hold_init(&x->h, 500 * MS, 0, NULL, NULL), 0);
	phase_hold_begin(&x->h, 1000 * MS);
	assert_int_equal(over(x, 1499), 0);
	assert_int_equal(over(x, 1500), 1);
	phase_hold_fini(&x->h);
	assert_int_equal(phase_hold_init(&x->h, 0, 2, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "--follow"));
}

/* A tracer that harvests nothing, or intervals that never hold a pass, end the wait with a reason. */
static void test_gives_up_with_a_reason(void **state)
{
	struct fixture *x = *state;
	struct hvt_err err = {{0}};

	assert_int_equal(phase_hold_init(&x->h, 0, 1, x->path, NULL), 0);
	phase_hold_begin(&x->h, 1000 * MS);
	assert_int_equal(over(x, 2000), 0);
	assert_int_equal(phase_hold_over(&x->h, 200000 * MS, &err), -ETIMEDOUT);
	assert_non_null(strstr(err.msg, "harvested no interval"));

	phase_hold_begin(&x->h, 300000 * MS);
	for (uint64_t t = 300000; t < 300000 + 60 * 10; t += 10)
		interval(x, t, t + 10, 1);
	assert_int_equal(phase_hold_over(&x->h, 301000 * MS, &err), -ETIMEDOUT);
	assert_non_null(strstr(err.msg, "passes take longer than an interval"));
}

/* Passes short enough to fit an interval that each straddle an interval's end (the guest preempted in every
 * pass): the wait goes on past the intervals that end it when no pass could fit, and ends, saying so, only
 * after far more. */
static void test_preempted_passes_keep_waiting(void **state)
{
	struct fixture *x = *state;
	struct hvt_err err = {{0}};
	uint64_t t = 1000;

	assert_int_equal(phase_hold_init(&x->h, 0, 1, x->path, NULL), 0);
	phase_hold_begin(&x->h, t * MS);
	for (; t < 1000 + 60 * 10; t += 10) {
		assert_int_equal(phase_hold_pass(&x->h, (t + 8) * MS, (t + 11) * MS), 0);
		interval(x, t, t + 10, 1);
	}
	assert_int_equal(phase_hold_over(&x->h, (t + 100) * MS, &err), 0);
	for (; t < 1000 + 1100 * 10; t += 10) {
		assert_int_equal(phase_hold_pass(&x->h, (t + 8) * MS, (t + 11) * MS), 0);
		interval(x, t, t + 10, 1);
	}
	assert_int_equal(phase_hold_over(&x->h, (t + 100) * MS, &err), -ETIMEDOUT);
	assert_non_null(strstr(err.msg, "passes of 3.0 ms fit intervals of up to 10.0 ms"));
	assert_non_null(strstr(err.msg, "preempted in every pass"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_counts_whole_intervals_only, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_window_opens_at_previous_end, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_needs_a_pass_inside, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_partial_lines_and_harvest_end, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_long_lines, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hold_time, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gives_up_with_a_reason, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_preempted_passes_keep_waiting, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
