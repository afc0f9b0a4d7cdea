// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>

#include "hvmtrace/subcommand.h"
#include "hvmtrace/version.h"

static void usage(FILE *f, const char *prog, const char *footer, const struct hvt_subcommand *cmds, size_t n)
{
	int width = 8; /* the names' column fits the longest */

	for (size_t i = 0; i < n; i++)
		if ((int)strlen(cmds[i].name) > width)
			width = (int)strlen(cmds[i].name);
	fprintf(f, "usage: %s <command> [options]     (%s <command> --help for its options)\n\n", prog, prog);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-*s %s\n", width, cmds[i].name, cmds[i].what);
	fprintf(f, "\n%s\n", footer);
}

int hvt_subcommand_main(const char *prog, const char *footer, const struct hvt_subcommand *cmds, size_t n,
			int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr, prog, footer, cmds, n);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout, prog, footer, cmds, n);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("%s %s\n", prog, HVT_VERSION);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "%s: '%s' is not a command\n\n", prog, argv[1]);
	usage(stderr, prog, footer, cmds, n);
	return 2;
}
