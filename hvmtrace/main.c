// SPDX-License-Identifier: MIT
/* hvmtrace: hypervisor-level tracing of guest memory. Dispatches to the subcommands. */
#include "commands.h"
#include "hvmtrace/subcommand.h"
#include "hvmtrace/version.h"

static const struct hvt_subcommand commands[] = {
    {"record", cmd_record, "attach to a VMM and record written/accessed pages per interval"},
    {"report", cmd_report, "per-interval table and totals of a trace"},
    {"export", cmd_export,
     "convert a trace: JSON Lines, CSV, damo (DAMON) input, pcm-memory CSV, raw bitmaps"},
    {"plot", cmd_plot, "draw a trace: heatmap, bandwidth, working set, write concentration (PNG/SVG)"},
    {"bw", cmd_bw, "live DRAM read/write bandwidth per memory channel and socket"},
    {"virt-xml", cmd_virt_xml,
     "make a libvirt domain traced, or check its tracing request against this host"},
    {"libvirt-hook", cmd_libvirt_hook, "libvirt's qemu hook: the tracer's lifecycle with a domain"},
    {"top", cmd_top, "live view of running recorders (record --metrics): pages/s, WSS, MB/s, CPU"},
    {"score", cmd_score,
     "how wrong DAMON (or sampling) is against the trace: precision, recall, hot set, WSS"},
    {"attribute", cmd_attribute,
     "whose pages: written and accessed pages per guest process or page kind (hvmtrace-guest)"},
    {"doctor", cmd_doctor, "what this host can trace, with evidence and fixes; proves its counters"},
};

int main(int argc, char **argv)
{
	return hvt_subcommand_main("hvmtrace", "hvmtrace " HVT_VERSION, commands,
				   sizeof(commands) / sizeof(commands[0]), argc, argv);
}
