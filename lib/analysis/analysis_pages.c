// SPDX-License-Identifier: MIT
/* Per-page analyses (analysis.h): write-frequency histogram and CDF, page classes. */
#include <errno.h>
#include <stdlib.h>

#include "hvmtrace/analysis.h"

static int histogram_span(void *ctx, const struct hvt_page_span *s)
{
	uint64_t *hist = ctx;

	if (!s->count_of[HVT_SET_WRITTEN])
		hist[0] += s->count;
	else
		for (uint64_t j = 0; j < s->count; j++)
			hist[s->count_of[HVT_SET_WRITTEN][j]]++;
	return 0;
}

int hvt_write_histogram(const struct hvt_analysis *a, uint64_t *hist)
{
	if (!a->n_written)
		return -ENODATA;
	for (uint64_t j = 0; j <= a->n_written; j++)
		hist[j] = 0;
	return hvt_page_spans(a, histogram_span, hist);
}

uint64_t hvt_write_cdf(const uint64_t *hist, uint64_t n_written, struct hvt_cdf_point *out)
{
	uint64_t pages_total = 0, writes_total = 0, pages = 0, writes = 0, n = 0;

	for (uint64_t j = 1; j <= n_written; j++) {
		pages_total += hist[j];
		writes_total += j * hist[j];
	}
	for (uint64_t j = n_written; j >= 1; j--) {
		if (!hist[j])
			continue;
		pages += hist[j];
		writes += j * hist[j];
		out[n++] = (struct hvt_cdf_point){
		    .min_count = j,
		    .pages = pages,
		    .pages_pct = 100.0 * (double)pages / (double)pages_total,
		    .writes_pct = 100.0 * (double)writes / (double)writes_total,
		};
	}
	return n;
}

const struct hvt_class_thresholds hvt_class_defaults = {
    .write_heavy = 0.5,
    .read_mostly_min = 0.25,
    .read_mostly_write = 0.1,
    .cold = 0.05,
};

static const char *const class_names[HVT_CLASS_COUNT] = {
    [HVT_CLASS_WRITE_HEAVY] = "write-heavy",
    [HVT_CLASS_READ_MOSTLY] = "read-mostly",
    [HVT_CLASS_MIXED] = "mixed",
    [HVT_CLASS_COLD] = "cold",
    [HVT_CLASS_UNTOUCHED] = "untouched",
    [HVT_CLASS_UNKNOWN] = "unknown",
};

const char *hvt_class_name(enum hvt_page_class c)
{
	return (unsigned)c < HVT_CLASS_COUNT ? class_names[c] : "?";
}

enum hvt_page_class hvt_class_of(const struct hvt_analysis *a, const struct hvt_class_thresholds *t,
				 uint32_t w, uint32_t acc)
{
	bool written = a->n_written, accessed = a->n_accessed;
	uint64_t touched = accessed ? acc : w;
	uint64_t n_touched = accessed ? a->n_accessed : a->n_written;

	if (!touched)
		return accessed ? HVT_CLASS_UNTOUCHED : HVT_CLASS_UNKNOWN;
	if (written && (double)w >= t->write_heavy * (double)a->n_written)
		return HVT_CLASS_WRITE_HEAVY;
	if ((double)touched < t->cold * (double)n_touched)
		return HVT_CLASS_COLD;
	if (accessed && (double)acc >= t->read_mostly_min * (double)a->n_accessed &&
	    (double)w <= t->read_mostly_write * (double)acc)
		return HVT_CLASS_READ_MOSTLY;
	return HVT_CLASS_MIXED;
}

enum hvt_page_class hvt_page_class(const struct hvt_analysis *a, const struct hvt_class_thresholds *t,
				   uint64_t i)
{
	return hvt_class_of(a, t, hvt_page_count(a, HVT_SET_WRITTEN, i),
			    hvt_page_count(a, HVT_SET_ACCESSED, i));
}

/* The class of page j of a span. */
static enum hvt_page_class span_class(const struct hvt_analysis *a, const struct hvt_class_thresholds *t,
				      const struct hvt_page_span *s, uint64_t j)
{
	return hvt_class_of(a, t, s->count_of[0] ? s->count_of[0][j] : 0,
			    s->count_of[1] ? s->count_of[1][j] : 0);
}

struct class_runs {
	const struct hvt_analysis *a;
	const struct hvt_class_thresholds *t;
	hvt_class_run_fn fn;
	void *ctx;
	uint64_t first, count; /* the run so far; count 0: none */
	enum hvt_page_class cls;
};

/* Pages [first, first + count) of class c join the run, or end it and start the next. */
static int class_run_add(struct class_runs *x, uint64_t first, uint64_t count, enum hvt_page_class c)
{
	int rc;

	if (x->count && x->first + x->count == first && x->cls == c) {
		x->count += count;
		return 0;
	}
	if (x->count && (rc = x->fn(x->ctx, x->first, x->count, x->cls)))
		return rc;
	x->first = first;
	x->count = count;
	x->cls = c;
	return 0;
}

static int class_runs_span(void *ctx, const struct hvt_page_span *s)
{
	struct class_runs *x = ctx;
	int rc = 0;

	if (!s->count_of[0] && !s->count_of[1])
		return class_run_add(x, s->first, s->count, hvt_class_of(x->a, x->t, 0, 0));
	for (uint64_t j = 0; !rc && j < s->count; j++)
		rc = class_run_add(x, s->first + j, 1, span_class(x->a, x->t, s, j));
	return rc;
}

int hvt_class_runs(const struct hvt_analysis *a, const struct hvt_class_thresholds *t, hvt_class_run_fn fn,
		   void *ctx)
{
	struct class_runs x = {.a = a, .t = t, .fn = fn, .ctx = ctx};
	int rc = hvt_page_spans(a, class_runs_span, &x);

	if (!rc && x.count)
		rc = fn(ctx, x.first, x.count, x.cls);
	return rc;
}

static int count_class_run(void *ctx, uint64_t first, uint64_t count, enum hvt_page_class c)
{
	uint64_t *out = ctx;

	(void)first;
	out[c] += count;
	return 0;
}

void hvt_class_pages(const struct hvt_analysis *a, const struct hvt_class_thresholds *t,
		     uint64_t out[HVT_CLASS_COUNT])
{
	for (int c = 0; c < HVT_CLASS_COUNT; c++)
		out[c] = 0;
	hvt_class_runs(a, t, count_class_run, out);
}
