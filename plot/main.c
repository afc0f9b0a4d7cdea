// SPDX-License-Identifier: MIT
/*
 * hvmtrace-plot, run as `hvmtrace plot KIND TRACE -o FILE.png|.svg`: pictures of a trace, drawn with cairo
 * (docs/plots.md). A program of its own so that cairo and the libraries it brings stay out of `hvmtrace`,
 * whose `record` locks every page it maps (mlockall) within RLIMIT_MEMLOCK.
 */
#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <stdio.h>

#include "plot.h"
#include "plot_owners.h"
#include "hvmtrace/trace_input.h"

enum plot_kind { PLOT_HEATMAP, PLOT_BW, PLOT_WSS, PLOT_CDF };

int main(int argc, char **argv)
{
	static const struct hvt_opt_choice kinds[] = {
	    {"heatmap", PLOT_HEATMAP}, {"bw", PLOT_BW}, {"wss", PLOT_WSS}, {"cdf", PLOT_CDF}, {NULL, 0},
	};
	static const struct hvt_exit_status exits[] = {
	    {TRACE_OK, "the picture is written"},
	    {TRACE_OUTPUT_FAILED, "writing the picture failed"},
	    {TRACE_USAGE, "bad arguments; TRACE is not a trace, holds no interval, or nothing is selected"},
	    {TRACE_INCOMPLETE, "the trace is incomplete (the picture shows everything before the damage)"},
	    {0, NULL},
	};
	int (*const draw[])(const struct plot_args *) = {plot_heatmap, plot_bw, plot_wss, plot_cdf};
	static const struct hvt_opt_choice colour_bys[] = {{"owner", 1}, {NULL, 0}};
	static const struct hvt_opt_choice bys[] = {
	    {"process", 0},
	    {"cgroup", 1},
	    {"kind", 2},
	    {NULL, 0},
	};
	struct plot_args a = {.width = 1200, .height = 720, .top = 6};
	int kind = -1, colour_by = 0, by = -1;
	const struct hvt_option opts[] = {
	    HVT_OPT_CHOICE(0, NULL, &kind, kinds, "KIND", "heatmap, bw, wss or cdf", .required = true),
	    HVT_OPT_OPERANDS(&a.traces, HVT_OPERANDS_MAX, "TRACE",
			     "the trace to draw; wss and cdf: several, the runs side by side",
			     .required = true),
	    HVT_OPT_PATH('o', "output", &a.out, "FILE", "the picture: FILE.png or FILE.svg",
			 .required = true),
	    HVT_OPT_INT(0, "width", &a.width, 480, 8192, "PX", "picture width (default 1200)"),
	    HVT_OPT_INT(0, "height", &a.height, 320, 8192, "PX", "picture height (default 720)"),
	    HVT_OPT_HEADING("Owners (heatmap; docs/attribution.md)"),
	    HVT_OPT_CHOICE(0, "color-by", &colour_by, colour_bys, "owner",
			   "colour each cell by the owner writing most of its pages"),
	    HVT_OPT_CHOICE(0, "by", &by, bys, "process|cgroup|kind", "the owners (default process)"),
	    HVT_OPT_INT(0, "top", &a.top, 1, PLOT_OWNERS_TOP_MAX, "N",
			"the top N writers get a hue each, the rest grey (default 6)"),
	    HVT_OPT_PATH(0, "owners", &a.owners, "FILE",
			 "owners from this snapshot file, not the trace's snapshots"),
	    HVT_SELECT_OPTIONS(&a.sel),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace plot",
	    .synopsis = "KIND TRACE... -o FILE.png|FILE.svg [options]",
	    .about = "heatmap: guest-physical address x time, written pages red, accessed-only blue.\n"
		     "bw: DRAM read and write MB/s per channel and in total. wss: pages written and\n"
		     "accessed per interval. cdf: the share of page-writes the most-written pages take.\n"
		     "wss and cdf draw several traces as runs side by side, one colour per run.\n"
		     "heatmap --color-by owner: each cell in the colour of the owner that wrote most of\n"
		     "its pages (from the trace's owners snapshots, through hvmtrace export --by).",
	    .options = opts,
	    .exits = exits,
	    .usage_status = TRACE_USAGE,
	};
	int status = hvt_opts_parse(&cmd, argc, argv);

	if (status != HVT_OPTS_RUN)
		return status;
	a.trace = a.traces.v[0];
	if (a.traces.n > 1 && (kind == PLOT_HEATMAP || kind == PLOT_BW)) {
		fprintf(stderr, "hvmtrace plot: %s draws one trace (%zu given); wss and cdf draw several\n",
			kinds[kind].name, a.traces.n);
		return TRACE_USAGE;
	}
	if (kind != PLOT_HEATMAP && colour_by) {
		fprintf(stderr, "hvmtrace plot: --color-by owner colours a heatmap, not %s\n",
			kinds[kind].name);
		return TRACE_USAGE;
	}
	if (!colour_by && (by >= 0 || a.owners)) {
		fprintf(stderr, "hvmtrace plot: %s needs --color-by owner\n", by >= 0 ? "--by" : "--owners");
		return TRACE_USAGE;
	}
	a.color_by_owner = colour_by;
	a.by = bys[by < 0 ? 0 : by].name;
	status = draw[kind](&a);
	/* cairo's and fontconfig's caches, so that a leak checker sees only leaks */
	cairo_debug_reset_static_data();
	FcFini();
	return status;
}
