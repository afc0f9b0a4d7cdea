// SPDX-License-Identifier: MIT
/*
 * hvmtrace report: the per-interval table of a trace and its totals. Totals are computed over guest-physical
 * page numbers, so they stay right across layout changes (slots split or merged between intervals).
 */
#include <inttypes.h>
#include <roaring/roaring.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "hvmtrace/error.h"
#include "hvmtrace/options.h"
#include "trace_input.h"

#define MIB(pages, psize) ((double)(pages) * (psize) / (1 << 20))
#define MBPS(bytes, ns)   ((ns) ? (double)(bytes)*1e3 / (double)(ns) : 0.0) /* 10^6 bytes/s */

/* DRAM bandwidth in the trace: none, reads and writes apart (PMU), or totals only (resctrl). */
enum bw_kind { BW_NONE, BW_SPLIT, BW_TOTAL };

struct bw_totals {
	enum bw_kind kind;
	enum hvt_bw_source source;
	uint64_t intervals;        /* intervals that carry bandwidth */
	uint64_t ns;               /* their summed duration */
	uint64_t read, write, sum; /* bytes; read/write only for split intervals */
};

struct totals {
	uint64_t intervals, finals, missed_intervals, missed_deadlines;
	uint64_t span_ns, first_start_ns;
	uint64_t peak_pages, peak_seq;
	uint64_t written_sum;
	uint64_t complete_intervals; /* not FINAL: the ones "every interval" is taken over */
	roaring_bitmap_t *ever;      /* GFNs written in any interval */
	roaring_bitmap_t *every;     /* GFNs written in every complete interval (NULL until the first) */
	bool written_available, accessed_available;
	uint64_t wna_pages, wna_intervals;        /* written pages the harvest did not report accessed */
	uint64_t harvest_ns, cpu_ns, cpu_span_ns; /* the tracer's own cost (cpu: intervals that carry it) */
	uint64_t busy_intervals, refused_intervals;
	struct bw_totals bw;
	uint32_t page_size;
	bool table; /* print a row per interval */
	const char *path;
};

/* The GFNs of a set, as a roaring bitmap; -1 if a GFN does not fit 32 bits (16 TiB of guest RAM). */
static int gfns_of(const struct hvt_pageset *sets, const struct hvt_layout *l, roaring_bitmap_t *out)
{
	for (uint32_t i = 0; i < l->nslots; i++) {
		uint64_t pos = 0, base = hvt_memslot_first_gfn(l, &l->slots[i]);
		struct hvt_run run;

		while (hvt_pageset_next_run(&sets[i], &pos, &run)) {
			if (base + run.first + run.count > UINT32_MAX)
				return -1;
			roaring_bitmap_add_range(out, base + run.first, base + run.first + run.count);
		}
	}
	return 0;
}

static void print_header(struct hvt_trace_reader *r, const char *path)
{
	const struct hvt_trace_meta *m = hvt_trace_meta(r);
	struct hvt_trace_status st;

	hvt_trace_get_status(r, &st);
	printf("trace      %s (%s)\n", path, st.complete ? "complete" : "INCOMPLETE");
	printf("vm         '%s' (%s, %s)\n", m->vm_name, m->vm_vmm, m->vm_accel);
	printf("mode       %s, interval %.3f s\n", hvt_mode_name(m->mode), m->interval_ns / 1e9);
	for (uint64_t i = 0; i < st.layouts; i++) {
		const struct hvt_layout *l = hvt_trace_layout_at(r, i);

		printf("layout %-3" PRIu64 "", l->generation);
		for (uint32_t s = 0; s < l->nslots; s++)
			printf("%s slot %u: gpa 0x%" PRIx64 " +%.1f MiB (%s%s%s)", s ? ";" : "",
			       l->slots[s].slot, l->slots[s].gpa, l->slots[s].size / 1048576.0,
			       l->slots[s].backing, l->slots[s].name[0] ? ", " : "", l->slots[s].name);
		putchar('\n');
	}
	putchar('\n');
}

/* How the trace measured bandwidth, from its metadata; prints the source and the channels. */
static void bw_from_meta(const struct hvt_trace_meta *m, struct bw_totals *bw)
{
	if (!m->bandwidth_available)
		return;
	bw->source = m->bandwidth_source;
	bw->kind = bw->source == HVT_BW_SOURCE_RESCTRL_TOTAL ? BW_TOTAL : BW_SPLIT;
	printf("bandwidth  %s%s:", hvt_bw_source_name(bw->source),
	       bw->kind == BW_TOTAL                       ? " (TOTAL bytes, not split into reads and writes)"
	       : bw->source == HVT_BW_SOURCE_PMU_STAND_IN ? " (STAND-IN: software events, not DRAM)"
							  : "");
	for (uint32_t i = 0; i < m->channels.n; i++)
		printf("%s %s", i ? "," : "", m->channels.v[i].id);
	printf("\n\n");
}

/* Adds an interval's bytes to the totals; prints its MB/s columns when the table is on. */
static void account_bw(struct bw_totals *bw, const struct hvt_interval *iv, bool table)
{
	bool have = iv->flags & HVT_IV_BANDWIDTH, split = have && !(iv->flags & HVT_IV_BW_TOTAL);
	uint64_t ns = iv->t_end_ns - iv->t_start_ns, rd = 0, wr = 0;

	for (uint32_t i = 0; have && i < iv->nchannels; i++) {
		rd += iv->channels[i].read_bytes;
		wr += iv->channels[i].write_bytes;
	}
	if (have) {
		bw->intervals++;
		bw->ns += ns;
		bw->sum += rd + wr;
		bw->read += split ? rd : 0;
		bw->write += split ? wr : 0;
	}
	if (!table || bw->kind == BW_NONE)
		return;
	if (bw->kind == BW_TOTAL && have)
		printf(" %10.1f", MBPS(rd + wr, ns));
	else if (bw->kind == BW_TOTAL)
		printf(" %10s", "n/a");
	else if (split)
		printf(" %10.1f %10.1f", MBPS(rd, ns), MBPS(wr, ns));
	else
		printf(" %10s %10s", "n/a", "n/a");
}

/* A share of one core: busy time over the interval's wall time, in %. */
static double core_share(uint64_t busy_ns, uint64_t span_ns)
{
	return span_ns ? 100.0 * (double)busy_ns / (double)span_ns : 0.0;
}

/* The harvest's and the tracer's CPU share of one core (the latter "n/a" in traces that lack it). */
static void print_cost(const struct hvt_interval *iv)
{
	uint64_t span = iv->t_end_ns - iv->t_start_ns;

	printf(" %9.1f", core_share(iv->harvest_ns, span));
	if (iv->flags & HVT_IV_TRACER_CPU)
		printf(" %8.1f", core_share(iv->tracer_cpu_ns, span));
	else
		printf(" %8s", "n/a");
}

static void account_cost(struct totals *t, const struct hvt_interval *iv)
{
	t->harvest_ns += iv->harvest_ns;
	if (iv->flags & HVT_IV_TRACER_CPU) {
		t->cpu_ns += iv->tracer_cpu_ns;
		t->cpu_span_ns += iv->t_end_ns - iv->t_start_ns;
	}
	t->busy_intervals += !!(iv->flags & HVT_IV_TRACER_BUSY);
	t->refused_intervals += !!(iv->flags & HVT_IV_LAYOUT_REFUSED);
}

static void print_cost_totals(const struct totals *t)
{
	printf("  harvest, share of one core       %.1f %%\n", core_share(t->harvest_ns, t->span_ns));
	if (t->cpu_span_ns)
		printf("  tracer CPU, share of one core    %.1f %% (more than 50 %% in %" PRIu64
		       " interval%s)\n",
		       core_share(t->cpu_ns, t->cpu_span_ns), t->busy_intervals,
		       t->busy_intervals == 1 ? "" : "s");
	else
		printf("  tracer CPU, share of one core    not recorded in this trace\n");
	if (t->refused_intervals)
		printf(
		    "  recording ended                  the guest's RAM grew beyond what the tracer's locked memory covered (record --max-guest-ram)\n");
}

static int account(void *ctx, const struct hvt_interval *iv, const struct hvt_layout *l)
{
	struct totals *t = ctx;
	bool table = t->table;
	uint64_t wp = 0;

	if (!t->intervals)
		t->first_start_ns = iv->t_start_ns;
	t->intervals++;
	t->span_ns = iv->t_end_ns - t->first_start_ns;
	t->finals += !!(iv->flags & HVT_IV_FINAL);
	t->missed_intervals += iv->missed_deadlines > 0;
	t->missed_deadlines += iv->missed_deadlines;
	t->page_size = l->page_size;
	if (iv->flags & HVT_IV_WRITTEN) {
		roaring_bitmap_t *set = roaring_bitmap_create();

		t->written_available = true;
		if (gfns_of(iv->written, l, set)) {
			roaring_bitmap_free(set);
			fprintf(stderr,
				"hvmtrace report: %s: interval %" PRIu64
				" has a GFN above 2^32, which report does not handle (guests over 16 TiB)\n",
				t->path, iv->seq);
			return TRACE_USAGE;
		}
		wp = roaring_bitmap_get_cardinality(set);
		t->written_sum += wp;
		if (wp > t->peak_pages || t->intervals == 1) {
			t->peak_pages = wp;
			t->peak_seq = iv->seq;
		}
		roaring_bitmap_or_inplace(t->ever, set);
		if (!(iv->flags & HVT_IV_FINAL)) {
			if (!t->complete_intervals++)
				t->every = roaring_bitmap_copy(set);
			else
				roaring_bitmap_and_inplace(t->every, set);
		}
		roaring_bitmap_free(set);
	}
	t->accessed_available |= !!(iv->flags & HVT_IV_ACCESSED);
	if ((iv->flags & HVT_IV_WNA_COUNTED) && iv->written_not_accessed) {
		t->wna_pages += iv->written_not_accessed;
		t->wna_intervals++;
	}
	if (table) {
		printf("%6" PRIu64 " %10.3f %8.3f", iv->seq, (iv->t_start_ns - t->first_start_ns) / 1e9,
		       (iv->t_end_ns - iv->t_start_ns) / 1e9);
		if (iv->flags & HVT_IV_WRITTEN)
			printf(" %10" PRIu64 " %11.1f", wp, MIB(wp, l->page_size));
		else
			printf(" %10s %11s", "n/a", "n/a");
		if (iv->flags & HVT_IV_ACCESSED)
			printf(" %10" PRIu64, hvt_interval_count_pages(iv->accessed, iv->nslots));
		else
			printf(" %10s", "n/a");
	}
	account_bw(&t->bw, iv, table);
	account_cost(t, iv);
	if (table) {
		printf(" %6u", iv->missed_deadlines);
		print_cost(iv);
		printf(" %s%s%s\n", (iv->flags & HVT_IV_FINAL) ? "final" : "",
		       (iv->flags & HVT_IV_TRACER_BUSY) ? " busy" : "",
		       (iv->flags & HVT_IV_LAYOUT_REFUSED) ? " layout-refused" : "");
	}
	return 0;
}

static void print_bw_totals(const struct bw_totals *bw, uint64_t intervals)
{
	if (bw->kind == BW_NONE) {
		printf("  DRAM bandwidth                   not measured in this trace\n");
		return;
	}
	if (bw->intervals < intervals)
		printf("  DRAM bandwidth                   measured in %" PRIu64 " of %" PRIu64
		       " intervals (a counter did not count in the others)\n",
		       bw->intervals, intervals);
	if (bw->kind == BW_TOTAL) {
		printf("  DRAM bytes, total                %" PRIu64
		       " (%.1f MB; not split into reads and writes)\n",
		       bw->sum, bw->sum / 1e6);
		printf("  mean DRAM MB/s, total            %.1f\n", MBPS(bw->sum, bw->ns));
		return;
	}
	printf("  DRAM bytes read                  %" PRIu64 " (%.1f MB)\n", bw->read, bw->read / 1e6);
	printf("  DRAM bytes written               %" PRIu64 " (%.1f MB)\n", bw->write, bw->write / 1e6);
	printf("  mean DRAM MB/s read / write      %.1f / %.1f\n", MBPS(bw->read, bw->ns),
	       MBPS(bw->write, bw->ns));
}

static void print_totals(const struct totals *t, const char *mode)
{
	uint64_t every = t->every ? roaring_bitmap_get_cardinality(t->every) : 0;
	uint64_t ever = roaring_bitmap_get_cardinality(t->ever);

	printf("\ntotals\n");
	printf("  intervals                        %" PRIu64 " (%" PRIu64 " final; %" PRIu64
	       " after missed deadlines, %" PRIu64 " deadlines missed)\n",
	       t->intervals, t->finals, t->missed_intervals, t->missed_deadlines);
	printf("  time covered                     %.3f s\n", t->span_ns / 1e9);
	if (!t->written_available) {
		printf("  written pages                    not available in this trace\n");
	} else {
		printf("  distinct pages ever written      %" PRIu64 " (%.1f MiB)\n", ever,
		       MIB(ever, t->page_size));
		printf("  pages written in every interval  %" PRIu64 " (%.1f MiB; over the %" PRIu64
		       " intervals not cut short)\n",
		       every, MIB(every, t->page_size), t->complete_intervals);
		printf("  peak written pages/interval      %" PRIu64 " (%.1f MiB, interval %" PRIu64 ")\n",
		       t->peak_pages, MIB(t->peak_pages, t->page_size), t->peak_seq);
		if (t->span_ns)
			printf("  mean written pages/s             %.1f\n",
			       t->written_sum / (t->span_ns / 1e9));
	}
	if (!t->accessed_available)
		printf(
		    "  accessed pages                   not available (mode %s records written pages only)\n",
		    mode);
	if (t->wna_pages)
		printf("  written, not reported accessed   %" PRIu64 " pages in %" PRIu64
		       " interval%s (the tracer recorded them as accessed too; see docs/kvm-ad.md)\n",
		       t->wna_pages, t->wna_intervals, t->wna_intervals == 1 ? "" : "s");
	print_bw_totals(&t->bw, t->intervals);
	print_cost_totals(t);
}

int cmd_report(int argc, char **argv)
{
	static const struct hvt_exit_status exits[] = {
	    {TRACE_OK, "the report is complete"},
	    {TRACE_USAGE, "bad arguments, or TRACE is not a trace"},
	    {TRACE_INCOMPLETE, "the trace is incomplete (the report covers everything before the damage)"},
	    {0, NULL},
	};
	struct totals t = {0};
	const char *path = "hvmtrace.hvt";
	struct hvt_trace_reader *r;
	bool table = true;
	const struct hvt_option opts[] = {
	    HVT_OPT_OPERAND(&path, "TRACE", "the trace to read (default hvmtrace.hvt)"),
	    HVT_OPT_FLAG_OFF(0, "totals-only", &table, "print only the totals, not the per-interval table"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace report",
	    .synopsis = "[options] [TRACE]",
	    .options = opts,
	    .notes = "With DRAM bandwidth in the trace, the table has read_MBps/write_MBps columns\n"
		     "(total_MBps for sources that do not split reads and writes, such as resctrl);\n"
		     "MB/s = 10^6 bytes/s. harvest_% and tracer_% are the harvest's time and the\n"
		     "tracer's CPU time as a share of one core over the interval; 'busy' marks an\n"
		     "interval in which the tracer needed more than half its CPU.",
	    .exits = exits,
	    .usage_status = TRACE_USAGE,
	};
	int status = hvt_opts_parse(&cmd, argc, argv);

	if (status != HVT_OPTS_RUN)
		return status;
	r = trace_input_open("report", path);
	if (!r)
		return TRACE_USAGE;
	print_header(r, path);
	bw_from_meta(hvt_trace_meta(r), &t.bw);
	if (table) {
		printf("%6s %10s %8s %10s %11s %10s", "seq", "start_s", "dur_s", "written", "written_MiB",
		       "accessed");
		if (t.bw.kind == BW_SPLIT)
			printf(" %10s %10s", "read_MBps", "write_MBps");
		else if (t.bw.kind == BW_TOTAL)
			printf(" %10s", "total_MBps");
		printf(" %6s %9s %8s\n", "missed", "harvest_%", "tracer_%");
	}
	t.ever = roaring_bitmap_create();
	t.table = table;
	t.path = path;
	status = trace_input_each("report", path, r, account, &t);
	print_totals(&t, hvt_mode_name(hvt_trace_meta(r)->mode));
	roaring_bitmap_free(t.ever);
	if (t.every)
		roaring_bitmap_free(t.every);
	hvt_trace_reader_close(r);
	return status;
}
