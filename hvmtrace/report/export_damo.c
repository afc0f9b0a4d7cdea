// SPDX-License-Identifier: MIT
/*
 * hvmtrace export --damo (export_damo.h). The pages' state is kept as segments, runs of GFNs with one access
 * history, so its cost follows what the guest touched, not the size of its RAM; a window's snapshot is built
 * from them and merged under the cap (damo_regions.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "damo_regions.h"
#include "export_damo.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/trace_runs.h"
#include "hvmtrace/util.h"

/* GFNs [first, end) with one history: samples of this window that touched them, the last window's count,
 * and the windows since that count last changed. */
struct seg {
	uint64_t first, end;
	uint32_t cur, prev, age;
};

/* prev of a page no window has seen yet: its first window starts its age at 0 */
#define FRESH UINT32_MAX

struct segs {
	struct seg *v;
	size_t n, cap;
};

struct damo_export {
	FILE *f;
	z_stream z;
	bool z_open, failed;
	char buf[1 << 16];
	size_t used;
	uint64_t sample_us, lo, hi;
	uint32_t aggr, max_regions;
	uint32_t page_size;
	struct segs segs, tmp;
	const struct hvt_layout *layout; /* the one segs tile */
	uint32_t in_window;              /* samples taken in the current window */
	uint64_t window_start_ns, window_end_ns;
	uint64_t snapshots;
	struct damo_regions regions;
};

/* ---- output: JSON text through zlib ---- */

static void deflate_out(struct damo_export *x, int flush)
{
	unsigned char out[1 << 16];

	x->z.next_in = (unsigned char *)x->buf;
	x->z.avail_in = (uInt)x->used;
	do {
		x->z.next_out = out;
		x->z.avail_out = sizeof(out);
		if (deflate(&x->z, flush) == Z_STREAM_ERROR) {
			x->failed = true;
			return;
		}
		if (fwrite(out, 1, sizeof(out) - x->z.avail_out, x->f) != sizeof(out) - x->z.avail_out)
			x->failed = true;
	} while (x->z.avail_out == 0);
	x->used = 0;
}

__attribute__((format(printf, 2, 3))) static void put(struct damo_export *x, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (x->used > sizeof(x->buf) - 512)
		deflate_out(x, Z_NO_FLUSH);
	va_start(ap, fmt);
	n = vsnprintf(x->buf + x->used, sizeof(x->buf) - x->used, fmt, ap);
	va_end(ap);
	if (n > 0)
		x->used += (size_t)n < sizeof(x->buf) - x->used ? (size_t)n : sizeof(x->buf) - x->used - 1;
}

/* ---- segments ---- */

static int segs_push(struct segs *s, struct seg g)
{
	struct seg *last = s->n ? &s->v[s->n - 1] : NULL;

	if (g.end <= g.first)
		return 0;
	if (last && last->end == g.first && last->cur == g.cur && last->prev == g.prev &&
	    last->age == g.age) {
		last->end = g.end;
		return 0;
	}
	if (hvt_array_room((void **)&s->v, &s->cap, s->n, sizeof(*s->v)))
		return -ENOMEM;
	s->v[s->n++] = g;
	return 0;
}

static void segs_swap(struct damo_export *x)
{
	struct segs t = x->segs;

	x->segs = x->tmp;
	x->tmp = t;
	x->tmp.n = 0;
}

static int cmp_range(const void *a, const void *b)
{
	const uint64_t *p = a, *q = b;

	return p[0] < q[0] ? -1 : p[0] > q[0];
}

/* Tiles the slots of l cut to [lo, hi) with segments: a page already tiled keeps its history, a new one
 * starts untouched. The layout's slots need not be sorted. */
static int retile(struct damo_export *x, const struct hvt_layout *l)
{
	uint64_t(*pieces)[2] = malloc((l->nslots + 1) * sizeof(*pieces));
	size_t np = 0, i = 0;
	int rc = 0;

	if (!pieces)
		return -ENOMEM;
	for (uint32_t s = 0; s < l->nslots; s++) {
		uint64_t a = hvt_memslot_first_gfn(l, &l->slots[s]),
			 b = a + hvt_memslot_npages(l, &l->slots[s]);

		a = a > x->lo ? a : x->lo;
		b = b < x->hi ? b : x->hi;
		if (b > a) {
			pieces[np][0] = a;
			pieces[np++][1] = b;
		}
	}
	qsort(pieces, np, sizeof(*pieces), cmp_range);
	for (size_t p = 0; p < np && !rc; p++) {
		uint64_t at = pieces[p][0], end = pieces[p][1];

		while (i < x->segs.n && x->segs.v[i].end <= at)
			i++;
		for (size_t j = i; j < x->segs.n && x->segs.v[j].first < end && !rc; j++) {
			struct seg g = x->segs.v[j];

			g.first = g.first > at ? g.first : at;
			g.end = g.end < end ? g.end : end;
			if (g.first > at)
				rc = segs_push(&x->tmp, (struct seg){at, g.first, 0, FRESH, 0});
			if (!rc)
				rc = segs_push(&x->tmp, g);
			at = g.end;
		}
		if (!rc && at < end)
			rc = segs_push(&x->tmp, (struct seg){at, end, 0, FRESH, 0});
	}
	free(pieces);
	if (!rc) {
		segs_swap(x);
		x->layout = l;
		x->page_size = l->page_size;
	}
	return rc;
}

/* Appends the segments src[0, n) unchanged: the first through segs_push (it may continue the last), the
 * rest, already apart from each other, in one copy. */
static int segs_copy(struct segs *s, const struct seg *src, size_t n)
{
	if (!n)
		return 0;
	if (segs_push(s, src[0]))
		return -ENOMEM;
	while (s->cap < s->n + n - 1)
		if (hvt_array_room((void **)&s->v, &s->cap, s->cap, sizeof(*s->v)))
			return -ENOMEM;
	memcpy(s->v + s->n, src + 1, (n - 1) * sizeof(*src));
	s->n += n - 1;
	return 0;
}

/* The first segment of segs[from, n) that ends after gfn (n: none). Galloping from `from`: the next run is
 * usually near. */
static size_t segs_find(const struct segs *s, size_t from, uint64_t gfn)
{
	size_t lo = from, hi = from, step = 1;

	while (hi < s->n && s->v[hi].end <= gfn) {
		lo = hi + 1;
		hi = from + step;
		step *= 2;
	}
	hi = hi < s->n ? hi : s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].end <= gfn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* One sample: the pages of runs (ascending, inside the tiled slots) count one more access. The segments no
 * run reaches are copied as they are, so a sample costs its runs, not the guest's segments, in the loop. */
static int sample(struct damo_export *x, const struct hvt_runs *runs)
{
	size_t j = 0, i = 0;
	int rc = 0;

	while (i < x->segs.n && !rc) {
		size_t k = j < runs->n ? segs_find(&x->segs, i, runs->v[j].first) : x->segs.n;
		struct seg g;
		uint64_t at;

		if ((rc = segs_copy(&x->tmp, x->segs.v + i, k - i)) || k == x->segs.n)
			break;
		i = k;
		g = x->segs.v[i++];
		at = g.first;
		while (j < runs->n && runs->v[j].first < g.end && !rc) {
			uint64_t a = runs->v[j].first, b = a + runs->v[j].count;

			if (b <= at) {
				j++;
				continue;
			}
			a = a > at ? a : at;
			b = b < g.end ? b : g.end;
			rc = segs_push(&x->tmp, (struct seg){at, a, g.cur, g.prev, g.age});
			if (!rc)
				rc = segs_push(&x->tmp, (struct seg){a, b, g.cur + 1, g.prev, g.age});
			at = b;
			if (b < g.end)
				j++;
			else
				break;
		}
		if (!rc)
			rc = segs_push(&x->tmp, (struct seg){at, g.end, g.cur, g.prev, g.age});
	}
	if (!rc)
		segs_swap(x);
	return rc;
}

/* ---- snapshots ---- */

/* Ends the window: DAMON's rule for age (reset when nr_accesses changed, else one older; damo takes it as
 * the windows before this one with the same count, so a page's first window has age 0), then the
 * snapshot's regions. Page 0 gets a region of its own: damo takes a lowest address of 0 for "not yet seen"
 * (damo_record_info.get_guide_info), so its guide, and the heatmap's default range, would start at the end
 * of the first region instead. */
static int close_window(struct damo_export *x)
{
	struct damo_regions *r = &x->regions;
	uint64_t total = 0;
	int rc = 0;

	if (!x->in_window)
		return 0;
	x->tmp.n = 0;
	for (size_t i = 0; i < x->segs.n && !rc; i++) {
		struct seg g = x->segs.v[i];

		g.age = g.cur == g.prev ? g.age + 1 : 0;
		g.prev = g.cur;
		g.cur = 0;
		rc = segs_push(&x->tmp, g); /* neighbours that now share a history become one */
	}
	if (rc)
		return rc;
	segs_swap(x);
	r->n = 0;
	for (size_t i = 0; i < x->segs.n && !rc; i++) {
		struct seg g = x->segs.v[i];

		if (g.first == 0) {
			rc = damo_regions_add(r, 0, 1, g.prev, g.age);
			if (!rc)
				r->v[0].pinned = true;
			g.first = 1;
		}
		if (!rc && g.end > g.first)
			rc = damo_regions_add(r, g.first, g.end, g.prev, g.age);
	}
	if (!rc)
		rc = damo_regions_cap(r, x->max_regions, x->aggr);
	if (rc)
		return rc;
	damo_regions_settle(r);
	put(x, "%s\n{\"start_time\": %" PRIu64 ", \"end_time\": %" PRIu64 ", \"regions\": [",
	    x->snapshots ? "," : "", x->window_start_ns, x->window_end_ns);
	for (size_t i = 0; i < r->n; i++) {
		const struct damo_region *g = &r->v[i];

		put(x,
		    "%s{\"start\": %" PRIu64 ", \"end\": %" PRIu64
		    ", \"nr_accesses\": {\"samples\": %u, \"percent\": null}, \"age\": {\"usec\": null, "
		    "\"aggr_intervals\": %u}}",
		    i ? ", " : "", g->first * x->page_size, g->end * x->page_size, g->nr, damo_region_age(g));
		total += (g->end - g->first) * x->page_size;
	}
	put(x, "], \"total_bytes\": %" PRIu64 ", \"damos_stats\": null, \"sample_interval_us\": null}",
	    total);
	x->snapshots++;
	x->in_window = 0;
	return 0;
}

/* ---- the interface ---- */

struct damo_export *damo_export_new(FILE *f, uint64_t interval_ns, uint32_t aggr_intervals,
				    uint32_t max_regions, uint64_t lo, uint64_t hi)
{
	struct damo_export *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->f = f;
	x->sample_us = interval_ns / 1000 ? interval_ns / 1000 : 1;
	x->aggr = aggr_intervals ? aggr_intervals : 1;
	x->max_regions = max_regions ? max_regions : 1;
	x->lo = lo;
	x->hi = hi;
	if (deflateInit(&x->z, Z_DEFAULT_COMPRESSION) != Z_OK) {
		free(x);
		return NULL;
	}
	x->z_open = true;
	/* One record: DAMON's first kdamond and context, one target (the guest-physical address space); damo
	 * needs the intervals to show frequencies (`report access` refuses records without them). */
	put(x,
	    "[{\"kdamond_idx\": 0, \"context_idx\": 0, \"intervals\": {\"sample_us\": %" PRIu64
	    ", \"aggr_us\": %" PRIu64 ", \"ops_update_us\": %" PRIu64
	    "}, \"scheme_idx\": null, \"target_id\": 0, \"scheme_filters\": [], \"data_source\": \"unknown\", "
	    "\"snapshots\": [",
	    x->sample_us, x->sample_us * x->aggr, x->sample_us * x->aggr);
	return x;
}

int damo_export_interval(struct damo_export *x, const struct hvt_walk_iv *w)
{
	const struct hvt_interval *iv = &w->ir->hdr;
	const struct hvt_runs *runs = (iv->flags & HVT_IV_ACCESSED)  ? &w->ir->set[1]
				      : (iv->flags & HVT_IV_WRITTEN) ? &w->ir->set[0]
								     : NULL;
	int rc;

	if (!runs) /* no sets (a final record after a refused layout): not a sample */
		return 0;
	if (w->layout != x->layout && (rc = retile(x, w->layout)))
		return rc;
	if (!x->in_window)
		x->window_start_ns = iv->t_start_ns;
	x->window_end_ns = iv->t_end_ns;
	if ((rc = sample(x, runs)))
		return rc;
	if (++x->in_window == x->aggr && (rc = close_window(x)))
		return rc;
	return x->failed ? -EIO : 0;
}

int damo_export_finish(struct damo_export *x)
{
	int rc = close_window(x);

	if (rc)
		return rc;
	put(x, "]}]\n");
	deflate_out(x, Z_FINISH);
	return x->failed ? -EIO : 0;
}

void damo_export_free(struct damo_export *x)
{
	if (!x)
		return;
	if (x->z_open)
		deflateEnd(&x->z);
	free(x->segs.v);
	free(x->tmp.v);
	free(x->regions.v);
	free(x);
}
