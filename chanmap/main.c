// SPDX-License-Identifier: MIT
/* chanmap: which host-physical memory belongs to which DRAM channel. Dispatches to the subcommands. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "hvmtrace/version.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *what;
} commands[] = {
    {"probe", cmd_probe, "find each channel's physical ranges with the memory-controller counters"},
    {"show", cmd_show, "print a channel map as a table"},
    {"reserve", cmd_reserve, "print the memmap= kernel argument that reserves a channel's memory"},
    {"verify", cmd_verify, "check after reboot that the reservation is Reserved, not busy and mappable"},
};

void chanmap_format_size(uint64_t bytes, char *buf, unsigned len)
{
	if (bytes >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", bytes / (double)(1ull << 30));
	else if (bytes >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", bytes / (double)(1ull << 20));
	else
		snprintf(buf, len, "%" PRIu64 " KiB", bytes >> 10);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: chanmap <command> [options]     (chanmap <command> --help for its options)\n\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].what);
	fprintf(f, "\nchanmap (hvmtrace %s); the map's format: docs/chanmap.md\n", HVT_VERSION);
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
		printf("chanmap (hvmtrace %s)\n", HVT_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "chanmap: '%s' is not a command\n\n", argv[1]);
	usage(stderr);
	return 2;
}
