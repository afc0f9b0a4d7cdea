/* SPDX-License-Identifier: MIT */
/*
 * hvmtrace report: what its parts share. cmd_report.c parses the command line and loads the analysis,
 * report_compute.c derives the figures once, report_text.c and report_json.c print them
 * (docs/analyses.md).
 */
#ifndef HVT_REPORT_REPORT_H
#define HVT_REPORT_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hvmtrace/analysis.h"

struct json_object;
struct report_energy;
struct report_owners;

/* What the command line asked for beyond the table and the totals. */
struct report_opts {
	bool table;     /* the per-interval table (text only; JSON always lists the intervals) */
	bool histogram; /* the whole write-frequency histogram, not only its summary */
	bool pages;     /* each page's class, as runs of pages of one class */
	bool regions;   /* each 2 MiB region's class */
	bool json;
	bool energy;
	const char *energy_model; /* a file of overrides, or NULL */
	int by;                   /* --by: HVT_OWN_PROCESS, HVT_OWN_KIND, OWNERS_BY_CGROUP; 0 none */
	const char *owners_file;  /* --owners FILE, or NULL: the trace's snapshots */
	int snapshot;             /* --snapshot N of owners_file */
	int top;                  /* --top N owners */
	struct hvt_selection sel;
	struct hvt_class_thresholds th;
	struct hvt_phase_opts ph;
	uint32_t window;
	bool no_windows; /* --no-windows: no sliding windows, a sweep of counts only */
};

/* Summary statistics of a per-interval series (HVT_NA entries left out). */
struct series_stats {
	uint64_t n;
	double mean;
	uint64_t min, median, p95, max, max_seq;
};

struct channel_stats {
	const char *id;
	uint64_t read, write; /* bytes over the selection; write HVT_NA for totals-only channels */
	uint64_t intervals;   /* intervals with bytes */
	double mean_read_mbps, mean_write_mbps, peak_read_mbps, peak_write_mbps;
	uint64_t peak_read_seq, peak_write_seq;
};

/* --regions lists a region per 2 MiB of RAM: at most these (2 TiB of it), a list that still fits in memory */
#define REPORT_MAX_REGIONS (1u << 20)

struct report {
	const char *path;
	struct hvt_trace_reader *r;
	struct hvt_analysis a;
	struct report_opts o;

	/* the totals of the plain report */
	uint64_t finals, missed_intervals, missed_deadlines, span_ns;
	/* dirty-ring full exits (traces of mode dirty-ring): their sum, the intervals that had any, and
	 * whether any interval carries the count */
	uint64_t ring_full, ring_full_intervals;
	bool ring_counted;
	uint64_t ever, every, complete_written; /* every: over the intervals not cut short */
	uint64_t peak_written, peak_seq, written_sum;
	uint64_t wna_pages, wna_intervals;
	uint64_t bw_intervals, bw_ns, bw_read, bw_write, bw_sum;
	uint64_t harvest_ns, cpu_ns, cpu_span_ns; /* the tracer's own cost (cpu: intervals that carry it) */
	uint64_t busy_intervals, refused_intervals;

	/* analyses */
	struct series_stats wss[2], win[2]; /* [enum hvt_set_kind] */
	uint64_t *hist;                     /* n_written + 1, or NULL */
	struct hvt_cdf_point *cdf;
	uint64_t ncdf, pages_written, page_writes;
	uint64_t class_pages[HVT_CLASS_COUNT];
	struct hvt_region_class *regions; /* with --regions only, at most REPORT_MAX_REGIONS */
	uint64_t nregions, region_count[HVT_CLASS_COUNT];
	uint64_t *phases[3]; /* written, accessed, bandwidth: interval indexes; NULL: no such series */
	uint64_t nphases[3];
	struct channel_stats *ch;
	struct report_energy *energy; /* --energy: the what-if (report_energy.h), else NULL */
	struct report_owners *owners; /* --by: pages by owner (report_owners.h), else NULL */
};

extern const char *const report_phase_series[3];

int report_compute(struct report *rp, char *why, size_t whylen);
void report_free(struct report *rp);
/* Says on stderr when the trace could not be read to its end; returns whether it said so. */
bool report_say_incomplete(const struct report *rp);

void report_print_text(FILE *f, const struct report *rp);
int report_print_json(FILE *f, const struct report *rp);
struct json_object *report_json(const struct report *rp); /* the object report_print_json prints */

/* report A.hvt B.hvt ...: the runs side by side (report_compare.c); returns the command's exit status. */
struct hvt_operands;
int report_compare(const struct hvt_operands *traces, const struct report_opts *o, const char *output);

#endif
