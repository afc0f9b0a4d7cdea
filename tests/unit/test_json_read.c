// SPDX-License-Identifier: MIT
/* Unit tests for lib/core/json_read.c: every type it reads, every refusal, and each refusal's message. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "hvmtrace/error.h"
#include "hvmtrace/json_read.h"

static const char DOC[] =
    "{\"s\": \"text\", \"long\": \"abcdef\", \"nul\": \"a\\u0000b\", \"utf\": \"ab\\u00e9\", \"t\": true,"
    " \"n\": null, \"i\": 5, \"neg\": -1, \"max\": 18446744073709551615, \"f\": 1.5, \"hex\": \"0x1f\","
    " \"HEX\": \"0X1F\", \"dec\": \"4096\", \"zero\": \"0\", \"junk\": \"0x10zz\", \"empty\": \"\", \"bare\": \"0x\","
    " \"space\": \" 5\", \"plus\": \"+5\", \"minus\": \"-1\", \"octal\": \"010\", \"exp\": \"1e3\", \"g\": \"4G\","
    " \"over\": \"0x10000000000000000\", \"q\": \"4Q\", \"hexnul\": \"0x10\\u0000zz\","
    " \"o\": {\"a\": 1}, \"a\": [7, \"x\", {\"k\": 2}, [1, 2], -3]}";

struct doc {
	struct json_object *o;
	struct hvt_json_in in;
	struct hvt_err err;
};

static int setup(void **state)
{
	static struct doc d;

	d.o = json_tokener_parse(DOC);
	assert_non_null(d.o);
	hvt_json_in_init(&d.in, d.o, -EINVAL, &d.err, "doc %s", "d.json");
	*state = &d;
	return 0;
}

static int teardown(void **state)
{
	struct doc *d = *state;

	json_object_put(d->o);
	return 0;
}

/* A refusal: the context's code and exactly this message. */
#define REFUSED(d, call, says)                                                                               \
	do {                                                                                                 \
		(d)->err.msg[0] = '\0';                                                                      \
		assert_int_equal((call), (d)->in.code);                                                      \
		assert_string_equal((d)->err.msg, (says));                                                   \
	} while (0)

static void test_presence(void **state)
{
	struct doc *d = *state;
	static const char *const known[] = {"a", NULL};
	struct hvt_json_in o, none;
	const char *s;

	assert_true(hvt_json_has(&d->in, "s"));
	assert_true(hvt_json_has(&d->in, "n")); /* null is given */
	assert_false(hvt_json_has(&d->in, "absent"));
	REFUSED(d, hvt_json_str(&d->in, "absent", 10, &s), "doc d.json: missing \"absent\"");
	hvt_json_in_init(&none, NULL, -EINVAL, &d->err, "nothing");
	assert_false(hvt_json_has(&none, "s"));
	assert_int_equal(hvt_json_object(&d->in, "o", &o), 0);
	assert_string_equal(o.where, "doc d.json: o");
	assert_int_equal(hvt_json_only(&o, known), 0);
	REFUSED(d, hvt_json_only(&d->in, known), "doc d.json: unknown member \"s\" (known: a)");
	REFUSED(d, hvt_json_refuse(&d->in, "s", "= \"%s\" is not a mode", "text"),
		"doc d.json: \"s\" = \"text\" is not a mode");
	hvt_json_rename(&o, "%s (renamed)", o.where);
	assert_string_equal(o.where, "doc d.json: o (renamed)");
}

static void test_strings(void **state)
{
	struct doc *d = *state;
	const char *s;
	char buf[5];

	assert_int_equal(hvt_json_str(&d->in, "s", 4, &s), 0);
	assert_string_equal(s, "text");
	REFUSED(d, hvt_json_str(&d->in, "s", 3, &s), "doc d.json: \"s\" is longer than 3 bytes");
	REFUSED(d, hvt_json_str(&d->in, "nul", 10, &s), "doc d.json: \"nul\" holds a NUL byte");
	REFUSED(d, hvt_json_str(&d->in, "i", 10, &s), "doc d.json: \"i\" is not a string (got an integer)");
	REFUSED(d, hvt_json_str(&d->in, "n", 10, &s), "doc d.json: \"n\" is not a string (got null)");
	assert_int_equal(hvt_json_strbuf(&d->in, "s", buf, sizeof(buf), false), 0);
	assert_string_equal(buf, "text");
	REFUSED(d, hvt_json_strbuf(&d->in, "long", buf, sizeof(buf), false),
		"doc d.json: \"long\" is longer than 4 bytes");
	assert_int_equal(hvt_json_strbuf(&d->in, "long", buf, sizeof(buf), true), 0);
	assert_string_equal(buf, "abcd");
	/* "abé" is 4 bytes: cut to 4 with the terminator, the é does not fit and is not cut in two */
	assert_int_equal(hvt_json_strbuf(&d->in, "utf", buf, 4, true), 0);
	assert_string_equal(buf, "ab");
	REFUSED(d, hvt_json_strbuf(&d->in, "nul", buf, sizeof(buf), true),
		"doc d.json: \"nul\" holds a NUL byte");
}

static void test_bools(void **state)
{
	struct doc *d = *state;
	bool b = false;

	assert_int_equal(hvt_json_bool(&d->in, "t", &b), 0);
	assert_true(b);
	REFUSED(d, hvt_json_bool(&d->in, "i", &b), "doc d.json: \"i\" is not true or false (got an integer)");
	REFUSED(d, hvt_json_bool(&d->in, "s", &b), "doc d.json: \"s\" is not true or false (got a string)");
}

static void test_integers(void **state)
{
	struct doc *d = *state;
	uint64_t u = 0;
	uint32_t u32 = 0;
	int64_t i = 0;
	int32_t i32 = 0;

	assert_int_equal(hvt_json_uint(&d->in, "max", 0, UINT64_MAX, &u), 0);
	assert_true(u == UINT64_MAX);
	assert_int_equal(hvt_json_uint(&d->in, "i", 5, 5, &u), 0);
	assert_int_equal(u, 5);
	REFUSED(d, hvt_json_uint(&d->in, "neg", 0, UINT64_MAX, &u),
		"doc d.json: \"neg\" = -1 is out of range (0 to 18446744073709551615)");
	REFUSED(d, hvt_json_uint(&d->in, "i", 6, 10, &u), "doc d.json: \"i\" = 5 is out of range (6 to 10)");
	REFUSED(d, hvt_json_uint(&d->in, "i", 0, 4, &u), "doc d.json: \"i\" = 5 is out of range (0 to 4)");
	REFUSED(d, hvt_json_uint(&d->in, "f", 0, 4, &u),
		"doc d.json: \"f\" is not an integer (got a fractional number)");
	REFUSED(d, hvt_json_uint(&d->in, "dec", 0, UINT64_MAX, &u),
		"doc d.json: \"dec\" is not an integer (got a string)");
	assert_int_equal(u, 5); /* untouched by the refusals */
	assert_int_equal(hvt_json_u32(&d->in, "i", 0, UINT32_MAX, &u32), 0);
	assert_int_equal(u32, 5);
	REFUSED(d, hvt_json_u32(&d->in, "max", 0, UINT32_MAX, &u32),
		"doc d.json: \"max\" = 18446744073709551615 is out of range (0 to 4294967295)");
	assert_int_equal(hvt_json_int(&d->in, "neg", -1, 0, &i), 0);
	assert_int_equal(i, -1);
	REFUSED(d, hvt_json_int(&d->in, "neg", 0, 10, &i),
		"doc d.json: \"neg\" = -1 is out of range (0 to 10)");
	REFUSED(d, hvt_json_int(&d->in, "max", INT64_MIN, INT64_MAX, &i),
		"doc d.json: \"max\" = 18446744073709551615 is out of range (-9223372036854775808 to "
		"9223372036854775807)");
	assert_int_equal(hvt_json_i32(&d->in, "neg", -1, INT32_MAX, &i32), 0);
	assert_int_equal(i32, -1);
	REFUSED(d, hvt_json_i32(&d->in, "neg", 0, INT32_MAX, &i32),
		"doc d.json: \"neg\" = -1 is out of range (0 to 2147483647)");
}

static void test_numbers(void **state)
{
	struct doc *d = *state;
	double x = 0;

	assert_int_equal(hvt_json_double(&d->in, "f", 0, 2, &x), 0);
	assert_true(x == 1.5);
	assert_int_equal(hvt_json_double(&d->in, "i", 0, HUGE_VAL, &x), 0);
	assert_true(x == 5);
	REFUSED(d, hvt_json_double(&d->in, "f", 0, 1, &x),
		"doc d.json: \"f\" = 1.5 is out of range (0 to 1)");
	REFUSED(d, hvt_json_double(&d->in, "neg", 0, HUGE_VAL, &x),
		"doc d.json: \"neg\" = -1 is out of range (at least 0)");
	REFUSED(d, hvt_json_double(&d->in, "i", -HUGE_VAL, 1, &x),
		"doc d.json: \"i\" = 5 is out of range (at most 1)");
	REFUSED(d, hvt_json_double(&d->in, "dec", 0, HUGE_VAL, &x),
		"doc d.json: \"dec\" is not a number (got a string)");
	REFUSED(d, hvt_json_double(&d->in, "t", 0, HUGE_VAL, &x),
		"doc d.json: \"t\" is not a number (got a boolean)");
	assert_true(x == 5);
}

static void test_addresses(void **state)
{
	static const struct {
		const char *key;
		uint64_t v;
	} good[] = {{"i", 5}, {"max", UINT64_MAX}, {"hex", 31}, {"HEX", 31}, {"dec", 4096}, {"zero", 0}};
	static const char *const junk[] = {"junk",  "empty", "bare", "space", "plus",
					   "minus", "octal", "exp",  "g"};
	struct doc *d = *state;
	char want[200];
	uint64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(hvt_json_addr(&d->in, good[i].key, UINT64_MAX, &v), 0);
		assert_true(v == good[i].v);
	}
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		const char *s;

		assert_int_equal(hvt_json_str(&d->in, junk[i], 100, &s), 0);
		snprintf(want, sizeof(want),
			 "doc d.json: \"%s\" = \"%s\" is not an address (\"0x…\" or decimal digits)", junk[i],
			 s);
		REFUSED(d, hvt_json_addr(&d->in, junk[i], UINT64_MAX, &v), want);
	}
	REFUSED(d, hvt_json_addr(&d->in, "over", UINT64_MAX, &v),
		"doc d.json: \"over\" = \"0x10000000000000000\" is out of range (0 to 18446744073709551615)");
	REFUSED(d, hvt_json_addr(&d->in, "hex", 30, &v),
		"doc d.json: \"hex\" = \"0x1f\" is out of range (0 to 30)");
	REFUSED(d, hvt_json_addr(&d->in, "neg", UINT64_MAX, &v),
		"doc d.json: \"neg\" = -1 is out of range (0 to 18446744073709551615)");
	REFUSED(d, hvt_json_addr(&d->in, "hexnul", UINT64_MAX, &v),
		"doc d.json: \"hexnul\" holds a NUL byte");
	REFUSED(d, hvt_json_addr(&d->in, "f", UINT64_MAX, &v),
		"doc d.json: \"f\" is not an address (got a fractional number)");
}

static void test_sizes(void **state)
{
	struct doc *d = *state;
	uint64_t v;

	assert_int_equal(hvt_json_size(&d->in, "g", &v), 0);
	assert_true(v == 4ull << 30);
	assert_int_equal(hvt_json_size(&d->in, "hex", &v), 0);
	assert_int_equal(v, 31);
	assert_int_equal(hvt_json_size(&d->in, "zero", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(hvt_json_size(&d->in, "octal", &v), 0); /* a size is decimal: hvt_parse_size */
	assert_int_equal(v, 10);
	assert_int_equal(hvt_json_size(&d->in, "i", &v), 0);
	assert_int_equal(v, 5);
	REFUSED(d, hvt_json_size(&d->in, "q", &v),
		"doc d.json: \"q\" = \"4Q\" is not a size (\"0x…\", decimal, or with K, M, G or T)");
	REFUSED(d, hvt_json_size(&d->in, "junk", &v),
		"doc d.json: \"junk\" = \"0x10zz\" is not a size (\"0x…\", decimal, or with K, M, G or T)");
	REFUSED(d, hvt_json_size(&d->in, "neg", &v),
		"doc d.json: \"neg\" = -1 is out of range (0 to 18446744073709551615)");
}

static void test_objects_and_arrays(void **state)
{
	struct doc *d = *state;
	struct hvt_json_in a, o, inner;
	const char *s;
	uint64_t u;
	size_t n;

	REFUSED(d, hvt_json_object(&d->in, "a", &o), "doc d.json: \"a\" is not an object (got an array)");
	REFUSED(d, hvt_json_array(&d->in, "o", 10, &a, &n),
		"doc d.json: \"o\" is not an array (got an object)");
	REFUSED(d, hvt_json_array(&d->in, "a", 4, &a, &n), "doc d.json: \"a\" has 5 entries (at most 4)");
	assert_int_equal(hvt_json_array(&d->in, "a", 5, &a, &n), 0);
	assert_int_equal(n, 5);
	assert_string_equal(a.where, "doc d.json: a");
	assert_int_equal(hvt_json_item_uint(&a, 0, 0, 10, &u), 0);
	assert_int_equal(u, 7);
	REFUSED(d, hvt_json_item_uint(&a, 0, 0, 6, &u), "doc d.json: a[0] = 7 is out of range (0 to 6)");
	REFUSED(d, hvt_json_item_uint(&a, 4, 0, 6, &u), "doc d.json: a[4] = -3 is out of range (0 to 6)");
	REFUSED(d, hvt_json_item_uint(&a, 1, 0, 6, &u), "doc d.json: a[1] is not an integer (got a string)");
	assert_int_equal(hvt_json_item_str(&a, 1, 1, &s), 0);
	assert_string_equal(s, "x");
	REFUSED(d, hvt_json_item_str(&a, 0, 1, &s), "doc d.json: a[0] is not a string (got an integer)");
	assert_int_equal(hvt_json_item_object(&a, 2, &o), 0);
	assert_string_equal(o.where, "doc d.json: a[2]");
	assert_int_equal(hvt_json_uint(&o, "k", 0, 10, &u), 0);
	assert_int_equal(u, 2);
	REFUSED(d, hvt_json_uint(&o, "j", 0, 10, &u), "doc d.json: a[2]: missing \"j\"");
	REFUSED(d, hvt_json_item_object(&a, 3, &o), "doc d.json: a[3] is not an object (got an array)");
	assert_int_equal(hvt_json_item_array(&a, 3, 2, &inner, &n), 0);
	assert_int_equal(n, 2);
	REFUSED(d, hvt_json_item_uint(&inner, 1, 0, 1, &u),
		"doc d.json: a[3][1] = 2 is out of range (0 to 1)");
	REFUSED(d, hvt_json_item_array(&a, 3, 1, &inner, &n), "doc d.json: a[3] has 2 entries (at most 1)");
	/* an object is no array: its items are nothing */
	REFUSED(d, hvt_json_item_uint(&d->in, 0, 0, 1, &u), "doc d.json[0] is not an integer (got null)");
}

static void test_optional(void **state)
{
	struct doc *d = *state;
	uint64_t u = 42;

	assert_int_equal(HVT_JSON_OPT(hvt_json_uint, &d->in, "absent", 0, 10, &u), 0);
	assert_int_equal(u, 42);
	assert_int_equal(HVT_JSON_OPT(hvt_json_uint, &d->in, "i", 0, 10, &u), 0);
	assert_int_equal(u, 5);
	REFUSED(d, HVT_JSON_OPT(hvt_json_uint, &d->in, "n", 0, 10, &u),
		"doc d.json: \"n\" is not an integer (got null)");
}

/* A peer's message refuses with -EPROTO; without an hvt_err the refusal is only its code. */
static void test_code_and_no_err(void **state)
{
	struct doc *d = *state;
	struct hvt_json_in peer, quiet;
	uint64_t u;

	hvt_json_in_init(&peer, d->o, -EPROTO, &d->err, "harvest message");
	d->err.msg[0] = '\0';
	assert_int_equal(hvt_json_uint(&peer, "neg", 0, UINT64_MAX, &u), -EPROTO);
	assert_string_equal(d->err.msg,
			    "harvest message: \"neg\" = -1 is out of range (0 to 18446744073709551615)");
	hvt_json_in_init(&quiet, d->o, -EINVAL, NULL, "quiet");
	assert_int_equal(hvt_json_uint(&quiet, "neg", 0, UINT64_MAX, &u), -EINVAL);
	assert_int_equal(hvt_json_uint(&quiet, "absent", 0, UINT64_MAX, &u), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_presence), cmocka_unit_test(test_strings),
	    cmocka_unit_test(test_bools),    cmocka_unit_test(test_integers),
	    cmocka_unit_test(test_numbers),  cmocka_unit_test(test_addresses),
	    cmocka_unit_test(test_sizes),    cmocka_unit_test(test_objects_and_arrays),
	    cmocka_unit_test(test_optional), cmocka_unit_test(test_code_and_no_err),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
