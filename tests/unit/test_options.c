// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/options.h"

#define USAGE 7 /* a usage status no real outcome has, so a test can tell them apart */

enum mode { MODE_AUTO, MODE_DIRTY, MODE_AD };

struct values {
	bool quiet, verbose, pages;
	const char *name, *file, *first, *second;
	int count;
	unsigned small;
	uint64_t big;
	int cpu;
	uint64_t interval, size, pages_size;
	enum mode mode;
	char seen[4][32];
	int nseen;
};

static int remember(const struct hvt_option *opt, const char *arg, char *problem, size_t len)
{
	struct values *v = opt->value;

	if (!strcmp(arg, "bad")) {
		snprintf(problem, len, "the callback refuses it");
		return -1;
	}
	snprintf(v->seen[v->nseen++], sizeof(v->seen[0]), "%s", arg);
	return 0;
}

static const struct hvt_opt_choice modes[] = {
    {"auto", MODE_AUTO}, {"dirty-log", MODE_DIRTY}, {"ad", MODE_AD}, {NULL, 0}};

static const struct hvt_exit_status exits[] = {{0, "fine"}, {USAGE, "bad arguments"}, {0, NULL}};

struct result {
	int status;
	char *out, *err;
	size_t out_len, err_len;
};

static struct values v;

/* Parses the NULL-terminated arguments after "prog" with a table that has one entry of every type. */
static struct result parse(bool operand_required, ...)
{
	const struct hvt_option opts[] = {
	    HVT_OPT_FLAG('q', "quiet", &v.quiet, "say less"),
	    HVT_OPT_FLAG('v', "verbose", &v.verbose, "say more"),
	    HVT_OPT_FLAG_OFF(0, "no-pages", &v.pages, "leave the pages out"),
	    HVT_OPT_STRING(0, "name", &v.name, "NAME", "at most 8 bytes", .max = 8),
	    HVT_OPT_PATH('o', "output", &v.file, "FILE", "where to write\nsecond line of help"),
	    HVT_OPT_INT('n', "count", &v.count, -5, 10, "N", "from -5 to 10"),
	    HVT_OPT_INT(0, "small", &v.small, 1, 4000000000, "N", "an unsigned"),
	    HVT_OPT_INT(0, "positive", &v.big, 1, INT64_MAX, "N", "at least one"),
	    HVT_OPT_CPU(0, "cpu", &v.cpu, "CPU", "a CPU"),
	    HVT_OPT_DURATION(0, "interval", &v.interval, 1000000, "DUR", "at least 1ms"),
	    HVT_OPT_SIZE(0, "size", &v.size, 1 << 20, 4ull << 30, 0, "SIZE", "1M to 4G"),
	    HVT_OPT_SIZE(0, "page-size", &v.pages_size, 4096, 0, 4096, "SIZE", "whole 4 KiB pages"),
	    HVT_OPT_CHOICE(0, "mode", &v.mode, modes, "MODE", "auto, dirty-log or ad"),
	    HVT_OPT_HEADING("More:"),
	    HVT_OPT_CALLBACK('c', "call", &v, remember, "X", "repeatable"),
	    HVT_OPT_OPERAND(&v.first, "FIRST", "the first", .required = operand_required),
	    HVT_OPT_OPERAND(&v.second, "SECOND", "the second"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline c = {
	    .prog = "prog sub",
	    .synopsis = "[options] FIRST [SECOND]",
	    .about = "About it.",
	    .options = opts,
	    .notes = "Notes.",
	    .exits = exits,
	    .usage_status = USAGE,
	};
	char *argv[32] = {"sub"}, *copy[32];
	int argc = 1;
	struct result r;
	FILE *out, *err;
	va_list ap;

	va_start(ap, operand_required);
	for (char *a; (a = va_arg(ap, char *));)
		argv[argc++] = a;
	va_end(ap);
	memcpy(copy, argv, sizeof(argv));
	v = (struct values){.cpu = -1, .pages = true};
	out = open_memstream(&r.out, &r.out_len);
	err = open_memstream(&r.err, &r.err_len);
	r.status = hvt_opts_parse_to(&c, argc, argv, out, err);
	fclose(out);
	fclose(err);
	assert_memory_equal(copy, argv, sizeof(argv)); /* argv is left as it was */
	return r;
}

static void done(struct result *r)
{
	free(r->out);
	free(r->err);
}

/* Expects a refusal whose whole message is `msg`. */
#define REFUSED(msg, ...)                                                                                    \
	do {                                                                                                 \
		struct result r_ = parse(false, __VA_ARGS__, NULL);                                          \
		assert_int_equal(r_.status, USAGE);                                                          \
		assert_string_equal(r_.err, msg);                                                            \
		done(&r_);                                                                                   \
	} while (0)

/* Expects the arguments to parse, with nothing said. */
#define ACCEPTED(...)                                                                                        \
	do {                                                                                                 \
		struct result r_ = parse(false, __VA_ARGS__, NULL);                                          \
		assert_string_equal(r_.err, "");                                                             \
		assert_int_equal(r_.status, HVT_OPTS_RUN);                                                   \
		done(&r_);                                                                                   \
	} while (0)

static void test_flags(void **state)
{
	(void)state;
	ACCEPTED("-q");
	assert_true(v.quiet);
	assert_false(v.verbose);
	ACCEPTED("-qv");
	assert_true(v.quiet && v.verbose);
	ACCEPTED("--verbose", "--no-pages");
	assert_true(v.verbose);
	assert_false(v.pages);
	ACCEPTED("--verb"); /* a unique prefix */
	assert_true(v.verbose);
}

static void test_strings_and_paths(void **state)
{
	(void)state;
	ACCEPTED("--name", "abcdefgh", "-o", "-");
	assert_string_equal(v.name, "abcdefgh");
	assert_string_equal(v.file, "-");
	ACCEPTED("-oout.txt");
	assert_string_equal(v.file, "out.txt");
	ACCEPTED("--output=x=y");
	assert_string_equal(v.file, "x=y");
	REFUSED("prog sub: --name 'abcdefghi': longer than 8 bytes\n", "--name", "abcdefghi");
	REFUSED("prog sub: --output '': not a file name\n", "--output", "");
}

static void test_integers(void **state)
{
	(void)state;
	ACCEPTED("-n", "-5", "--small", "4000000000", "--positive", "9223372036854775807");
	assert_int_equal(v.count, -5);
	assert_int_equal(v.small, 4000000000u);
	assert_int_equal(v.big, INT64_MAX);
	ACCEPTED("-n10");
	assert_int_equal(v.count, 10);
	REFUSED("prog sub: --count '11': not a number from -5 to 10\n", "-n", "11");
	REFUSED("prog sub: --count '-6': not a number from -5 to 10\n", "--count=-6");
	for (const char *const *bad = (const char *const[]){"5x", "", "+5", " 5", "0x5", "1e3", NULL}; *bad;
	     bad++) {
		struct result r = parse(false, "--count", *bad, NULL);

		assert_int_equal(r.status, USAGE);
		assert_non_null(strstr(r.err, "not a number from -5 to 10"));
		done(&r);
	}
	REFUSED("prog sub: --positive '0': not a positive number\n", "--positive", "0");
	REFUSED("prog sub: --positive '9223372036854775808': not a positive number\n", "--positive",
		"9223372036854775808");
}

static void test_cpus(void **state)
{
	(void)state;
	ACCEPTED("--cpu", "0");
	assert_int_equal(v.cpu, 0);
	ACCEPTED("--cpu", "1023");
	assert_int_equal(v.cpu, 1023);
	REFUSED("prog sub: --cpu '1024': not a CPU number\n", "--cpu", "1024");
	REFUSED("prog sub: --cpu '-1': not a CPU number\n", "--cpu", "-1");
	REFUSED("prog sub: --cpu 'two': not a CPU number\n", "--cpu", "two");
}

static void test_durations(void **state)
{
	(void)state;
	ACCEPTED("--interval", "10ms");
	assert_int_equal(v.interval, 10000000);
	ACCEPTED("--interval", "1ms");
	assert_int_equal(v.interval, 1000000);
	REFUSED("prog sub: --interval '999us': not a duration of at least 1ms (e.g. 10ms, 1.5s, 5m)\n",
		"--interval", "999us");
	REFUSED("prog sub: --interval '5x': not a duration of at least 1ms (e.g. 10ms, 1.5s, 5m)\n",
		"--interval", "5x");
}

static void test_sizes(void **state)
{
	(void)state;
	ACCEPTED("--size", "2M", "--page-size", "8K");
	assert_int_equal(v.size, 2ull << 20);
	assert_int_equal(v.pages_size, 8192);
	ACCEPTED("--size", "4GiB");
	assert_int_equal(v.size, 4ull << 30);
	REFUSED("prog sub: --size '4097M': more than 4G\n", "--size", "4097M");
	REFUSED("prog sub: --size '0': not a size (e.g. 4K, 512M, 2G)\n", "--size", "0");
	REFUSED("prog sub: --size 'big': not a size (e.g. 4K, 512M, 2G)\n", "--size", "big");
	REFUSED("prog sub: --page-size '1000': not a whole number of 4 KiB pages\n", "--page-size", "1000");
	REFUSED("prog sub: --size '1023K': less than 1M\n", "--size", "1023K");
}

static void test_choices(void **state)
{
	(void)state;
	ACCEPTED("--mode", "ad");
	assert_int_equal(v.mode, MODE_AD);
	ACCEPTED("--mode=dirty-log");
	assert_int_equal(v.mode, MODE_DIRTY);
	REFUSED("prog sub: --mode 'fast': expected auto, dirty-log or ad\n", "--mode", "fast");
}

static void test_callbacks(void **state)
{
	(void)state;
	ACCEPTED("-c", "one", "--call", "two", "-cthree");
	assert_int_equal(v.nseen, 3);
	assert_string_equal(v.seen[0], "one");
	assert_string_equal(v.seen[1], "two");
	assert_string_equal(v.seen[2], "three");
	REFUSED("prog sub: --call 'bad': the callback refuses it\n", "--call", "bad");
}

static void test_operands(void **state)
{
	struct result r;

	(void)state;
	ACCEPTED("a", "-q", "b"); /* options may come between operands */
	assert_string_equal(v.first, "a");
	assert_string_equal(v.second, "b");
	assert_true(v.quiet);
	ACCEPTED("-", "--", "-q"); /* "-" is an operand; after "--" everything is */
	assert_string_equal(v.first, "-");
	assert_string_equal(v.second, "-q");
	assert_false(v.quiet);
	REFUSED("prog sub: unexpected argument 'c'\n", "a", "b", "c"); /* two operands: no "one" */
	r = parse(true, "-q", NULL);
	assert_int_equal(r.status, USAGE);
	assert_string_equal(r.err, "prog sub: FIRST is required\n");
	done(&r);
	r = parse(true, "x", NULL);
	assert_int_equal(r.status, HVT_OPTS_RUN);
	done(&r);
}

/* OPERANDS takes every argument after the single operands, in order, up to its limit. */
static struct result parse_several(struct hvt_operands *ops, ...)
{
	const struct hvt_option opts[] = {
	    HVT_OPT_FLAG('q', "quiet", &v.quiet, "say less"),
	    HVT_OPT_OPERAND(&v.first, "KIND", "the kind", .required = true),
	    HVT_OPT_OPERANDS(ops, 3, "TRACE", "the traces", .required = true),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline c = {.prog = "prog sub", .options = opts, .usage_status = USAGE};
	char *argv[32] = {"sub"};
	int argc = 1;
	struct result r;
	FILE *out, *err;
	va_list ap;

	va_start(ap, ops);
	for (char *a; (a = va_arg(ap, char *));)
		argv[argc++] = a;
	va_end(ap);
	v = (struct values){0};
	*ops = (struct hvt_operands){0};
	out = open_memstream(&r.out, &r.out_len);
	err = open_memstream(&r.err, &r.err_len);
	r.status = hvt_opts_parse_to(&c, argc, argv, out, err);
	fclose(out);
	fclose(err);
	return r;
}

static void test_several_operands(void **state)
{
	struct hvt_operands ops;
	struct result r;

	(void)state;
	r = parse_several(&ops, "wss", "a.hvt", "-q", "b.hvt", "c.hvt", NULL);
	assert_int_equal(r.status, HVT_OPTS_RUN);
	assert_string_equal(v.first, "wss");
	assert_int_equal(ops.n, 3);
	assert_string_equal(ops.v[0], "a.hvt");
	assert_string_equal(ops.v[1], "b.hvt");
	assert_string_equal(ops.v[2], "c.hvt");
	assert_true(v.quiet);
	done(&r);
	r = parse_several(&ops, "wss", "a", "b", "c", "d", NULL);
	assert_int_equal(r.status, USAGE);
	assert_string_equal(r.err, "prog sub: TRACE 'd': more than 3 TRACEs\n");
	done(&r);
	r = parse_several(&ops, "wss", NULL);
	assert_int_equal(r.status, USAGE);
	assert_string_equal(r.err, "prog sub: TRACE is required\n");
	done(&r);
	r = parse_several(&ops, "wss", "", NULL);
	assert_int_equal(r.status, USAGE);
	assert_string_equal(r.err, "prog sub: TRACE '': not a file name\n");
	done(&r);
	r = parse_several(&ops, "--help", NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "  TRACE...  "));
	done(&r);
}

/* A command of one operand names the value it took when given a second. */
static void test_one_operand_only(void **state)
{
	const char *trace = NULL;
	const struct hvt_option opts[] = {HVT_OPT_OPERAND(&trace, "TRACE", "the trace"), HVT_OPT_END};
	const struct hvt_cmdline c = {.prog = "prog sub", .options = opts, .usage_status = USAGE};
	char *argv[] = {"sub", "a.hvt", "b.hvt"};
	char *err;
	size_t len;
	FILE *f = open_memstream(&err, &len);

	(void)state;
	assert_int_equal(hvt_opts_parse_to(&c, 3, argv, stdout, f), USAGE);
	fclose(f);
	assert_string_equal(
	    err, "prog sub: unexpected argument 'b.hvt': TRACE is 'a.hvt' already (one TRACE only)\n");
	free(err);
}

static void test_malformed_command_lines(void **state)
{
	static const char *const cases[][2] = {
	    {"--bogus", "prog sub: --bogus is not an option\n"},
	    {"-x", "prog sub: -x is not an option\n"},
	    {"--interval", "prog sub: --interval needs a value (DUR)\n"},
	    {"-n", "prog sub: --count needs a value (N)\n"},
	    {"--p", "prog sub: --p is ambiguous; it could be --positive --page-size\n"},
	    {"--quiet=yes", "prog sub: --quiet takes no value\n"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct result r = parse(false, cases[i][0], NULL);
		size_t n = strlen(cases[i][1]);

		assert_int_equal(r.status, USAGE);
		/* the problem, then the usage on the same stream */
		assert_true(r.err_len > n);
		assert_memory_equal(r.err, cases[i][1], n);
		assert_non_null(strstr(r.err + n, "\nusage: prog sub [options] FIRST [SECOND]\n"));
		assert_string_equal(r.out, "");
		done(&r);
	}
	/* The first error stops the parse: later arguments are not looked at. */
	REFUSED("prog sub: --cpu 'x': not a CPU number\n", "--cpu", "x", "--bogus");
}

static void test_help(void **state)
{
	static const char *const lines[] = {
	    "usage: prog sub [options] FIRST [SECOND]\n\nAbout it.\n\n"
	    "  FIRST                 the first\n  SECOND                the second\n  -q, --quiet           say less\n",
	    "\n      --no-pages        leave the pages out\n",
	    "\n  -o, --output FILE     where to write\n                        second line of help\n",
	    "\n  -n, --count N         from -5 to 10\n",
	    "\n      --interval DUR    at least 1ms\n",
	    "\n      --mode MODE       auto, dirty-log or ad\n",
	    "\n\nMore:\n  -c, --call X          repeatable\n  -h, --help            this text\n\nNotes.\n",
	    "\nExit status:\n  0  fine\n  7  bad arguments\n",
	};
	const char *const asks[] = {"-h", "--help", "--he"};

	(void)state;
	for (size_t k = 0; k < 3; k++) {
		/* Help wins over a missing required operand, but not over an earlier bad value. */
		struct result r = parse(true, "-q", asks[k], NULL);

		assert_int_equal(r.status, 0);
		assert_string_equal(r.err, "");
		for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
			if (!strstr(r.out, lines[i]))
				fail_msg("--help lacks \"%s\"; it is:\n%s", lines[i], r.out);
		done(&r);
	}
	REFUSED("prog sub: --cpu 'x': not a CPU number\n", "--cpu", "x", "--help");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flags),
	    cmocka_unit_test(test_strings_and_paths),
	    cmocka_unit_test(test_integers),
	    cmocka_unit_test(test_cpus),
	    cmocka_unit_test(test_durations),
	    cmocka_unit_test(test_sizes),
	    cmocka_unit_test(test_choices),
	    cmocka_unit_test(test_callbacks),
	    cmocka_unit_test(test_operands),
	    cmocka_unit_test(test_several_operands),
	    cmocka_unit_test(test_one_operand_only),
	    cmocka_unit_test(test_malformed_command_lines),
	    cmocka_unit_test(test_help),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
