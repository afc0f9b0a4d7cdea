// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/trace_input.h"
#include "hvmtrace/trace_series.h"

static int cmp_slot(const void *a, const void *b)
{
	const struct series_slot *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/* Every layout's slots, sorted and merged: the RAM the pictures draw. */
static int collect_slots(struct trace_series *s)
{
	struct hvt_trace_status st;
	uint32_t n = 0, cap = 0;

	hvt_trace_get_status(s->r, &st);
	for (uint64_t i = 0; i < st.layouts; i++) {
		const struct hvt_layout *l = hvt_trace_layout_at(s->r, i);

		s->page_size = l->page_size;
		for (uint32_t k = 0; k < l->nslots; k++) {
			if (n == cap) {
				struct series_slot *v;

				cap = cap ? 2 * cap : 16;
				v = realloc(s->slots, cap * sizeof(*v));
				if (!v)
					return -1;
				s->slots = v;
			}
			s->slots[n].first = hvt_memslot_first_gfn(l, &l->slots[k]);
			s->slots[n].end = s->slots[n].first + hvt_memslot_npages(l, &l->slots[k]);
			snprintf(s->slots[n].name, sizeof(s->slots[n].name), "%s", l->slots[k].name);
			n++;
		}
	}
	qsort(s->slots, n, sizeof(*s->slots), cmp_slot);
	s->nslots = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct series_slot *last = s->nslots ? &s->slots[s->nslots - 1] : NULL;

		if (last && s->slots[i].first < last->end) {
			if (s->slots[i].end > last->end)
				last->end = s->slots[i].end;
			continue;
		}
		s->slots[s->nslots++] = s->slots[i];
	}
	return 0;
}

const char *series_channel_of(const struct hvt_layout *l, uint64_t gfn)
{
	uint64_t gpa = gfn * l->page_size;

	for (uint32_t i = 0; i < l->nslots; i++)
		for (uint32_t e = 0; e < l->slots[i].nextents; e++) {
			const struct hvt_extent *x = &l->slots[i].extents[e];

			if (gpa >= x->gpa && gpa < x->gpa + x->size)
				return x->channel[0] ? x->channel : NULL;
		}
	return NULL;
}

struct walk {
	struct trace_series *s;
	series_hook hook;
	void *ctx;
	uint64_t cap;
};

static int take(void *ctx, const struct hvt_walk_iv *wi)
{
	const struct hvt_iv_runs *ir = wi->ir;
	const struct hvt_interval *iv = &ir->hdr;
	struct walk *w = ctx;
	struct trace_series *s = w->s;
	struct series_iv *v;

	if (s->niv == w->cap) {
		uint64_t cap = w->cap ? 2 * w->cap : 256;
		void *a = realloc(s->iv, cap * sizeof(*s->iv));

		if (!a)
			return TRACE_OUTPUT_FAILED;
		s->iv = a;
		if (s->nchannels) {
			if (!(a = realloc(s->read, cap * s->nchannels * sizeof(uint64_t))))
				return TRACE_OUTPUT_FAILED;
			s->read = a;
			if (!(a = realloc(s->write, cap * s->nchannels * sizeof(uint64_t))))
				return TRACE_OUTPUT_FAILED;
			s->write = a;
		}
		w->cap = cap;
	}
	v = &s->iv[s->niv];
	*v = (struct series_iv){
	    .seq = iv->seq,
	    .t0 = (iv->t_start_ns - wi->t0_ns) / 1e9,
	    .t1 = (iv->t_end_ns - wi->t0_ns) / 1e9,
	    .flags = iv->flags,
	    .written = (iv->flags & HVT_IV_WRITTEN) ? ir->set[0].pages : 0,
	    .accessed = (iv->flags & HVT_IV_ACCESSED) ? ir->set[1].pages : 0,
	};
	for (uint32_t c = 0; c < s->nchannels; c++) {
		s->read[s->niv * s->nchannels + c] = 0;
		s->write[s->niv * s->nchannels + c] = 0;
	}
	for (uint32_t c = 0; (iv->flags & HVT_IV_BANDWIDTH) && c < iv->nchannels; c++)
		if (iv->channels[c].channel < s->nchannels) {
			s->read[s->niv * s->nchannels + iv->channels[c].channel] = iv->channels[c].read_bytes;
			s->write[s->niv * s->nchannels + iv->channels[c].channel] =
			    iv->channels[c].write_bytes;
		}
	s->niv++;
	return w->hook ? w->hook(w->ctx, s, ir, wi->layout, s->niv - 1) : 0;
}

int trace_series_open(struct trace_series *s, const char *cmd, const char *path,
		      const struct hvt_selection *sel)
{
	memset(s, 0, sizeof(*s));
	s->cmd = cmd;
	s->path = path;
	s->r = trace_input_open(cmd, path);
	if (!s->r)
		return TRACE_USAGE;
	s->meta = hvt_trace_meta(s->r);
	if (!hvt_trace_interval_count(s->r)) {
		fprintf(stderr, "hvmtrace %s: %s: the trace holds no interval\n", cmd, path);
		return TRACE_USAGE;
	}
	if (trace_input_span(cmd, path, s->r, sel, &s->gfn_first, &s->gfn_end))
		return TRACE_USAGE;
	if (collect_slots(s))
		return TRACE_OUTPUT_FAILED;
	s->bandwidth = s->meta->bandwidth_available;
	s->bw_total = s->meta->bandwidth_source == HVT_BW_SOURCE_RESCTRL_TOTAL;
	s->nchannels = s->bandwidth ? s->meta->channels.n : 0;
	return 0;
}

int trace_series_walk(struct trace_series *s, const struct hvt_selection *sel, series_hook hook, void *ctx)
{
	struct walk w = {.s = s, .hook = hook, .ctx = ctx};
	int rc = trace_input_walk(s->cmd, s->path, s->r, sel, s->gfn_first, s->gfn_end, true, take, &w);

	s->incomplete = rc == TRACE_INCOMPLETE;
	return rc;
}

uint64_t trace_series_count(const struct trace_series *s, const struct hvt_selection *sel)
{
	struct hvt_walk_end end;
	struct hvt_err err;

	/* without --from/--to, every interval: no need to read them */
	if (sel->from.kind == HVT_POINT_NONE && sel->to.kind == HVT_POINT_NONE)
		return hvt_trace_interval_count(s->r);
	if (hvt_select_walk(s->r, sel, s->gfn_first, s->gfn_end, NULL, NULL, &end, &err))
		return hvt_trace_interval_count(s->r);
	return end.selected;
}

void trace_series_fini(struct trace_series *s)
{
	if (s->r)
		hvt_trace_reader_close(s->r);
	free(s->slots);
	free(s->iv);
	free(s->read);
	free(s->write);
	memset(s, 0, sizeof(*s));
}

int trace_series_load(struct trace_series *s, const char *cmd, const char *path,
		      const struct hvt_selection *sel, series_hook hook, void *ctx)
{
	int rc = trace_series_open(s, cmd, path, sel);

	return rc ? rc : trace_series_walk(s, sel, hook, ctx);
}
