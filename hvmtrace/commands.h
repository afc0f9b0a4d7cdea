/* SPDX-License-Identifier: MIT */
/* The subcommands of `hvmtrace`, perf-style: one file each. */
#ifndef HVT_CMD_COMMANDS_H
#define HVT_CMD_COMMANDS_H

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_bw(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_virt_xml(int argc, char **argv);
int cmd_libvirt_hook(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_score(int argc, char **argv);
int cmd_attribute(int argc, char **argv);

#endif
