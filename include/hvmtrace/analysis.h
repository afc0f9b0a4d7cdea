/* SPDX-License-Identifier: MIT */
/*
 * Analyses of a trace (docs/analyses.md): what `hvmtrace report`, `plot` and the HTML view compute, read
 * through libhvmtrace so they work on any trace.
 *
 * A selection (select.h) names the intervals (--from/--to, by interval number or time) and the guest-physical
 * pages (--range FIRST-LAST) to look at. hvt_analysis_load() reads the selected intervals once and keeps, per
 * interval, its working-set sizes and bytes, and per page, in how many intervals it was written and
 * accessed. Everything else (histograms, classes, phases) is computed from that. hvt_analysis_walk()
 * gives the selected page runs of every interval, for pictures that need more than counts.
 *
 * "Not available" is HVT_NA (JSON null), never 0: mode dirty-log has no accessed sets, a trace without
 * bandwidth has no bytes.
 */
#ifndef HVMTRACE_ANALYSIS_H
#define HVMTRACE_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>

#include "pageset.h"
#include "select.h"
#include "trace.h"

#define HVT_NA UINT64_MAX /* a count or byte total that the trace does not have */

/* ---- loading ---- */

enum hvt_set_kind { HVT_SET_WRITTEN = 0, HVT_SET_ACCESSED = 1 };

enum hvt_bw_kind {
	HVT_BW_NONE,  /* no bandwidth in the trace */
	HVT_BW_SPLIT, /* read and write bytes apart (PMU) */
	HVT_BW_TOTAL, /* total bytes only (resctrl): read_bytes holds the total, write_bytes is HVT_NA */
};

/* One selected interval. Times are relative to hvt_analysis.t0_ns. Page counts are inside the range. */
struct hvt_iv_info {
	uint64_t seq;
	uint64_t t_start_ns, t_end_ns;
	uint32_t flags; /* enum hvt_interval_flags */
	uint32_t missed_deadlines;
	uint64_t written, accessed;    /* pages; HVT_NA when the interval has no such sets */
	uint64_t read_bytes;           /* summed over channels; HVT_NA without bandwidth */
	uint64_t write_bytes;          /* HVT_NA without bandwidth or when only totals are known */
	uint64_t win_written;          /* pages written in the sliding window ending here; HVT_NA */
	uint64_t win_accessed;         /* pages accessed in that window; HVT_NA */
	uint64_t written_not_accessed; /* (whole interval) with HVT_IV_WNA_COUNTED, else HVT_NA */
	uint64_t lost_pages;           /* (whole interval) see struct hvt_interval */
	uint64_t harvest_ns;           /* the harvest's own time */
	uint64_t tracer_cpu_ns;        /* the tracer's CPU time with HVT_IV_TRACER_CPU, else HVT_NA */
	uint64_t ring_full;            /* dirty-ring full exits with HVT_IV_RING_FULL, else HVT_NA */
};

/* The counts of pages [first, first + HVT_COUNT_CHUNK) of the range, in a chunk some interval touched. */
#define HVT_COUNT_CHUNK 512u
struct hvt_count_chunk {
	uint64_t first;     /* a multiple of HVT_COUNT_CHUNK */
	uint32_t *count[2]; /* [enum hvt_set_kind][HVT_COUNT_CHUNK]: selected intervals that wrote / accessed
			     * the page; NULL: none did (or the kind is not available) */
};

struct hvt_analysis_opts {
	uint32_t window; /* intervals per sliding window (1 .. 65535); 0: HVT_DEFAULT_WINDOW */
	bool no_windows; /* no sliding windows (win_written, win_accessed HVT_NA): the sweep counts only */
};
#define HVT_DEFAULT_WINDOW 10

struct hvt_analysis {
	const struct hvt_trace_meta *meta; /* borrowed from the reader */
	struct hvt_selection sel;          /* what was loaded, for hvt_analysis_walk */
	uint32_t page_size;
	uint64_t t0_ns;       /* CLOCK_MONOTONIC start of the trace's first interval */
	uint64_t first_index; /* reader index of the first selected interval */
	uint64_t n;           /* selected intervals (>= 1 after a successful load) */
	struct hvt_iv_info *iv;
	uint32_t window; /* 0: no sliding windows (hvt_analysis_opts.no_windows) */

	enum hvt_bw_kind bw;
	uint32_t nchannels;           /* = meta->channels.n */
	struct hvt_channel_bytes *ch; /* n * nchannels: ch[k * nchannels + c] is channel c in interval k
				       * (all zero where the interval has no bytes for it) */

	/*
	 * The pages: [gfn_first, gfn_first + npages), the --range or the span of every layout's slots. Page i
	 * is GFN gfn_first + i. What is kept of them follows the trace, not the guest: RAM as runs, counts
	 * only in the chunks some interval touched (a TiB guest's range costs what its touched pages cost).
	 */
	uint64_t gfn_first, npages;
	struct hvt_runs ram; /* pages i that are guest RAM in some selected interval's layout (base 0) */
	uint64_t ram_pages;  /* their count */
	struct hvt_count_chunk *chunks; /* ascending by first; every page outside them has counts 0 */
	uint64_t nchunks;
	uint64_t n_written;  /* selected intervals that carry written sets (the counts' denominator); 0: the
			      * trace has no written counts */
	uint64_t n_accessed; /* ... accessed sets; 0: no accessed counts (mode dirty-log) */

	/* How far the trace could be read. */
	bool complete;     /* the whole trace was readable */
	bool truncated;    /* reading stopped early: intervals after the damage are missing */
	bool damaged;      /* an interval's record is framed but its content is not sane (problem names it) */
	char problem[256]; /* why, "" when complete */
	uint64_t readable; /* intervals in the trace that could be read */
};

/*
 * Reads the selected intervals. Fails (-EINVAL, one-line message) when the trace has no intervals, the
 * GFN range lies outside every slot, or the interval/time range selects none; -ENOMEM. A torn trace is
 * not a failure: the analysis covers the intervals before the damage and says so in complete/problem.
 */
int hvt_analysis_load(struct hvt_analysis *a, struct hvt_trace_reader *r, const struct hvt_selection *sel,
		      const struct hvt_analysis_opts *o, struct hvt_err *err);
void hvt_analysis_fini(struct hvt_analysis *a);

/*
 * Called for each run of set pages of interval k (0 .. a->n-1) and kind, clipped to the range: in interval
 * order, written runs before accessed runs, ascending GFNs. Non-zero stops the walk and is returned.
 */
typedef int (*hvt_run_fn)(void *ctx, uint64_t k, enum hvt_set_kind kind, uint64_t first_gfn, uint64_t count);
/* kinds: bits 1u << enum hvt_set_kind. Reads the trace again; a read error is -EINVAL with a message. */
int hvt_analysis_walk(const struct hvt_analysis *a, struct hvt_trace_reader *r, unsigned kinds, hvt_run_fn fn,
		      void *ctx, struct hvt_err *err);
/* The same, the runs clipped to pages [first, end) of the range (first < end <= a->npages). */
int hvt_analysis_walk_pages(const struct hvt_analysis *a, struct hvt_trace_reader *r, unsigned kinds,
			    uint64_t first, uint64_t end, hvt_run_fn fn, void *ctx, struct hvt_err *err);

/* ---- the per-page counts ---- */

/* In how many selected intervals page i (0 .. npages-1) of the range was written / accessed (0: never, or
 * the kind is not available). A search among the chunks: for single pages, not for sweeps. */
uint32_t hvt_page_count(const struct hvt_analysis *a, enum hvt_set_kind kind, uint64_t i);
bool hvt_page_is_ram(const struct hvt_analysis *a, uint64_t i);

/* RAM pages [first, first + count) of the range with their counts: count[kind][j] is page first + j's, or
 * count[kind] is NULL where every one of them is 0. */
struct hvt_page_span {
	uint64_t first, count;
	const uint32_t *count_of[2];
};
typedef int (*hvt_span_fn)(void *ctx, const struct hvt_page_span *s);
/* Every RAM page of the range once, ascending, in spans that lie inside one RAM run and either inside one
 * chunk or between chunks (all counts 0): the cost follows the RAM runs and the touched chunks. Non-zero
 * from fn stops the walk and is returned. */
int hvt_page_spans(const struct hvt_analysis *a, hvt_span_fn fn, void *ctx);

/* ---- write frequency ---- */

/*
 * hist[j] (j = 0 .. a->n_written) = RAM pages of the range written in exactly j intervals. hist has
 * a->n_written + 1 entries. -ENODATA (hist untouched) without written sets.
 */
int hvt_write_histogram(const struct hvt_analysis *a, uint64_t *hist);

/* One point of the CDF "pages_pct % of the written pages take writes_pct % of the page-writes", pages
 * taken hottest first: the pages written in at least min_count intervals. */
struct hvt_cdf_point {
	uint64_t min_count;
	uint64_t pages;
	double pages_pct, writes_pct;
};
/* Fills out (room for n_written points) from hist, hottest first; returns the number of points. */
uint64_t hvt_write_cdf(const uint64_t *hist, uint64_t n_written, struct hvt_cdf_point *out);

/* ---- classes ---- */

enum hvt_page_class {
	HVT_CLASS_WRITE_HEAVY, /* written in >= write_heavy of the intervals */
	HVT_CLASS_READ_MOSTLY, /* accessed in >= read_mostly_min of them, written in <= read_mostly_write of
				* those accesses (needs accessed sets) */
	HVT_CLASS_MIXED,       /* touched, none of the others */
	HVT_CLASS_COLD,        /* touched in < cold of the intervals, not write-heavy */
	HVT_CLASS_UNTOUCHED,   /* never touched (needs accessed sets) */
	HVT_CLASS_UNKNOWN,     /* never written and no accessed sets: read-mostly, cold or untouched */
	HVT_CLASS_COUNT
};

struct hvt_class_thresholds {     /* fractions 0 .. 1 of the selected intervals */
	double write_heavy;       /* default 0.5 */
	double read_mostly_min;   /* default 0.25 */
	double read_mostly_write; /* default 0.1 (written / accessed) */
	double cold;              /* default 0.05 */
};
extern const struct hvt_class_thresholds hvt_class_defaults;

const char *hvt_class_name(enum hvt_page_class c); /* "write-heavy", "read-mostly", ... */
/*
 * Class of page i (0 .. npages-1) of the range; only meaningful for RAM pages. "Touched" counts accessed
 * intervals where accessed sets exist, else written ones. Tests in order: untouched (or unknown),
 * write-heavy, cold, read-mostly, mixed.
 */
enum hvt_page_class hvt_page_class(const struct hvt_analysis *a, const struct hvt_class_thresholds *t,
				   uint64_t i);
/* The class of a page written in w and accessed in acc of the selected intervals. */
enum hvt_page_class hvt_class_of(const struct hvt_analysis *a, const struct hvt_class_thresholds *t,
				 uint32_t w, uint32_t acc);
/* Pages per class: out[c] = RAM pages of the range of class c. */
void hvt_class_pages(const struct hvt_analysis *a, const struct hvt_class_thresholds *t,
		     uint64_t out[HVT_CLASS_COUNT]);
/* Maximal runs of RAM pages of one class, ascending: fn(ctx, first page, count, class). Non-zero from fn
 * stops and is returned. */
typedef int (*hvt_class_run_fn)(void *ctx, uint64_t first, uint64_t count, enum hvt_page_class c);
int hvt_class_runs(const struct hvt_analysis *a, const struct hvt_class_thresholds *t, hvt_class_run_fn fn,
		   void *ctx);

#define HVT_REGION_PAGES 512 /* 2 MiB of 4 KiB pages */
struct hvt_region_class {
	uint64_t gfn_first;              /* aligned to HVT_REGION_PAGES */
	uint64_t pages[HVT_CLASS_COUNT]; /* RAM pages of the region (inside the range) per class */
	enum hvt_page_class cls;         /* the class most of its touched pages have; ties: the hotter */
};
/*
 * The 2 MiB regions holding RAM of the range, in GFN order, as fn(ctx, region, repeat): repeat regions
 * alike, the first that one and the others each HVT_REGION_PAGES further on (the untouched RAM between
 * chunks comes whole). Non-zero from fn stops and is returned.
 */
typedef int (*hvt_region_fn)(void *ctx, const struct hvt_region_class *r, uint64_t repeat);
int hvt_region_walk(const struct hvt_analysis *a, const struct hvt_class_thresholds *t, hvt_region_fn fn,
		    void *ctx);
/*
 * Per 2 MiB region holding RAM of the range, in GFN order: fills *out (malloc'd) and *nout. Pages classed
 * by hvt_page_class. -ENOMEM; -E2BIG above max regions (the list follows the guest's size).
 */
int hvt_region_classes(const struct hvt_analysis *a, const struct hvt_class_thresholds *t, uint64_t max,
		       struct hvt_region_class **out, uint64_t *nout);

/* ---- phases ---- */

/*
 * Level changes of a series of n values (HVT_NA entries are skipped over as if absent): boundary k means a
 * new level starts at interval k. A boundary is where the mean of the `span` values after k differs from the
 * mean of the `span` values before it by at least `rel` of the larger mean (and by at least `floor`), and
 * that difference is the largest within span of k. When neither k nor k + 1 is such a boundary, k is one
 * also if its value lies between the mean of the span before it and that of the span after it, and those
 * two differ so (the level changed during interval k). Fills out (room for n) with the k; returns how many.
 */
struct hvt_phase_opts {
	uint32_t span; /* default 3 */
	double rel;    /* default 0.3 */
	double floor;  /* default 1 (pages or bytes) */
};
extern const struct hvt_phase_opts hvt_phase_defaults;
uint64_t hvt_phases_detect(const uint64_t *series, uint64_t n, const struct hvt_phase_opts *o, uint64_t *out);

#endif
