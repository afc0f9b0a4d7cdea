// SPDX-License-Identifier: MIT
/*
 * hvmtrace report: the per-interval table of a trace, its totals and the analyses of docs/analyses.md
 * (working sets, write frequency, page classes, phases, channel bandwidth), as text or JSON, over a
 * selection of intervals (--from/--to) and guest pages (--range) that every reading command takes alike
 * (select.h); --html writes the same selection as an interactive page. Totals are computed over
 * guest-physical page numbers, so they stay right across layout changes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "hvmtrace/error.h"
#include "hvmtrace/files.h"
#include "hvmtrace/options.h"
#include "report/report.h"
#include "report/report_energy.h"
#include "report/report_html.h"
#include "report/report_owners.h"
#include "attribute/owners_interval.h"
#include "hvmtrace/trace_input.h"

/* A fraction 0 .. 1, or a percentage with '%'. */
static int opt_fraction(const struct hvt_option *opt, const char *arg, char *problem, size_t len)
{
	char *end;
	double v = strtod(arg, &end);

	if (end != arg && *end == '%' && !end[1]) {
		v /= 100;
		end++;
	}
	if (end == arg || *end || !isfinite(v) || v < 0 || v > 1) {
		snprintf(problem, len, "'%s' is not a fraction from 0 to 1 (or a percentage such as 50%%)",
			 arg);
		return -1;
	}
	*(double *)opt->value = v;
	return 0;
}

static FILE *open_output(const char *path)
{
	FILE *f;

	if (!path || !strcmp(path, "-"))
		return stdout;
	f = fopen(path, "we");
	if (!f)
		fprintf(stderr, "hvmtrace report: cannot create %s: %s\n", path, strerror(errno));
	return f;
}

/* No output may be a trace being read: writing it would destroy what is read. */
static int check_outputs(const struct hvt_operands *traces, const char *path, const char *option)
{
	if (!path || !strcmp(path, "-"))
		return 0;
	for (size_t i = 0; i < traces->n; i++)
		if (hvt_same_file(path, traces->v[i])) {
			fprintf(stderr,
				"hvmtrace report: %s %s is a trace being read; refusing to overwrite it\n",
				option, path);
			return TRACE_USAGE;
		}
	return 0;
}

/* What a comparison of several runs does not do: one line naming it, exit 2. */
static int compare_refusals(const struct report_opts *o, const char *html, size_t n)
{
	const char *one = o->by                          ? "--by"
			  : html                         ? "--html"
			  : o->energy || o->energy_model ? "--energy"
			  : o->pages                     ? "--pages"
			  : o->regions                   ? "--regions"
			  : o->histogram                 ? "--histogram"
							 : NULL;

	if (!one)
		return 0;
	fprintf(stderr,
		"hvmtrace report: %s takes one trace (%zu given); several are compared by their totals\n",
		one, n);
	return TRACE_USAGE;
}

int cmd_report(int argc, char **argv)
{
	static const struct hvt_exit_status exits[] = {
	    {TRACE_OK, "the report is complete"},
	    {TRACE_OUTPUT_FAILED, "writing the output failed"},
	    {TRACE_USAGE,
	     "bad arguments, TRACE is not a trace, the selection holds nothing, or the output cannot "
	     "be created"},
	    {TRACE_INCOMPLETE, "the trace is incomplete (the report covers everything before the damage)"},
	    {0, NULL},
	};
	struct report rp = {.path = "hvmtrace.hvt"};
	struct hvt_operands traces = {0};
	struct report_opts *o = &rp.o;
	const char *output = NULL, *html = NULL;
	int window = 0, span = 0; /* window 0: not given */
	static const struct hvt_opt_choice bys[] = {
	    {"process", HVT_OWN_PROCESS}, {"cgroup", OWNERS_BY_CGROUP}, {"kind", HVT_OWN_KIND}, {NULL}};
	struct hvt_err err = {{0}};
	char why[512] = "";
	FILE *out;
	int status;

	o->table = true;
	o->top = 10;
	o->th = hvt_class_defaults;
	o->ph = hvt_phase_defaults;
	span = (int)o->ph.span;
	const struct hvt_option opts[] = {
	    HVT_OPT_OPERANDS(&traces, HVT_OPERANDS_MAX, "TRACE",
			     "the trace to read (default hvmtrace.hvt); several: the runs side by side"),
	    HVT_OPT_FLAG_OFF(0, "totals-only", &o->table, "no per-interval table"),
	    HVT_OPT_FLAG(0, "json", &o->json, "everything as one JSON object (null: not available)"),
	    HVT_OPT_PATH('o', "output", &output, "FILE", "write the report to FILE, not standard output"),
	    HVT_OPT_PATH(0, "html", &html, "FILE",
			 "write the interactive memory display instead: one self-contained HTML file"),
	    HVT_SELECT_OPTIONS(&o->sel),
	    HVT_OPT_HEADING("Analyses"),
	    HVT_OPT_INT(0, "window", &window, 1, 65535, "N", "intervals per sliding window (default 10)"),
	    HVT_OPT_FLAG(0, "no-windows", &o->no_windows,
			 "leave out the sliding windows: the per-page counts alone are faster to sweep"),
	    HVT_OPT_FLAG(0, "histogram", &o->histogram, "the whole write-frequency histogram"),
	    HVT_OPT_FLAG(0, "pages", &o->pages, "each page's class (runs of pages of one class)"),
	    HVT_OPT_FLAG(0, "regions", &o->regions, "each 2 MiB region's class"),
	    HVT_OPT_CALLBACK(0, "write-heavy", &o->th.write_heavy, opt_fraction, "F",
			     "write-heavy: written in at least F of the intervals (default 0.5)"),
	    HVT_OPT_CALLBACK(0, "read-mostly", &o->th.read_mostly_min, opt_fraction, "F",
			     "read-mostly: accessed in at least F of the intervals (default 0.25)"),
	    HVT_OPT_CALLBACK(
		0, "read-mostly-write", &o->th.read_mostly_write, opt_fraction, "F",
		"... and written in at most F of the intervals it was accessed in (default 0.1)"),
	    HVT_OPT_CALLBACK(0, "cold", &o->th.cold, opt_fraction, "F",
			     "cold: touched in fewer than F of the intervals (default 0.05)"),
	    HVT_OPT_INT(0, "phase-span", &span, 1, 1000, "N",
			"phases: compare the means of N intervals before and after (default 3)"),
	    HVT_OPT_CALLBACK(0, "phase-change", &o->ph.rel, opt_fraction, "F",
			     "phases: a level change of at least F of the larger mean (default 0.3)"),
	    HVT_OPT_HEADING("By owner: the guest's processes, cgroups or page kinds (docs/attribution.md)"),
	    HVT_OPT_CHOICE(0, "by", &o->by, bys, "process|cgroup|kind",
			   "written and accessed pages per owner per interval, the top writers and each "
			   "owner's pages per class; owners from the trace's snapshots or --owners"),
	    HVT_OPT_PATH(0, "owners", &o->owners_file, "SNAPSHOT",
			 "--by with the owners of hvmtrace-guest's file SNAPSHOT, for every interval"),
	    HVT_OPT_INT(0, "snapshot", &o->snapshot, 0, HVT_OWN_MAX_OWNERS, "N",
			"which snapshot of SNAPSHOT, from 0 (default 0)"),
	    HVT_OPT_INT(0, "top", &o->top, 1, 1000000, "N", "--by: the top writers shown (default 10)"),
	    HVT_OPT_HEADING("Energy what-if (a model, docs/energy.md)"),
	    HVT_OPT_FLAG(
		0, "energy", &o->energy,
		"the run's memory energy as DRAM, as STT-MRAM or PCM, and with the write-heavy pages in "
		"DRAM and the rest in MRAM"),
	    HVT_OPT_PATH(0, "energy-model", &o->energy_model, "FILE",
			 "--energy with the figures of this JSON file in place of the defaults"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace report",
	    .synopsis = "[options] [TRACE...]",
	    .options = opts,
	    .notes = "With DRAM bandwidth in the trace, the table has read_MBps/write_MBps columns\n"
		     "(total_MBps for sources that do not split reads and writes, such as resctrl);\n"
		     "MB/s = 10^6 bytes/s. Every analysis is described in docs/analyses.md.",
	    .exits = exits,
	    .usage_status = TRACE_USAGE,
	};

	status = hvt_opts_parse(&cmd, argc, argv);
	if (status != HVT_OPTS_RUN)
		return status;
	if (traces.n)
		rp.path = traces.v[0];
	else
		traces.v[traces.n++] = rp.path;
	if ((status = check_outputs(&traces, output, "-o")) ||
	    (status = check_outputs(&traces, html, "--html")))
		return status;
	if (traces.n > 1 && (status = compare_refusals(o, html, traces.n)))
		return status;
	if (html && (o->energy || o->energy_model)) {
		fprintf(stderr,
			"hvmtrace report: --energy is part of the text and JSON report, not of --html\n");
		return TRACE_USAGE;
	}
	if (o->owners_file && !o->by) {
		fprintf(stderr, "hvmtrace report: --owners is for --by, which is not asked for\n");
		return TRACE_USAGE;
	}
	if (html)
		return report_html(rp.path, &o->sel, html,
				   &(struct report_html_owners){o->by, o->owners_file, o->snapshot});
	if (window && o->no_windows) {
		fprintf(stderr,
			"hvmtrace report: --window sizes the sliding windows that --no-windows leaves out\n");
		return TRACE_USAGE;
	}
	o->window = window ? (uint32_t)window : HVT_DEFAULT_WINDOW;
	o->ph.span = (uint32_t)span;
	o->energy |= o->energy_model != NULL;
	if (traces.n > 1)
		return report_compare(&traces, o, output);
	if (o->energy && o->sel.gfns_given) {
		fprintf(stderr,
			"hvmtrace report: --energy covers the whole guest: it cannot be combined with "
			"--range\n");
		return TRACE_USAGE;
	}
	if (o->energy && report_energy_init(&rp, o->energy_model, &err)) {
		fprintf(stderr, "hvmtrace report: %s\n", err.msg);
		return TRACE_USAGE;
	}
	rp.r = trace_input_open("report", rp.path);
	if (!rp.r) {
		free(rp.energy);
		return TRACE_USAGE;
	}
	if (hvt_analysis_load(&rp.a, rp.r, &o->sel,
			      &(struct hvt_analysis_opts){.window = o->window, .no_windows = o->no_windows},
			      &err)) {
		fprintf(stderr, "hvmtrace report: %s: %s\n", rp.path, err.msg);
		hvt_trace_reader_close(rp.r);
		free(rp.energy);
		return TRACE_USAGE;
	}
	if (report_compute(&rp, why, sizeof(why))) {
		fprintf(stderr, "hvmtrace report: %s: %s\n", rp.path, why);
		status = TRACE_USAGE;
		goto out;
	}
	if (o->by && report_owners_compute(&rp)) {
		status = TRACE_USAGE;
		goto out;
	}
	if (rp.energy && report_energy_compute(&rp, &err)) {
		fprintf(stderr, "hvmtrace report: %s: %s\n", rp.path, err.msg);
		status = TRACE_USAGE;
		goto out;
	}
	out = open_output(output);
	if (!out) {
		status = TRACE_USAGE;
		goto out;
	}
	if (o->json)
		report_print_json(out, &rp);
	else
		report_print_text(out, &rp);
	status = 0;
	if (out != stdout ? fclose(out) : fflush(stdout)) {
		fprintf(stderr, "hvmtrace report: writing %s: %s\n", output ? output : "standard output",
			strerror(errno));
		status = TRACE_OUTPUT_FAILED;
	}
	if (!status && report_say_incomplete(&rp))
		status = TRACE_INCOMPLETE;
out:
	report_free(&rp);
	hvt_trace_reader_close(rp.r);
	return status;
}
