// SPDX-License-Identifier: MIT
/*
 * Unit tests for JSON numbers (lib/core/json_number.c): fixed cases at the edges, then a sweep of random
 * doubles (every exponent, and decimal-looking values such as 241.925) over seeds it prints: each reads back
 * exactly, in the fewest significant digits that do, and json-c serialises and parses it the same way.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <float.h>
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/json_number.h"
#include "hvmtrace/util.h"

static const char *fmt(double v)
{
	static char buf[HVT_JSON_DOUBLE_LEN];

	hvt_json_format_double(v, buf, sizeof(buf));
	return buf;
}

static void test_cases(void **state)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
	    {241.925, "241.925"}, /* json-c's %.17g: 241.92500000000001 */
	    {0.1, "0.1"},
	    {1.0 / 3, "0.3333333333333333"},
	    {2.0 / 3, "0.6666666666666666"},
	    {100, "100.0"}, /* not 1e+02 */
	    {123456789, "123456789.0"},
	    {0, "0.0"},
	    {-0.0, "-0.0"},
	    {-1.5, "-1.5"},
	    {0.0001, "0.0001"},
	    {0.00001, "1e-05"},
	    {1e15, "1000000000000000.0"},
	    {9007199254740991, "9007199254740991.0"}, /* 2^53 - 1 */
	    {0x1p53, "9007199254740992.0"},           /* %g's 16 digits: no exponent needed */
	    {1e16, "1e+16"},
	    {-31644192136091408.0, "-3.164419213609141e+16"}, /* above 2^53: written out it takes 17 */
	    {1e21, "1e+21"},
	    {12345678901234567890.0, "1.2345678901234567e+19"},
	    {5e-324, "5e-324"}, /* the least subnormal */
	    {DBL_MAX, "1.7976931348623157e+308"},
	    {DBL_MIN, "2.2250738585072014e-308"},
	    {NAN, "null"},
	    {INFINITY, "null"},
	    {-INFINITY, "null"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(fmt(cases[i].v), cases[i].want))
			fail_msg("%.17g printed as %s, want %s", cases[i].v, fmt(cases[i].v), cases[i].want);
}

/* Significant digits of a number as printed: its mantissa without sign, point, leading or trailing zeros. */
static int significant(const char *s)
{
	char d[HVT_JSON_DOUBLE_LEN];
	size_t n = 0;

	for (; *s && *s != 'e'; s++)
		if (*s >= '0' && *s <= '9' && (n || *s != '0'))
			d[n++] = *s;
	while (n > 1 && d[n - 1] == '0')
		n--;
	return n ? (int)n : 1;
}

/* v printed: reads back exactly, with no fewer digits that would, as JSON json-c reads and writes alike. */
static void check(double v, uint64_t seed)
{
	const char *s = fmt(v);
	char shorter[400]; /* %.*g of any double fits */
	int digits = significant(s);

	if (strtod(s, NULL) != v || signbit(strtod(s, NULL)) != signbit(v))
		fail_msg("seed %llu: %.17g printed as %s, which reads back as %.17g",
			 (unsigned long long)seed, v, s, strtod(s, NULL));
	if (digits > 17)
		fail_msg("seed %llu: %.17g printed as %s: %d digits", (unsigned long long)seed, v, s, digits);
	snprintf(shorter, sizeof(shorter), "%.*g", digits - 1, v);
	if (digits > 1 && strtod(shorter, NULL) == v)
		fail_msg("seed %llu: %.17g printed as %s, but %s reads back too", (unsigned long long)seed, v,
			 s, shorter);
	if (!strpbrk(s, ".e"))
		fail_msg("seed %llu: %s reads as an integer", (unsigned long long)seed, s);

	struct json_object *o = hvt_json_new_double(v), *back;
	assert_non_null(o);
	assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), s);
	back = json_tokener_parse(s);
	assert_non_null(back);
	assert_true(json_object_is_type(back, json_type_double));
	if (json_object_get_double(back) != v)
		fail_msg("seed %llu: json-c reads %s as %.17g", (unsigned long long)seed, s,
			 json_object_get_double(back));
	json_object_put(back);
	json_object_put(o);
}

static void test_sweep(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 8; seed++) {
		uint64_t rng = seed;

		print_message("json numbers: seed %llu\n", (unsigned long long)seed);
		for (int i = 0; i < 20000; i++) {
			uint64_t bits = hvt_splitmix64(&rng);
			double v;

			memcpy(&v, &bits, sizeof(v));
			if (isfinite(v))
				check(v, seed); /* any finite double, every exponent */
			/* what the writers print: thousandths, microseconds, ratios */
			check((double)(hvt_splitmix64(&rng) % 100000000) / 1000, seed);
			check((double)(hvt_splitmix64(&rng) % 1000000007) / 1e9, seed);
			check((double)(hvt_splitmix64(&rng) % 1000) /
				  (double)(1 + hvt_splitmix64(&rng) % 997),
			      seed);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cases),
	    cmocka_unit_test(test_sweep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
