/* SPDX-License-Identifier: MIT */
/*
 * Command lines from a table, in the spirit of perf's parse_options: each command lists its options once,
 * typed (a duration, a size, a CPU, one of some names ...), and gets from that list the parsing, the
 * checking of every value, the error messages ("hvmtrace record: --interval '5x': not a duration ...")
 * and its --help text.
 *
 * Long options take their value as "--name VALUE" or "--name=VALUE" and may be shortened to any unique
 * prefix; short ones as "-x VALUE" or "-xVALUE", and flags bundle ("-qv"). Options and operands may come
 * in any order; "--" ends the options. -h and --help print the help to standard output.
 */
#ifndef HVMTRACE_OPTIONS_H
#define HVMTRACE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum hvt_option_type {
	HVT_OPTION_END,      /* ends the table */
	HVT_OPTION_HEADING,  /* a heading in --help between groups of options */
	HVT_OPTION_FLAG,     /* bool: set to true */
	HVT_OPTION_FLAG_OFF, /* bool: set to false (for a --no-... option) */
	HVT_OPTION_STRING,   /* const char *: any text, at most max bytes when max > 0 */
	HVT_OPTION_PATH, /* const char *: a file name (not empty, shorter than PATH_MAX); "-" is allowed */
	HVT_OPTION_INT,  /* an integer of value_size bytes, from min to max */
	HVT_OPTION_CPU,  /* int: a CPU number, 0 to CPU_SETSIZE - 1 */
	HVT_OPTION_DURATION, /* uint64_t ns, as hvt_parse_duration reads it, at least min */
	HVT_OPTION_SIZE,     /* uint64_t bytes, as hvt_parse_size reads it; a multiple of unit, min to max */
	HVT_OPTION_CHOICE,   /* an integer of value_size bytes: the value of the name given, from choices */
	HVT_OPTION_CALLBACK, /* fn decides */
	HVT_OPTION_OPERANDS, /* struct hvt_operands: every operand from here on, file names, at most max */
};

/* The values of an HVT_OPT_OPERANDS entry, in the order given (a shell glob's order). */
#define HVT_OPERANDS_MAX 16
struct hvt_operands {
	const char *v[HVT_OPERANDS_MAX];
	size_t n;
};

struct hvt_option;

/* One name a choice accepts, and the value it stands for. A list ends with {NULL}. */
struct hvt_opt_choice {
	const char *name;
	int value;
};

/* A callback's verdict on arg: 0, or -1 after writing the problem ("not SIZE$START") into problem. */
typedef int (*hvt_opt_fn)(const struct hvt_option *opt, const char *arg, char *problem, size_t len);

/*
 * One entry of a table. An entry with neither short_name nor long_name is an operand: operands take the
 * arguments that are not options, in table order (types STRING, PATH or CHOICE); more arguments than
 * operands are an error. HVT_OPT_OPERANDS, the last operand entry, takes every argument left (several
 * traces, say). An operand without help is more of the one before it: --help lists it once.
 */
struct hvt_option {
	enum hvt_option_type type;
	char short_name;       /* 0: none */
	const char *long_name; /* without the dashes; NULL: none */
	void *value;           /* where the value goes (CALLBACK: given to fn) */
	size_t value_size;     /* INT and CHOICE: sizeof(*value) */
	const char *arg;       /* the value's name in messages and --help: "DUR", "FILE|-" */
	const char *help;      /* --help text; a '\n' starts a line indented under the first */
	int64_t min, max;      /* INT: the range; DURATION: the least ns; SIZE: bytes (max 0: no limit);
				  STRING: max is the longest length (0: no limit) */
	uint64_t unit;         /* SIZE: the value must be a multiple of this (0: any) */
	const struct hvt_opt_choice *choices; /* CHOICE */
	hvt_opt_fn fn;                        /* CALLBACK */
	bool required;                        /* an error if it is not given */
};

/* Compile-time check that a value pointer has the type the entry writes. */
#define HVT_OPT_PTR(p, type) (1 ? (p) : (type)NULL)

/*
 * The table's entries. The trailing arguments are more designated initializers, such as
 * `.required = true`.
 */
#define HVT_OPT_FLAG(s, l, p, h, ...)                                                                        \
	{                                                                                                    \
		.type = HVT_OPTION_FLAG, .short_name = (s), .long_name = (l),                                \
		.value = HVT_OPT_PTR(p, bool *), .help = (h), __VA_ARGS__                                    \
	}
#define HVT_OPT_FLAG_OFF(s, l, p, h, ...)                                                                    \
	{                                                                                                    \
		.type = HVT_OPTION_FLAG_OFF, .short_name = (s), .long_name = (l),                            \
		.value = HVT_OPT_PTR(p, bool *), .help = (h), __VA_ARGS__                                    \
	}
#define HVT_OPT_STRING(s, l, p, a, h, ...)                                                                   \
	{                                                                                                    \
		.type = HVT_OPTION_STRING, .short_name = (s), .long_name = (l),                              \
		.value = HVT_OPT_PTR(p, const char **), .arg = (a), .help = (h), __VA_ARGS__                 \
	}
#define HVT_OPT_PATH(s, l, p, a, h, ...)                                                                     \
	{                                                                                                    \
		.type = HVT_OPTION_PATH, .short_name = (s), .long_name = (l),                                \
		.value = HVT_OPT_PTR(p, const char **), .arg = (a), .help = (h), __VA_ARGS__                 \
	}
#define HVT_OPT_INT(s, l, p, lo, hi, a, h, ...)                                                              \
	{                                                                                                    \
		.type = HVT_OPTION_INT, .short_name = (s), .long_name = (l), .value = (p),                   \
		.value_size = sizeof(*(p)), .min = (lo), .max = (hi), .arg = (a), .help = (h), __VA_ARGS__   \
	}
#define HVT_OPT_CPU(s, l, p, a, h, ...)                                                                      \
	{                                                                                                    \
		.type = HVT_OPTION_CPU, .short_name = (s), .long_name = (l), .value = HVT_OPT_PTR(p, int *), \
		.arg = (a), .help = (h), __VA_ARGS__                                                         \
	}
#define HVT_OPT_DURATION(s, l, p, least_ns, a, h, ...)                                                       \
	{                                                                                                    \
		.type = HVT_OPTION_DURATION, .short_name = (s), .long_name = (l),                            \
		.value = HVT_OPT_PTR(p, uint64_t *), .min = (least_ns), .arg = (a), .help = (h), __VA_ARGS__ \
	}
#define HVT_OPT_SIZE(s, l, p, lo, hi, multiple, a, h, ...)                                                   \
	{                                                                                                    \
		.type = HVT_OPTION_SIZE, .short_name = (s), .long_name = (l),                                \
		.value = HVT_OPT_PTR(p, uint64_t *), .min = (lo), .max = (hi), .unit = (multiple),           \
		.arg = (a), .help = (h), __VA_ARGS__                                                         \
	}
#define HVT_OPT_CHOICE(s, l, p, names, a, h, ...)                                                            \
	{                                                                                                    \
		.type = HVT_OPTION_CHOICE, .short_name = (s), .long_name = (l), .value = (p),                \
		.value_size = sizeof(*(p)), .choices = (names), .arg = (a), .help = (h), __VA_ARGS__         \
	}
#define HVT_OPT_CALLBACK(s, l, ctx, f, a, h, ...)                                                            \
	{                                                                                                    \
		.type = HVT_OPTION_CALLBACK, .short_name = (s), .long_name = (l), .value = (ctx), .fn = (f), \
		.arg = (a), .help = (h), __VA_ARGS__                                                         \
	}
#define HVT_OPT_OPERAND(p, a, h, ...)                                                                        \
	{                                                                                                    \
		.type = HVT_OPTION_PATH, .value = HVT_OPT_PTR(p, const char **), .arg = (a), .help = (h),    \
		__VA_ARGS__                                                                                  \
	}
#define HVT_OPT_OPERANDS(p, most, a, h, ...)                                                                 \
	{                                                                                                    \
		.type = HVT_OPTION_OPERANDS, .value = HVT_OPT_PTR(p, struct hvt_operands *), .max = (most),  \
		.arg = (a), .help = (h), __VA_ARGS__                                                         \
	}
#define HVT_OPT_HEADING(text)                                                                                \
	{                                                                                                    \
		.type = HVT_OPTION_HEADING, .help = (text)                                                   \
	}
#define HVT_OPT_END                                                                                          \
	{                                                                                                    \
		.type = HVT_OPTION_END                                                                       \
	}

/* An exit status and what it means, for --help. A list ends with {0, NULL}. */
struct hvt_exit_status {
	int code;
	const char *meaning;
};

/* A command's whole command line. */
struct hvt_cmdline {
	const char *prog;     /* "hvmtrace record": names the command in --help and begins every message */
	const char *synopsis; /* what follows "usage: PROG " ("--attach SOCK [options]") */
	const char *about;    /* a paragraph before the options, or NULL */
	const struct hvt_option *options;    /* ends with HVT_OPT_END */
	const char *notes;                   /* a paragraph after the options, or NULL */
	const struct hvt_exit_status *exits; /* listed under "Exit status:", or NULL */
	int usage_status;                    /* the exit status of a usage error */
};

/* hvt_opts_parse's result when the command should run. */
#define HVT_OPTS_RUN (-1)

/*
 * Parses argv[1..argc) (argv[0] is the command's name; argv is not changed) into the table's values.
 * Returns HVT_OPTS_RUN; or the status the command must exit with: 0 after printing --help, or
 * c->usage_status after saying what is wrong (and, for an unknown option or a missing value, the usage on
 * standard error).
 */
int hvt_opts_parse(const struct hvt_cmdline *c, int argc, char **argv);

/* The same, writing --help to out and messages to err. */
int hvt_opts_parse_to(const struct hvt_cmdline *c, int argc, char **argv, FILE *out, FILE *err);

/* Prints the --help text: usage line, about, the options aligned with their help, notes, exit statuses. */
void hvt_opts_usage(const struct hvt_cmdline *c, FILE *f);

#endif
