// SPDX-License-Identifier: MIT
/* Per-page analyses (analysis.h): write-frequency histogram and CDF, page and 2 MiB region classes. */
#include <errno.h>
#include <stdlib.h>

#include "hvmtrace/analysis.h"

int hvt_write_histogram(const struct hvt_analysis *a, uint64_t *hist)
{
	if (!a->written_count)
		return -ENODATA;
	for (uint64_t j = 0; j <= a->n_written; j++)
		hist[j] = 0;
	for (uint64_t i = 0; i < a->npages; i++)
		if (hvt_pageset_test(&a->ram, i))
			hist[a->written_count[i]]++;
	return 0;
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

enum hvt_page_class hvt_page_class(const struct hvt_analysis *a, const struct hvt_class_thresholds *t,
				   uint64_t i)
{
	uint64_t w = a->written_count ? a->written_count[i] : 0;
	uint64_t acc = a->accessed_count ? a->accessed_count[i] : 0;
	uint64_t touched = a->accessed_count ? acc : w;
	uint64_t n_touched = a->accessed_count ? a->n_accessed : a->n_written;

	if (!touched)
		return a->accessed_count ? HVT_CLASS_UNTOUCHED : HVT_CLASS_UNKNOWN;
	if (a->written_count && (double)w >= t->write_heavy * (double)a->n_written)
		return HVT_CLASS_WRITE_HEAVY;
	if ((double)touched < t->cold * (double)n_touched)
		return HVT_CLASS_COLD;
	if (a->accessed_count && (double)acc >= t->read_mostly_min * (double)a->n_accessed &&
	    (double)w <= t->read_mostly_write * (double)acc)
		return HVT_CLASS_READ_MOSTLY;
	return HVT_CLASS_MIXED;
}

static enum hvt_page_class region_class(const uint64_t *pages)
{
	enum hvt_page_class best = HVT_CLASS_COUNT;

	/* touched classes first, in enum order (hotter first), so ties go to the hotter */
	for (int c = HVT_CLASS_WRITE_HEAVY; c <= HVT_CLASS_COLD; c++)
		if (pages[c] && (best == HVT_CLASS_COUNT || pages[c] > pages[best]))
			best = (enum hvt_page_class)c;
	if (best != HVT_CLASS_COUNT)
		return best;
	return pages[HVT_CLASS_UNKNOWN] > pages[HVT_CLASS_UNTOUCHED] ? HVT_CLASS_UNKNOWN
								     : HVT_CLASS_UNTOUCHED;
}

int hvt_region_classes(const struct hvt_analysis *a, const struct hvt_class_thresholds *t,
		       struct hvt_region_class **out, uint64_t *nout)
{
	uint64_t first = a->gfn_first / HVT_REGION_PAGES * HVT_REGION_PAGES, n = 0;
	uint64_t cap = (a->gfn_first + a->npages - first + HVT_REGION_PAGES - 1) / HVT_REGION_PAGES;
	struct hvt_region_class *v = calloc(cap ? cap : 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (uint64_t g = first; g < a->gfn_first + a->npages; g += HVT_REGION_PAGES) {
		struct hvt_region_class *rc = &v[n];
		uint64_t lo = g > a->gfn_first ? g - a->gfn_first : 0;
		uint64_t hi = g + HVT_REGION_PAGES - a->gfn_first;
		bool ram = false;

		*rc = (struct hvt_region_class){.gfn_first = g};
		for (uint64_t i = lo; i < hi && i < a->npages; i++)
			if (hvt_pageset_test(&a->ram, i)) {
				rc->pages[hvt_page_class(a, t, i)]++;
				ram = true;
			}
		if (!ram)
			continue;
		rc->cls = region_class(rc->pages);
		n++;
	}
	*out = v;
	*nout = n;
	return 0;
}
