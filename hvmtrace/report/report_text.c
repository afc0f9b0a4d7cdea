// SPDX-License-Identifier: MIT
/* hvmtrace report as text: the table and totals it always printed, then the analyses (docs/analyses.md). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"
#include "report_owners.h"
#include "report_energy.h"

#define MIB(pages, psize) ((double)(pages) * (psize) / (1 << 20))
#define MBPS(bytes, ns)   ((ns) ? (double)(bytes)*1e3 / (double)(ns) : 0.0) /* 10^6 bytes/s */
#define PCT(x, of)        ((of) ? 100.0 * (double)(x) / (double)(of) : 0.0)

static void print_header(FILE *f, const struct report *rp)
{
	const struct hvt_trace_meta *m = rp->a.meta;
	const struct hvt_layout *l;

	fprintf(f, "trace      %s (%s)\n", rp->path, rp->a.complete ? "complete" : "INCOMPLETE");
	fprintf(f, "vm         '%s' (%s, %s)\n", m->vm_name, m->vm_vmm, m->vm_accel);
	fprintf(f, "mode       %s, interval %.3f s\n", hvt_mode_name(m->mode), m->interval_ns / 1e9);
	for (uint64_t i = 0; (l = hvt_trace_layout_at(rp->r, i)); i++) {
		fprintf(f, "layout %-3" PRIu64 "", l->generation);
		for (uint32_t s = 0; s < l->nslots; s++)
			fprintf(f, "%s slot %u: gpa 0x%" PRIx64 " +%.1f MiB (%s%s%s)", s ? ";" : "",
				l->slots[s].slot, l->slots[s].gpa, l->slots[s].size / 1048576.0,
				l->slots[s].backing, l->slots[s].name[0] ? ", " : "", l->slots[s].name);
		fputc('\n', f);
	}
	fputc('\n', f);
	if (!m->bandwidth_available)
		return;
	fprintf(f, "bandwidth  %s%s:", hvt_bw_source_name(m->bandwidth_source),
		rp->a.bw == HVT_BW_TOTAL ? " (TOTAL bytes, not split into reads and writes)"
		: m->bandwidth_source == HVT_BW_SOURCE_PMU_STAND_IN ? " (STAND-IN: software events, not DRAM)"
								    : "");
	for (uint32_t i = 0; i < m->channels.n; i++)
		fprintf(f, "%s %s", i ? "," : "", m->channels.v[i].id);
	fprintf(f, "\n\n");
}

/* A share of one core: busy time over the interval's wall time, in %. */
static double core_share(uint64_t busy_ns, uint64_t span_ns)
{
	return span_ns ? 100.0 * (double)busy_ns / (double)span_ns : 0.0;
}

static void print_table(FILE *f, const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;

	fprintf(f, "%6s %10s %8s %10s %11s %10s", "seq", "start_s", "dur_s", "written", "written_MiB",
		"accessed");
	if (a->bw == HVT_BW_SPLIT)
		fprintf(f, " %10s %10s", "read_MBps", "write_MBps");
	else if (a->bw == HVT_BW_TOTAL)
		fprintf(f, " %10s", "total_MBps");
	fprintf(f, " %6s %9s %8s\n", "missed", "harvest_%", "tracer_%");
	for (uint64_t k = 0; k < a->n; k++) {
		const struct hvt_iv_info *ii = &a->iv[k];
		uint64_t ns = ii->t_end_ns - ii->t_start_ns;

		fprintf(f, "%6" PRIu64 " %10.3f %8.3f", ii->seq, ii->t_start_ns / 1e9, ns / 1e9);
		if (ii->written != HVT_NA)
			fprintf(f, " %10" PRIu64 " %11.1f", ii->written, MIB(ii->written, a->page_size));
		else
			fprintf(f, " %10s %11s", "n/a", "n/a");
		if (ii->accessed != HVT_NA)
			fprintf(f, " %10" PRIu64, ii->accessed);
		else
			fprintf(f, " %10s", "n/a");
		if (a->bw == HVT_BW_TOTAL && ii->read_bytes != HVT_NA)
			fprintf(f, " %10.1f", MBPS(ii->read_bytes, ns));
		else if (a->bw == HVT_BW_TOTAL)
			fprintf(f, " %10s", "n/a");
		else if (a->bw == HVT_BW_SPLIT && ii->write_bytes != HVT_NA)
			fprintf(f, " %10.1f %10.1f", MBPS(ii->read_bytes, ns), MBPS(ii->write_bytes, ns));
		else if (a->bw == HVT_BW_SPLIT)
			fprintf(f, " %10s %10s", "n/a", "n/a");
		fprintf(f, " %6u %9.1f", ii->missed_deadlines, core_share(ii->harvest_ns, ns));
		if (ii->tracer_cpu_ns != HVT_NA)
			fprintf(f, " %8.1f", core_share(ii->tracer_cpu_ns, ns));
		else
			fprintf(f, " %8s", "n/a");
		fprintf(f, " %s%s%s\n", (ii->flags & HVT_IV_FINAL) ? "final" : "",
			(ii->flags & HVT_IV_TRACER_BUSY) ? " busy" : "",
			(ii->flags & HVT_IV_LAYOUT_REFUSED) ? " layout-refused" : "");
	}
}

static void print_bw_totals(FILE *f, const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;

	if (a->bw == HVT_BW_NONE) {
		fprintf(f, "  DRAM bandwidth                   not measured in this trace\n");
		return;
	}
	if (rp->bw_intervals < a->n)
		fprintf(f,
			"  DRAM bandwidth                   measured in %" PRIu64 " of %" PRIu64
			" intervals (a counter did not count in the others)\n",
			rp->bw_intervals, a->n);
	if (a->bw == HVT_BW_TOTAL) {
		fprintf(f,
			"  DRAM bytes, total                %" PRIu64
			" (%.1f MB; not split into reads and writes)\n",
			rp->bw_sum, rp->bw_sum / 1e6);
		fprintf(f, "  mean DRAM MB/s, total            %.1f\n", MBPS(rp->bw_sum, rp->bw_ns));
		return;
	}
	fprintf(f, "  DRAM bytes read                  %" PRIu64 " (%.1f MB)\n", rp->bw_read,
		rp->bw_read / 1e6);
	fprintf(f, "  DRAM bytes written               %" PRIu64 " (%.1f MB)\n", rp->bw_write,
		rp->bw_write / 1e6);
	fprintf(f, "  mean DRAM MB/s read / write      %.1f / %.1f\n", MBPS(rp->bw_read, rp->bw_ns),
		MBPS(rp->bw_write, rp->bw_ns));
}

static void print_totals(FILE *f, const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	uint32_t ps = a->page_size;

	fprintf(f, "\ntotals\n");
	fprintf(f,
		"  intervals                        %" PRIu64 " (%" PRIu64 " final; %" PRIu64
		" after missed deadlines, %" PRIu64 " deadlines missed)\n",
		a->n, rp->finals, rp->missed_intervals, rp->missed_deadlines);
	fprintf(f, "  time covered                     %.3f s\n", rp->span_ns / 1e9);
	if (rp->ring_counted)
		fprintf(f, "  dirty-ring full exits            %" PRIu64 " in %" PRIu64 " intervals%s\n",
			rp->ring_full, rp->ring_full_intervals,
			rp->ring_full
			    ? " (the ring held less than an interval wrote: its pages faulted again)"
			    : "");
	if (!a->n_written) {
		fprintf(f, "  written pages                    not available in this trace\n");
	} else {
		fprintf(f, "  distinct pages ever written      %" PRIu64 " (%.1f MiB)\n", rp->ever,
			MIB(rp->ever, ps));
		fprintf(f,
			"  pages written in every interval  %" PRIu64 " (%.1f MiB; over the %" PRIu64
			" intervals not cut short)\n",
			rp->every, MIB(rp->every, ps), rp->complete_written);
		fprintf(f,
			"  peak written pages/interval      %" PRIu64 " (%.1f MiB, interval %" PRIu64 ")\n",
			rp->peak_written, MIB(rp->peak_written, ps), rp->peak_seq);
		if (rp->span_ns)
			fprintf(f, "  mean written pages/s             %.1f\n",
				rp->written_sum / (rp->span_ns / 1e9));
	}
	if (!a->n_accessed)
		fprintf(
		    f,
		    "  accessed pages                   not available (mode %s records written pages only)\n",
		    hvt_mode_name(a->meta->mode));
	if (rp->wna_pages)
		fprintf(f,
			"  written, not reported accessed   %" PRIu64 " pages in %" PRIu64
			" interval%s (the tracer recorded them as accessed too; see docs/kvm-ad.md)\n",
			rp->wna_pages, rp->wna_intervals, rp->wna_intervals == 1 ? "" : "s");
	print_bw_totals(f, rp);
	fprintf(f, "  harvest, share of one core       %.1f %%\n", core_share(rp->harvest_ns, rp->span_ns));
	if (rp->cpu_span_ns)
		fprintf(f,
			"  tracer CPU, share of one core    %.1f %% (more than 50 %% in %" PRIu64
			" interval%s)\n",
			core_share(rp->cpu_ns, rp->cpu_span_ns), rp->busy_intervals,
			rp->busy_intervals == 1 ? "" : "s");
	else
		fprintf(f, "  tracer CPU, share of one core    not recorded in this trace\n");
	if (rp->refused_intervals)
		fprintf(
		    f,
		    "  recording ended                  the guest's RAM grew beyond what the tracer's locked memory covered (record --max-guest-ram)\n");
}

static void print_selection(FILE *f, const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;

	fprintf(f, "\nselection\n");
	fprintf(f,
		"  intervals                        %" PRIu64 "-%" PRIu64
		" (%.3f-%.3f s since the trace's start)\n",
		a->iv[0].seq, a->iv[a->n - 1].seq, a->iv[0].t_start_ns / 1e9, a->iv[a->n - 1].t_end_ns / 1e9);
	fprintf(f,
		"  guest pages (GFNs)               0x%" PRIx64 "-0x%" PRIx64 " (%" PRIu64 " pages, %" PRIu64
		" of them RAM, %.1f MiB)\n",
		a->gfn_first, a->gfn_first + a->npages - 1, a->npages, a->ram_pages,
		MIB(a->ram_pages, a->page_size));
}

static void print_stats_line(FILE *f, const char *what, const struct series_stats *s, uint32_t ps,
			     const char *na)
{
	if (!s->n) {
		fprintf(f, "  %-32s not available (%s)\n", what, na);
		return;
	}
	fprintf(f,
		"  %-32s mean %.1f, median %" PRIu64 ", p95 %" PRIu64 ", max %" PRIu64
		" (%.1f MiB, interval %" PRIu64 ")\n",
		what, s->mean, s->median, s->p95, s->max, MIB(s->max, ps), s->max_seq);
}

static void print_wss(FILE *f, const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	char what[64];
	const char *na = a->meta->mode == HVT_MODE_DIRTY_LOG ? "mode dirty-log records written pages only"
							     : "the trace has no accessed sets";

	fprintf(f, "\nworking set (pages per interval)\n");
	print_stats_line(f, "written", &rp->wss[0], a->page_size, "the trace has no written sets");
	print_stats_line(f, "accessed", &rp->wss[1], a->page_size, na);
	if (!a->window) {
		fprintf(f, "  %-32s not computed (--no-windows)\n", "sliding windows");
		return;
	}
	snprintf(what, sizeof(what), "written, %u-interval windows", a->window);
	print_stats_line(f, what, &rp->win[0], a->page_size, "the trace has no written sets");
	snprintf(what, sizeof(what), "accessed, %u-interval windows", a->window);
	print_stats_line(f, what, &rp->win[1], a->page_size, na);
}

static void print_write_frequency(FILE *f, const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	static const double marks[] = {1, 5, 10, 20, 50, 80, 100};

	fprintf(f, "\nwrite frequency (intervals in which a page was written, of %" PRIu64 ")\n",
		a->n_written);
	if (!rp->hist) {
		fprintf(f, "  not available (the trace has no written sets)\n");
		return;
	}
	fprintf(f, "  never written                    %" PRIu64 " RAM pages\n", rp->hist[0]);
	for (uint64_t lo = 1; lo <= a->n_written; lo *= 2) {
		uint64_t hi = lo * 2 - 1 < a->n_written ? lo * 2 - 1 : a->n_written, n = 0;

		for (uint64_t j = lo; j <= hi; j++)
			n += rp->hist[j];
		fprintf(f, "  written in %6" PRIu64 "-%-6" PRIu64 "       %" PRIu64 " pages\n", lo, hi, n);
	}
	if (rp->o.histogram)
		for (uint64_t j = 1; j <= a->n_written; j++)
			if (rp->hist[j])
				fprintf(f, "    %6" PRIu64 " intervals: %" PRIu64 " pages\n", j, rp->hist[j]);
	fprintf(f, "  %" PRIu64 " pages written, %" PRIu64 " page-writes (a page written in an interval)\n",
		rp->pages_written, rp->page_writes);
	for (size_t m = 0, last = SIZE_MAX; m < sizeof(marks) / sizeof(marks[0]) && rp->ncdf; m++)
		for (uint64_t i = 0; i < rp->ncdf; i++)
			if (rp->cdf[i].pages_pct >= marks[m] || i + 1 == rp->ncdf) {
				if (i == last)
					break;
				last = i;
				fprintf(
				    f,
				    "  %6.2f %% of the written pages take %6.2f %% of the page-writes (written in "
				    ">= %" PRIu64 " intervals)\n",
				    rp->cdf[i].pages_pct, rp->cdf[i].writes_pct, rp->cdf[i].min_count);
				break;
			}
}

struct class_run_out {
	FILE *f;
	const struct hvt_analysis *a;
};

static int print_class_run(void *ctx, uint64_t first, uint64_t count, enum hvt_page_class c)
{
	const struct class_run_out *o = ctx;

	fprintf(o->f, "  0x%" PRIx64 "-0x%" PRIx64 " %s\n", o->a->gfn_first + first,
		o->a->gfn_first + first + count - 1, hvt_class_name(c));
	return 0;
}

static void print_classes(FILE *f, const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	const struct hvt_class_thresholds *t = &rp->o.th;

	fprintf(f,
		"\npage classes (of %" PRIu64
		" intervals; write-heavy: written in >= %g %%; read-mostly: accessed "
		"in >= %g %%, written in <= %g %% of those; cold: touched in < %g %%)\n",
		a->n, 100 * t->write_heavy, 100 * t->read_mostly_min, 100 * t->read_mostly_write,
		100 * t->cold);
	for (int c = 0; c < HVT_CLASS_COUNT; c++) {
		if ((c == HVT_CLASS_READ_MOSTLY || c == HVT_CLASS_UNTOUCHED) && !a->n_accessed) {
			fprintf(f, "  %-12s not available (needs accessed sets)\n", hvt_class_name(c));
			continue;
		}
		if (c == HVT_CLASS_UNKNOWN && a->n_accessed)
			continue;
		fprintf(f,
			"  %-12s %10" PRIu64 " pages (%.1f MiB, %5.1f %% of RAM), %7" PRIu64
			" 2 MiB regions\n",
			hvt_class_name(c), rp->class_pages[c], MIB(rp->class_pages[c], a->page_size),
			PCT(rp->class_pages[c], a->ram_pages), rp->region_count[c]);
	}
	if (!a->n_accessed)
		fprintf(
		    f,
		    "  (unknown: never written, and without accessed sets read-mostly, cold or untouched)\n");
	if (rp->o.pages) {
		fprintf(f, "\n  pages by class (first_gfn-last_gfn class)\n");
		hvt_class_runs(a, t, print_class_run, &(struct class_run_out){f, a});
	}
	if (rp->o.regions) {
		fprintf(f, "\n  2 MiB regions (first_gfn class: pages per class)\n");
		for (uint64_t i = 0; i < rp->nregions; i++) {
			const struct hvt_region_class *r = &rp->regions[i];

			fprintf(f, "  0x%" PRIx64 " %-12s", r->gfn_first, hvt_class_name(r->cls));
			for (int c = 0; c < HVT_CLASS_COUNT; c++)
				if (r->pages[c])
					fprintf(f, " %s %" PRIu64, hvt_class_name(c), r->pages[c]);
			fputc('\n', f);
		}
	}
}

static void print_phases(FILE *f, const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;

	fprintf(
	    f,
	    "\nphases (a new level starts at interval: the mean of the %u intervals after differs from the %u "
	    "before by >= %g %%)\n",
	    rp->o.ph.span, rp->o.ph.span, 100 * rp->o.ph.rel);
	for (int s = 0; s < 3; s++) {
		fprintf(f, "  %-10s", report_phase_series[s]);
		if (!rp->phases[s]) {
			fprintf(f, " not available (%s)\n",
				s == 1   ? "no accessed sets"
				: s == 2 ? "no bandwidth in the trace"
					 : "no written sets");
			continue;
		}
		if (!rp->nphases[s])
			fprintf(f, " none");
		for (uint64_t i = 0; i < rp->nphases[s]; i++) {
			const struct hvt_iv_info *ii = &a->iv[rp->phases[s][i]];

			fprintf(f, " %" PRIu64 " (%.3f s)", ii->seq, ii->t_start_ns / 1e9);
		}
		fputc('\n', f);
	}
}

static void print_channels(FILE *f, const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;

	fprintf(f, "\nbandwidth per channel (MB/s = 10^6 bytes/s)\n");
	if (!a->nchannels) {
		fprintf(f, "  not measured in this trace\n");
		return;
	}
	for (uint32_t c = 0; c < a->nchannels; c++) {
		const struct channel_stats *cs = &rp->ch[c];

		if (cs->write == HVT_NA)
			fprintf(f,
				"  %-20s total %.1f MB, mean %.1f MB/s, peak %.1f MB/s (interval %" PRIu64
				")\n",
				cs->id, cs->read / 1e6, cs->mean_read_mbps, cs->peak_read_mbps,
				cs->peak_read_seq);
		else
			fprintf(f,
				"  %-20s read %.1f MB, mean %.1f MB/s, peak %.1f MB/s (interval %" PRIu64
				"); write %.1f MB, mean %.1f MB/s, peak %.1f MB/s (interval %" PRIu64 ")\n",
				cs->id, cs->read / 1e6, cs->mean_read_mbps, cs->peak_read_mbps,
				cs->peak_read_seq, cs->write / 1e6, cs->mean_write_mbps, cs->peak_write_mbps,
				cs->peak_write_seq);
	}
}

void report_print_text(FILE *f, const struct report *rp)
{
	print_header(f, rp);
	if (rp->o.table)
		print_table(f, rp);
	print_totals(f, rp);
	print_selection(f, rp);
	print_wss(f, rp);
	print_write_frequency(f, rp);
	print_classes(f, rp);
	print_phases(f, rp);
	print_channels(f, rp);
	if (rp->energy)
		report_energy_text(f, rp);
	if (rp->owners)
		report_owners_text(f, rp);
	if (!rp->a.complete)
		fprintf(f,
			"\nINCOMPLETE TRACE (%s): only its first %" PRIu64
			" intervals are readable, up to the last complete one; the analyses cover those\n",
			rp->a.problem, rp->a.readable);
}
