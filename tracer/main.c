// SPDX-License-Identifier: MIT
/* hvmtrace: hypervisor-level tracing of guest memory. Dispatches to the subcommands. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "hvmtrace/version.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *what;
} commands[] = {
    {"record", cmd_record, "attach to a VMM and record written/accessed pages per interval"},
    {"report", cmd_report, "per-interval table and totals of a trace"},
    {"export", cmd_export, "convert a trace to JSON Lines or CSV"},
    {"bw", cmd_bw, "live DRAM read/write bandwidth per memory channel and socket"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: hvmtrace <command> [options]     (hvmtrace <command> --help for its options)\n\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].what);
	fprintf(f, "\nhvmtrace %s\n", HVT_VERSION);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("hvmtrace %s\n", HVT_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "hvmtrace: '%s' is not a command\n\n", argv[1]);
	usage(stderr);
	return 2;
}
