// SPDX-License-Identifier: MIT
/* chanmap: which host-physical memory belongs to which DRAM channel. Dispatches to the subcommands. */
#include "commands.h"
#include "hvmtrace/subcommand.h"
#include "hvmtrace/version.h"

static const struct hvt_subcommand commands[] = {
    {"probe", cmd_probe, "find each channel's physical ranges with the memory-controller counters"},
    {"show", cmd_show, "print a channel map as a table"},
    {"reserve", cmd_reserve, "print the memmap= kernel argument that reserves a channel's memory"},
    {"verify", cmd_verify, "check after reboot that the reservation is Reserved, not busy and mappable"},
};

int main(int argc, char **argv)
{
	return hvt_subcommand_main("chanmap",
				   "chanmap (hvmtrace " HVT_VERSION "); the map's format: docs/chanmap.md",
				   commands, sizeof(commands) / sizeof(commands[0]), argc, argv);
}
