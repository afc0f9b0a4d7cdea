// SPDX-License-Identifier: MIT
/* chanmap: which host-physical memory belongs to which DRAM channel. Dispatches to the subcommands. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "hvmtrace/subcommand.h"
#include "hvmtrace/version.h"

static const struct hvt_subcommand commands[] = {
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

int main(int argc, char **argv)
{
	return hvt_subcommand_main("chanmap",
				   "chanmap (hvmtrace " HVT_VERSION "); the map's format: docs/chanmap.md",
				   commands, sizeof(commands) / sizeof(commands[0]), argc, argv);
}
