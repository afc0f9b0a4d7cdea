/* SPDX-License-Identifier: MIT */
/* perf-style programs: `PROG <command> [options]`, one function per command. */
#ifndef HVMTRACE_SUBCOMMAND_H
#define HVMTRACE_SUBCOMMAND_H

#include <stddef.h>

struct hvt_subcommand {
	const char *name;
	int (*fn)(int argc, char **argv); /* gets argv from the command's name on */
	const char *what;                 /* one line for the usage text */
};

/*
 * Runs the command argv[1] names, or handles --help/-h/help (exit 0), --version, a missing or unknown
 * command (usage on stderr, 2). `footer` ends the usage text ("hvmtrace 0.1.0").
 */
int hvt_subcommand_main(const char *prog, const char *footer, const struct hvt_subcommand *cmds, size_t n,
			int argc, char **argv);

#endif
