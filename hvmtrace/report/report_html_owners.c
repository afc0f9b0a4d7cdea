// SPDX-License-Identifier: MIT
/* report --html --by (report_html_owners.h): the legend's counts per interval, each cell's owner once. */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "attribute/owners_interval.h"
#include "hvmtrace/trace_input.h"
#include "hvmtrace/util.h"
#include "report_html_owners.h"

#define LEGEND_MAX 12 /* top writers in the legend */

struct html_owners {
	struct owners_timeline tl;
	struct owners_interval v;
	int by;
	const char *file;
	size_t snapshot, count;
	uint64_t (*total)[2]; /* per slot: written, accessed page-intervals */
	bool have_t;
	uint64_t t_first, t_last; /* the selection's time, trace clock */
	/* the cells */
	uint32_t *best, *best_pages; /* per cell: its owner's slot (UINT32_MAX none yet) and pages */
	struct {
		uint32_t slot, pages;
	} * acc;
	size_t nacc, acc_cap;
	uint64_t cell; /* the cell acc counts */
	const struct hvt_gfn_bins *bins;
	bool oom;
};

static size_t slot_of(const struct html_owners *h, uint32_t owner)
{
	return owners_slot_of(h->v.nrows, owner);
}

static uint32_t owner_of_slot(const struct html_owners *h, size_t s)
{
	return owners_owner_of_slot(h->v.nrows, s);
}

struct html_owners *html_owners_open(const struct trace_series *s, int by, const char *file, int snapshot)
{
	struct html_owners *h = calloc(1, sizeof(*h));

	if (!h) {
		fprintf(stderr, "hvmtrace report: out of memory reading the owners\n");
		return NULL;
	}
	h->by = by, h->file = file, h->snapshot = (size_t)snapshot;
	if (owners_timeline_load("hvmtrace report", file, (size_t)snapshot, s->r, s->path, &h->tl,
				 &h->count)) {
		free(h);
		return NULL;
	}
	for (size_t i = 0; i < h->tl.n; i++)
		if (h->tl.snap[i].page_size != s->page_size) {
			fprintf(stderr,
				"hvmtrace report: %s has pages of %" PRIu32
				" bytes, owners snapshot %zu's are %" PRIu32 " bytes\n",
				s->path, s->page_size, i, h->tl.snap[i].page_size);
			html_owners_free(h);
			return NULL;
		}
	if (owners_interval_init(&h->v, &h->tl, by) ||
	    !(h->total = calloc(h->v.nrows + OWNERS_SLOTS_SPECIAL, sizeof(*h->total)))) {
		fprintf(stderr, "hvmtrace report: out of memory reading the owners\n");
		html_owners_free(h);
		return NULL;
	}
	return h;
}

struct count_ctx {
	struct html_owners *h;
	int kind;
};

static void count_piece(void *ctx, uint64_t first, uint64_t count, uint32_t owner)
{
	struct count_ctx *c = ctx;

	(void)first;
	c->h->total[slot_of(c->h, owner)][c->kind] += count;
}

int html_owners_interval(struct html_owners *h, const struct hvt_iv_runs *ir)
{
	const struct owners_map *m = owners_interval_map(&h->v, ir->hdr.t_start_ns, ir->hdr.t_end_ns);

	if (!m) {
		fprintf(stderr, "hvmtrace report: out of memory attributing interval %" PRIu64 "\n",
			ir->hdr.seq);
		return TRACE_OUTPUT_FAILED;
	}
	if (!h->have_t)
		h->t_first = ir->hdr.t_start_ns, h->have_t = true;
	h->t_last = ir->hdr.t_end_ns;
	for (int k = 0; k < 2; k++) {
		struct count_ctx c = {h, k};
		size_t cursor = 0;

		if (!(ir->hdr.flags & (k ? HVT_IV_ACCESSED : HVT_IV_WRITTEN)))
			continue;
		for (size_t i = 0; i < ir->set[k].n; i++)
			owners_map_pieces(m, &cursor, ir->set[k].v[i].first, ir->set[k].v[i].count,
					  count_piece, &c);
	}
	return 0;
}

/* The owner holding most of the cell's pages counted so far becomes (or stays) the cell's. */
static void finish_cell(struct html_owners *h)
{
	for (size_t i = 0; i < h->nacc; i++)
		if (h->best[h->cell] == UINT32_MAX || h->acc[i].pages > h->best_pages[h->cell])
			h->best[h->cell] = h->acc[i].slot, h->best_pages[h->cell] = h->acc[i].pages;
	h->nacc = 0;
}

static void cell_piece(void *ctx, uint64_t first, uint64_t count, uint32_t owner)
{
	struct html_owners *h = ctx;
	uint32_t slot = (uint32_t)slot_of(h, owner);

	while (count) {
		const struct hvt_bin_seg *g = hvt_gfn_bins_seg_of(h->bins, first);
		uint64_t cell, end, n;
		size_t i;

		if (!g || g->gap)
			return; /* a gap the display leaves out */
		cell = g->bin0 + (first - g->first) / h->bins->pages_per_bin;
		end = g->first + (cell - g->bin0 + 1) * h->bins->pages_per_bin;
		end = end < g->end ? end : g->end;
		n = end - first < count ? end - first : count;
		if (cell != h->cell)
			finish_cell(h), h->cell = cell;
		for (i = 0; i < h->nacc && h->acc[i].slot != slot; i++)
			;
		if (i == h->nacc) {
			if (hvt_array_room((void **)&h->acc, &h->acc_cap, h->nacc, sizeof(*h->acc))) {
				h->oom = true;
				return;
			}
			h->acc[h->nacc++].slot = slot, h->acc[i].pages = 0;
		}
		h->acc[i].pages += (uint32_t)n;
		first += n, count -= n;
	}
}

static int label_index(struct html_owners *h, int32_t *label_of, size_t slot, struct json_object *labels)
{
	char buf[300];

	if (label_of[slot] < 0) {
		owners_row_label(&h->v, owner_of_slot(h, slot), buf, sizeof(buf));
		label_of[slot] = (int32_t)json_object_array_length(labels);
		json_object_array_add(labels, json_object_new_string(buf));
	}
	return label_of[slot];
}

static void add_run(struct json_object *runs, uint64_t first, uint64_t n, int label, uint32_t pages)
{
	struct json_object *r = json_object_new_array();

	json_object_array_add(r, json_object_new_uint64(first));
	json_object_array_add(r, json_object_new_uint64(n));
	json_object_array_add(r, json_object_new_int(label));
	json_object_array_add(r, json_object_new_uint64(pages));
	json_object_array_add(runs, r);
}

struct json_object *html_owners_json(struct html_owners *h, const struct trace_series *s,
				     const struct hvt_gfn_bins *cells)
{
	size_t nslots = h->v.nrows + OWNERS_SLOTS_SPECIAL, nord = 0;
	const struct owners_map *m = owners_interval_map(&h->v, h->t_first, h->t_last);
	int32_t *label_of = malloc(nslots * sizeof(*label_of));
	uint32_t *order = malloc(nslots * sizeof(*order));
	struct json_object *o, *labels, *runs, *legend;
	uint64_t run_first = 0, run_n = 0;
	int run_label = -1;
	uint32_t run_pages = 0;
	char source[600];

	h->best = malloc((cells->nbins + 1) * sizeof(*h->best));
	h->best_pages = calloc(cells->nbins + 1, sizeof(*h->best_pages));
	if (!m || !label_of || !order || !h->best || !h->best_pages) {
		free(label_of);
		free(order);
		fprintf(stderr, "hvmtrace report: out of memory placing the owners\n");
		return NULL;
	}
	for (size_t i = 0; i < nslots; i++)
		label_of[i] = -1;
	for (uint64_t c = 0; c < cells->nbins; c++)
		h->best[c] = UINT32_MAX;
	h->bins = cells;
	h->cell = 0;
	for (uint32_t i = 0; i < s->nslots; i++) {
		uint64_t f = s->slots[i].first > s->gfn_first ? s->slots[i].first : s->gfn_first;
		uint64_t e = s->slots[i].end < s->gfn_end ? s->slots[i].end : s->gfn_end;
		size_t cursor = 0;

		if (f < e)
			owners_map_pieces(m, &cursor, f, e - f, cell_piece, h);
	}
	finish_cell(h);
	o = json_object_new_object();
	labels = json_object_new_array();
	runs = json_object_new_array();
	legend = json_object_new_array();
	for (uint64_t c = 0; c <= cells->nbins; c++) {
		int label = c < cells->nbins && h->best[c] != UINT32_MAX
				? label_index(h, label_of, h->best[c], labels)
				: -1;
		uint32_t pages = label >= 0 ? h->best_pages[c] : 0;

		if (run_n && (label != run_label || pages != run_pages || c == cells->nbins)) {
			if (run_label >= 0)
				add_run(runs, run_first, run_n, run_label, run_pages);
			run_n = 0;
		}
		if (!run_n)
			run_first = c, run_label = label, run_pages = pages;
		run_n++;
	}
	for (size_t i = 0; i < h->v.nrows; i++)
		if (h->v.rows[i].type == h->by && (h->total[i][0] || h->total[i][1]))
			order[nord++] = (uint32_t)i;
	owners_rank_writers(order, nord, h->total);
	nord = nord < LEGEND_MAX ? nord : LEGEND_MAX;
	for (size_t i = 0; i < nord + OWNERS_SLOTS_SPECIAL; i++) {
		size_t slot = i < nord ? order[i] : h->v.nrows + (i - nord);
		struct json_object *e;

		if (i >= nord && !h->total[slot][0] && !h->total[slot][1])
			continue;
		e = json_object_new_object();
		json_object_object_add(e, "label",
				       json_object_new_int(label_index(h, label_of, slot, labels)));
		json_object_object_add(e, "written", json_object_new_uint64(h->total[slot][0]));
		json_object_object_add(e, "accessed",
				       s->meta->accessed_available ? json_object_new_uint64(h->total[slot][1])
								   : NULL);
		json_object_array_add(legend, e);
	}
	if (h->file)
		snprintf(source, sizeof(source), "%s, snapshot %zu of %zu", h->file, h->snapshot, h->count);
	else
		snprintf(source, sizeof(source), "the trace's %zu snapshots", h->tl.n);
	json_object_object_add(o, "by",
			       json_object_new_string(h->by == HVT_OWN_PROCESS ? "process"
						      : h->by == HVT_OWN_KIND  ? "kind"
									       : "cgroup"));
	json_object_object_add(o, "source", json_object_new_string(source));
	json_object_object_add(o, "labels", labels);
	json_object_object_add(o, "cells", runs);
	json_object_object_add(o, "legend", legend);
	free(label_of);
	free(order);
	if (h->oom) {
		json_object_put(o);
		fprintf(stderr, "hvmtrace report: out of memory placing the owners\n");
		return NULL;
	}
	return o;
}

void html_owners_free(struct html_owners *h)
{
	if (!h)
		return;
	owners_interval_free(&h->v);
	owners_timeline_free(&h->tl);
	free(h->total);
	free(h->best);
	free(h->best_pages);
	free(h->acc);
	free(h);
}
