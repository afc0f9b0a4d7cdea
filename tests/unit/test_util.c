// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "hvmtrace/util.h"

static void test_durations(void **state)
{
	static const struct {
		const char *s;
		uint64_t ns;
	} good[] = {
	    {"10ms", 10000000},      {"1s", 1000000000},       {"1.5s", 1500000000},
	    {"5m", 300000000000ull}, {"2h", 7200000000000ull}, {"250us", 250000},
	    {"100ns", 100},          {"3", 3000000000ull},     {"0.01", 10000000},
	};
	static const char *const bad[] = {"",  "0",  "0s",   "-1s",   "+1s", "5x",  "1 s",  " 1s",
					  "s", "ms", "1.s5", "0.1ns", "nan", "inf", "1e30h"};
	uint64_t ns;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ns = 0;
		assert_int_equal(hvt_parse_duration(good[i].s, &ns), 0);
		assert_int_equal(ns, good[i].ns);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_not_equal(hvt_parse_duration(bad[i], &ns), 0);
}

static void test_sizes(void **state)
{
	uint64_t b;

	(void)state;
	assert_int_equal(hvt_parse_size("1G", &b), 0);
	assert_int_equal(b, 1ull << 30);
	assert_int_equal(hvt_parse_size("512M", &b), 0);
	assert_int_equal(b, 512ull << 20);
	assert_int_equal(hvt_parse_size("4K", &b), 0);
	assert_int_equal(b, 4096);
	assert_int_equal(hvt_parse_size("1.5GiB", &b), 0);
	assert_int_equal(b, 3ull << 29);
	assert_int_equal(hvt_parse_size("4096", &b), 0);
	assert_int_equal(b, 4096);
	assert_int_not_equal(hvt_parse_size("1.1K", &b), 0); /* not a whole number of bytes */
	assert_int_not_equal(hvt_parse_size("1Q", &b), 0);
	assert_int_not_equal(hvt_parse_size("-1G", &b), 0);
	assert_int_not_equal(hvt_parse_size("", &b), 0);
	assert_int_not_equal(hvt_parse_size("9999999T", &b), 0);
}

static void test_format_round_trip(void **state)
{
	static const uint64_t values[] = {1,        999,        1000,       250000,
					  10000000, 1000000000, 1500000000, 300000000000ull};
	char buf[32];
	uint64_t back;

	(void)state;
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		hvt_format_duration(values[i], buf, sizeof(buf));
		assert_int_equal(hvt_parse_duration(buf, &back), 0);
		assert_int_equal(back, values[i]);
	}
	hvt_format_duration(10000000, buf, sizeof(buf));
	assert_string_equal(buf, "10ms");
}

static void test_clocks(void **state)
{
	uint64_t a = hvt_now_ns(), b = hvt_now_ns();

	(void)state;
	assert_true(b >= a);
	assert_true(hvt_wall_now_ns() > 1600000000ll * 1000000000ll); /* after 2020 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_durations),
	    cmocka_unit_test(test_sizes),
	    cmocka_unit_test(test_format_round_trip),
	    cmocka_unit_test(test_clocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
