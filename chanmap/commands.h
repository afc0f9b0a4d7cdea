/* SPDX-License-Identifier: MIT */
/* The subcommands of `chanmap`, perf-style: one file each. */
#ifndef CHANMAP_COMMANDS_H
#define CHANMAP_COMMANDS_H

#include <stdint.h>

int cmd_probe(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_reserve(int argc, char **argv);
int cmd_verify(int argc, char **argv);

#define CHANMAP_DEFAULT_MAP "chanmap.json"

#endif
