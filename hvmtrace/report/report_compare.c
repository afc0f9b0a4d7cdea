// SPDX-License-Identifier: MIT
/*
 * hvmtrace report A.hvt B.hvt ...: runs side by side (docs/analyses.md, "Comparing runs"). Each trace is
 * read and computed exactly as `report TRACE` computes it, over the same selection; text puts the main
 * figures in one column per run, --json gives every run's whole report object in the order given. Every
 * trace is read before anything is written, so a bad one costs no half-written comparison.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/options.h"
#include "hvmtrace/trace_input.h"
#include "report.h"

/* The rows of the text comparison. */
enum cmp_row {
	ROW_INTERVALS,
	ROW_TIME,
	ROW_EVER_WRITTEN,
	ROW_PEAK_WRITTEN,
	ROW_MEAN_WRITTEN,
	ROW_MEAN_ACCESSED,
	ROW_PEAK_ACCESSED,
	ROW_PAGE_WRITES,
	ROW_WRITE_HEAVY,
	ROW_READ_MB,
	ROW_WRITE_MB,
	ROW_TOTAL_MB,
	ROW_MEAN_MBPS,
	ROW_COUNT
};

static const struct {
	const char *name;
	int decimals;
} rows[ROW_COUNT] = {
    [ROW_INTERVALS] = {"intervals", 0},
    [ROW_TIME] = {"time covered (s)", 3},
    [ROW_EVER_WRITTEN] = {"distinct pages ever written", 0},
    [ROW_PEAK_WRITTEN] = {"peak written pages/interval", 0},
    [ROW_MEAN_WRITTEN] = {"mean written pages/interval", 1},
    [ROW_MEAN_ACCESSED] = {"mean accessed pages/interval", 1},
    [ROW_PEAK_ACCESSED] = {"peak accessed pages/interval", 0},
    [ROW_PAGE_WRITES] = {"page-writes", 0},
    [ROW_WRITE_HEAVY] = {"write-heavy pages", 0},
    [ROW_READ_MB] = {"DRAM MB read", 1},
    [ROW_WRITE_MB] = {"DRAM MB written", 1},
    [ROW_TOTAL_MB] = {"DRAM MB, reads + writes", 1},
    [ROW_MEAN_MBPS] = {"mean DRAM MB/s, reads + writes", 1},
};

struct run {
	char about[512];          /* "a.hvt: VM 'demo' (qemu, kvm), mode ad, 1.000 s intervals, complete" */
	double v[ROW_COUNT];      /* the figures */
	bool have[ROW_COUNT];     /* false: not available in this trace */
	struct json_object *json; /* --json: the run's whole report */
};

static void set(struct run *r, enum cmp_row k, bool have, double v)
{
	r->have[k] = have;
	r->v[k] = v;
}

/* The figures of one computed report. */
static void figures(struct run *r, const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	bool w = a->n_written, bw = a->bw != HVT_BW_NONE;

	snprintf(r->about, sizeof(r->about), "%s: VM '%s' (%s, %s), mode %s, %.3f s intervals, %s", rp->path,
		 a->meta->vm_name, a->meta->vm_vmm, a->meta->vm_accel, hvt_mode_name(a->meta->mode),
		 a->meta->interval_ns / 1e9, a->complete ? "complete" : "INCOMPLETE");
	set(r, ROW_INTERVALS, true, (double)a->n);
	set(r, ROW_TIME, true, rp->span_ns / 1e9);
	set(r, ROW_EVER_WRITTEN, w, (double)rp->ever);
	set(r, ROW_PEAK_WRITTEN, w, (double)rp->peak_written);
	set(r, ROW_MEAN_WRITTEN, rp->wss[HVT_SET_WRITTEN].n, rp->wss[HVT_SET_WRITTEN].mean);
	set(r, ROW_MEAN_ACCESSED, rp->wss[HVT_SET_ACCESSED].n, rp->wss[HVT_SET_ACCESSED].mean);
	set(r, ROW_PEAK_ACCESSED, rp->wss[HVT_SET_ACCESSED].n, (double)rp->wss[HVT_SET_ACCESSED].max);
	set(r, ROW_PAGE_WRITES, rp->hist, (double)rp->page_writes);
	set(r, ROW_WRITE_HEAVY, w, (double)rp->class_pages[HVT_CLASS_WRITE_HEAVY]);
	set(r, ROW_READ_MB, a->bw == HVT_BW_SPLIT, rp->bw_read / 1e6);
	set(r, ROW_WRITE_MB, a->bw == HVT_BW_SPLIT, rp->bw_write / 1e6);
	set(r, ROW_TOTAL_MB, bw, rp->bw_sum / 1e6);
	set(r, ROW_MEAN_MBPS, bw && rp->bw_ns, rp->bw_ns ? rp->bw_sum * 1e3 / (double)rp->bw_ns : 0);
}

/* Reads and computes one trace; 0, or the exit status after one line saying why not. */
static int load_run(struct run *r, const char *path, const struct report_opts *o, bool *incomplete)
{
	struct report rp = {.path = path, .o = *o};
	struct hvt_err err = {{0}};
	char why[512] = "";
	int rc = 0;

	rp.r = trace_input_open("report", path);
	if (!rp.r)
		return TRACE_USAGE;
	if (hvt_analysis_load(&rp.a, rp.r, &o->sel,
			      &(struct hvt_analysis_opts){.window = o->window, .no_windows = o->no_windows},
			      &err)) {
		fprintf(stderr, "hvmtrace report: %s: %s\n", path, err.msg);
		hvt_trace_reader_close(rp.r);
		return TRACE_USAGE;
	}
	if (report_compute(&rp, why, sizeof(why))) {
		fprintf(stderr, "hvmtrace report: %s: %s\n", path, why);
		rc = TRACE_USAGE;
	} else {
		figures(r, &rp);
		if (o->json)
			r->json = report_json(&rp);
		if (report_say_incomplete(&rp))
			*incomplete = true;
	}
	report_free(&rp);
	hvt_trace_reader_close(rp.r);
	return rc;
}

static void print_text(FILE *f, const struct run *runs, size_t n)
{
	fprintf(f, "runs       %zu traces side by side, each over the same selection\n", n);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "run %-6zu %s\n", i + 1, runs[i].about);
	fprintf(f, "\n%-32s", "");
	for (size_t i = 0; i < n; i++)
		fprintf(f, " %14s%zu", "run ", i + 1);
	fputc('\n', f);
	for (int k = 0; k < ROW_COUNT; k++) {
		fprintf(f, "%-32s", rows[k].name);
		for (size_t i = 0; i < n; i++)
			if (runs[i].have[k])
				fprintf(f, " %15.*f", rows[k].decimals, runs[i].v[k]);
			else
				fprintf(f, " %15s", "n/a");
		fputc('\n', f);
	}
	/* What a researcher reads first: each run against the first, as a ratio. */
	fprintf(f, "\n%-32s", "ratio to run 1");
	for (size_t i = 1; i < n; i++)
		fprintf(f, " %14s%zu", "run ", i + 1);
	fputc('\n', f);
	for (int k = 0; k < ROW_COUNT; k++) {
		fprintf(f, "%-32s", rows[k].name);
		for (size_t i = 1; i < n; i++)
			if (runs[i].have[k] && runs[0].have[k] && runs[0].v[k] != 0)
				fprintf(f, " %15.3f", runs[i].v[k] / runs[0].v[k]);
			else
				fprintf(f, " %15s", "n/a");
		fputc('\n', f);
	}
	fprintf(f, "\nn/a: not in that trace (written pages only in mode dirty-log; DRAM bytes only where "
		   "measured; a ratio also where run 1 has 0)\n");
}

static int print_json(FILE *f, struct run *runs, size_t n)
{
	struct json_object *o = json_object_new_object(), *arr = json_object_new_array_ext((int)n);
	int rc;

	for (size_t i = 0; i < n; i++) {
		json_object_array_add(arr, runs[i].json);
		runs[i].json = NULL;
	}
	json_object_object_add(o, "runs", arr);
	rc = fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) < 0 ? -1 : 0;
	json_object_put(o);
	return rc;
}

int report_compare(const struct hvt_operands *traces, const struct report_opts *o, const char *output)
{
	struct run *runs = calloc(traces->n, sizeof(*runs));
	bool incomplete = false;
	int status = 0;
	FILE *f = stdout;

	if (!runs) {
		fprintf(stderr, "hvmtrace report: out of memory\n");
		return TRACE_OUTPUT_FAILED;
	}
	for (size_t i = 0; i < traces->n && !status; i++)
		status = load_run(&runs[i], traces->v[i], o, &incomplete);
	if (!status && output && strcmp(output, "-")) {
		f = fopen(output, "we");
		if (!f) {
			fprintf(stderr, "hvmtrace report: cannot create %s: %s\n", output, strerror(errno));
			status = TRACE_USAGE;
		}
	}
	if (!status) {
		if (o->json)
			print_json(f, runs, traces->n);
		else
			print_text(f, runs, traces->n);
		if (f != stdout ? fclose(f) : fflush(stdout)) {
			fprintf(stderr, "hvmtrace report: writing %s: %s\n",
				output ? output : "standard output", strerror(errno));
			status = TRACE_OUTPUT_FAILED;
		} else if (incomplete) {
			status = TRACE_INCOMPLETE;
		}
	}
	for (size_t i = 0; i < traces->n; i++)
		json_object_put(runs[i].json);
	free(runs);
	return status;
}
