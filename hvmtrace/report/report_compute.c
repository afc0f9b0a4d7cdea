// SPDX-License-Identifier: MIT
/* hvmtrace report: the figures derived once from the loaded analysis (report.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "report.h"
#include "report_owners.h"

const char *const report_phase_series[3] = {"written", "accessed", "bandwidth"};

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* Stats of field `off` of every interval (HVT_NA left out). */
static int stats_of(const struct hvt_analysis *a, size_t off, struct series_stats *s)
{
	uint64_t *v = malloc((a->n ? a->n : 1) * sizeof(*v)), n = 0;
	double sum = 0;

	if (!v)
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	for (uint64_t k = 0; k < a->n; k++) {
		uint64_t x = *(const uint64_t *)((const char *)&a->iv[k] + off);

		if (x == HVT_NA)
			continue;
		if (!n || x > s->max) {
			s->max = x;
			s->max_seq = a->iv[k].seq;
		}
		v[n++] = x;
		sum += (double)x;
	}
	s->n = n;
	if (n) {
		qsort(v, n, sizeof(*v), cmp_u64);
		s->mean = sum / (double)n;
		s->min = v[0];
		s->median = v[n / 2];
		s->p95 = v[(n * 95 + 99) / 100 - 1];
	}
	free(v);
	return 0;
}

/* The totals the plain report always printed, from the per-interval figures. */
static void totals(struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	bool first = true;

	for (uint64_t k = 0; k < a->n; k++) {
		const struct hvt_iv_info *ii = &a->iv[k];

		rp->finals += !!(ii->flags & HVT_IV_FINAL);
		rp->missed_intervals += ii->missed_deadlines > 0;
		rp->missed_deadlines += ii->missed_deadlines;
		if (ii->ring_full != HVT_NA) {
			rp->ring_counted = true;
			rp->ring_full += ii->ring_full;
			rp->ring_full_intervals += ii->ring_full > 0;
		}
		rp->harvest_ns += ii->harvest_ns;
		if (ii->tracer_cpu_ns != HVT_NA) {
			rp->cpu_ns += ii->tracer_cpu_ns;
			rp->cpu_span_ns += ii->t_end_ns - ii->t_start_ns;
		}
		rp->busy_intervals += !!(ii->flags & HVT_IV_TRACER_BUSY);
		rp->refused_intervals += !!(ii->flags & HVT_IV_LAYOUT_REFUSED);
		if (ii->written != HVT_NA) {
			rp->written_sum += ii->written;
			if (first || ii->written > rp->peak_written) {
				rp->peak_written = ii->written;
				rp->peak_seq = ii->seq;
			}
			first = false;
			rp->complete_written += !(ii->flags & HVT_IV_FINAL);
		}
		if (ii->written_not_accessed != HVT_NA && ii->written_not_accessed) {
			rp->wna_pages += ii->written_not_accessed;
			rp->wna_intervals++;
		}
		if (ii->read_bytes != HVT_NA) {
			rp->bw_intervals++;
			rp->bw_ns += ii->t_end_ns - ii->t_start_ns;
			rp->bw_sum += ii->read_bytes + (ii->write_bytes != HVT_NA ? ii->write_bytes : 0);
			rp->bw_read += ii->write_bytes != HVT_NA ? ii->read_bytes : 0;
			rp->bw_write += ii->write_bytes != HVT_NA ? ii->write_bytes : 0;
		}
	}
	rp->span_ns = a->n ? a->iv[a->n - 1].t_end_ns - a->iv[0].t_start_ns : 0;
}

/* In how many of the final intervals page i of the range was written: each loaded on its own (finals). */
static uint32_t final_writes(const struct hvt_analysis *finals, uint64_t nfinal, uint64_t i)
{
	uint32_t n = 0;

	for (uint64_t f = 0; f < nfinal; f++)
		if (i < finals[f].npages)
			n += hvt_page_count(&finals[f], HVT_SET_WRITTEN, i);
	return n;
}

/* Pages written in any / every interval not cut short. The counts include the final intervals, so the
 * pages a final interval wrote are taken out of "every" by loading it on its own. Only the touched chunks
 * hold written pages. */
static int ever_every(struct report *rp, char *why, size_t whylen)
{
	const struct hvt_analysis *a = &rp->a;
	struct hvt_analysis *finals = NULL;
	uint64_t nfinal = 0;
	int rc = 0;

	if (!a->n_written)
		return 0;
	for (uint64_t k = 0; !rc && k < a->n; k++) {
		struct hvt_selection s = rp->o.sel;
		struct hvt_analysis *more;
		struct hvt_err err = {{0}};

		if (!(a->iv[k].flags & HVT_IV_FINAL) || a->iv[k].written == HVT_NA)
			continue;
		s.from = s.to = (struct hvt_point){HVT_POINT_INTERVAL, a->iv[k].seq};
		if (!(more = realloc(finals, (nfinal + 1) * sizeof(*finals)))) {
			rc = -ENOMEM;
			break;
		}
		finals = more;
		if (hvt_analysis_load(&finals[nfinal], rp->r, &s, NULL, &err)) {
			snprintf(why, whylen, "%s", err.msg);
			rc = -EINVAL;
			break;
		}
		nfinal++;
	}
	for (uint64_t c = 0; !rc && c < a->nchunks; c++) {
		const uint32_t *w = a->chunks[c].count[HVT_SET_WRITTEN];

		for (uint32_t j = 0; w && j < HVT_COUNT_CHUNK; j++) {
			uint32_t n = w[j];

			if (!n)
				continue;
			rp->ever++;
			rp->every +=
			    rp->complete_written &&
			    n - final_writes(finals, nfinal, a->chunks[c].first + j) == rp->complete_written;
		}
	}
	for (uint64_t f = 0; f < nfinal; f++)
		hvt_analysis_fini(&finals[f]);
	free(finals);
	return rc;
}

static int write_frequency(struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;

	if (!a->n_written)
		return 0;
	rp->hist = calloc(a->n_written + 1, sizeof(*rp->hist));
	rp->cdf = calloc(a->n_written + 1, sizeof(*rp->cdf));
	if (!rp->hist || !rp->cdf)
		return -ENOMEM;
	hvt_write_histogram(a, rp->hist);
	rp->ncdf = hvt_write_cdf(rp->hist, a->n_written, rp->cdf);
	for (uint64_t j = 1; j <= a->n_written; j++) {
		rp->pages_written += rp->hist[j];
		rp->page_writes += j * rp->hist[j];
	}
	return 0;
}

static int count_regions(void *ctx, const struct hvt_region_class *r, uint64_t repeat)
{
	struct report *rp = ctx;

	rp->region_count[r->cls] += repeat;
	return 0;
}

static int classes(struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;

	hvt_class_pages(a, &rp->o.th, rp->class_pages);
	return hvt_region_walk(a, &rp->o.th, count_regions, rp);
}

static int phases(struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	uint64_t *x = malloc((a->n ? a->n : 1) * sizeof(*x));

	if (!x)
		return -ENOMEM;
	for (int s = 0; s < 3; s++) {
		bool any = false;

		for (uint64_t k = 0; k < a->n; k++) {
			const struct hvt_iv_info *ii = &a->iv[k];
			uint64_t ns = ii->t_end_ns - ii->t_start_ns;

			/* an interval cut short is no level of its own */
			if (ii->flags & HVT_IV_FINAL)
				x[k] = HVT_NA;
			else if (s < 2)
				x[k] = s ? ii->accessed : ii->written;
			else if (ii->read_bytes == HVT_NA || !ns)
				x[k] = HVT_NA;
			else /* bytes/s: intervals of unequal length compare */
				x[k] =
				    (uint64_t)((double)(ii->read_bytes +
							(ii->write_bytes != HVT_NA ? ii->write_bytes : 0)) *
					       1e9 / (double)ns);
			any |= x[k] != HVT_NA;
		}
		if (!any && !(s < 2 && (s ? a->n_accessed : a->n_written)))
			continue;
		rp->phases[s] = malloc((a->n ? a->n : 1) * sizeof(uint64_t));
		if (!rp->phases[s]) {
			free(x);
			return -ENOMEM;
		}
		rp->nphases[s] = hvt_phases_detect(x, a->n, &rp->o.ph, rp->phases[s]);
	}
	free(x);
	return 0;
}

static int channels(struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;

	if (!a->nchannels)
		return 0;
	rp->ch = calloc(a->nchannels, sizeof(*rp->ch));
	if (!rp->ch)
		return -ENOMEM;
	for (uint32_t c = 0; c < a->nchannels; c++) {
		struct channel_stats *cs = &rp->ch[c];
		uint64_t ns = 0;

		cs->id = a->meta->channels.v[c].id;
		for (uint64_t k = 0; k < a->n; k++) {
			const struct hvt_iv_info *ii = &a->iv[k];
			const struct hvt_channel_bytes *b = &a->ch[k * a->nchannels + c];
			double dur = (double)(ii->t_end_ns - ii->t_start_ns);

			if (ii->read_bytes == HVT_NA || dur <= 0)
				continue;
			cs->intervals++;
			ns += ii->t_end_ns - ii->t_start_ns;
			cs->read += b->read_bytes;
			cs->write += b->write_bytes;
			if (b->read_bytes * 1e3 / dur > cs->peak_read_mbps) {
				cs->peak_read_mbps = b->read_bytes * 1e3 / dur;
				cs->peak_read_seq = ii->seq;
			}
			if (b->write_bytes * 1e3 / dur > cs->peak_write_mbps) {
				cs->peak_write_mbps = b->write_bytes * 1e3 / dur;
				cs->peak_write_seq = ii->seq;
			}
		}
		if (ns) {
			cs->mean_read_mbps = cs->read * 1e3 / (double)ns;
			cs->mean_write_mbps = cs->write * 1e3 / (double)ns;
		}
		if (a->bw == HVT_BW_TOTAL)
			cs->write = HVT_NA;
	}
	return 0;
}

/* The list --regions prints: one entry per 2 MiB region of RAM, so it follows the guest's size; bounded. */
static int region_list(struct report *rp, char *why, size_t whylen)
{
	uint64_t n = 0;
	int rc;

	for (int c = 0; c < HVT_CLASS_COUNT; c++)
		n += rp->region_count[c];
	rc = hvt_region_classes(&rp->a, &rp->o.th, REPORT_MAX_REGIONS, &rp->regions, &rp->nregions);
	if (rc == -E2BIG)
		snprintf(why, whylen,
			 "--regions: %" PRIu64
			 " regions of 2 MiB are more than %u to list; narrow them with --range",
			 n, REPORT_MAX_REGIONS);
	else if (rc)
		snprintf(why, whylen, "out of memory");
	return rc;
}

int report_compute(struct report *rp, char *why, size_t whylen)
{
	const struct hvt_analysis *a = &rp->a;
	int rc;

	totals(rp);
	for (int s = 0; s < 2; s++)
		if (stats_of(
			a, s ? offsetof(struct hvt_iv_info, accessed) : offsetof(struct hvt_iv_info, written),
			&rp->wss[s]) ||
		    stats_of(a,
			     s ? offsetof(struct hvt_iv_info, win_accessed)
			       : offsetof(struct hvt_iv_info, win_written),
			     &rp->win[s]))
			goto nomem;
	rc = ever_every(rp, why, whylen);
	if (rc == -ENOMEM)
		goto nomem;
	if (rc)
		return rc;
	if (write_frequency(rp) || classes(rp) || phases(rp) || channels(rp))
		goto nomem;
	if (rp->o.regions)
		return region_list(rp, why, whylen);
	return 0;
nomem:
	snprintf(why, whylen, "out of memory");
	return -ENOMEM;
}

void report_free(struct report *rp)
{
	free(rp->hist);
	free(rp->cdf);
	free(rp->regions);
	for (int s = 0; s < 3; s++)
		free(rp->phases[s]);
	free(rp->ch);
	free(rp->energy);
	report_owners_free(rp);
	hvt_analysis_fini(&rp->a);
}

bool report_say_incomplete(const struct report *rp)
{
	/* as every reader says it: problem names the trace, the interval, the record and the field */
	if (rp->a.damaged)
		fprintf(stderr,
			"hvmtrace report: %s; damaged trace: the %llu intervals before this one were read\n",
			rp->a.problem, (unsigned long long)rp->a.readable);
	else if (!rp->a.complete)
		fprintf(
		    stderr,
		    "hvmtrace report: %s: incomplete trace (%s); the %llu intervals before that point were "
		    "read\n",
		    rp->path, rp->a.problem, (unsigned long long)rp->a.readable);
	return rp->a.damaged || !rp->a.complete;
}
