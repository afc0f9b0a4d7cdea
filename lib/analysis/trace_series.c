// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/util.h"
#include "hvmtrace/trace_input.h"
#include "hvmtrace/trace_series.h"

static int parse_gfn(const char *s, char **end, uint64_t *v)
{
	errno = 0;
	if (*s < '0' || *s > '9')
		return -1;
	*v = strtoull(s, end, 0);
	return errno ? -1 : 0;
}

int series_parse_range(const struct hvt_option *opt, const char *arg, char *problem, size_t len)
{
	struct series_select *sel = opt->value;
	uint64_t a, b;
	char *end;

	if (parse_gfn(arg, &end, &a) || *end != '-' || parse_gfn(end + 1, &end, &b) || *end || b < a ||
	    b == UINT64_MAX) {
		snprintf(problem, len, "not GFN-GFN with first <= last (e.g. 0x1000-0x1fff)");
		return -1;
	}
	sel->range_given = true;
	sel->gfn_first = a;
	sel->gfn_end = b + 1;
	return 0;
}

int series_parse_point(const struct hvt_option *opt, const char *arg, char *problem, size_t len)
{
	struct series_point *p = opt->value;
	char *end;

	errno = 0;
	if (*arg >= '0' && *arg <= '9') {
		p->v = strtoull(arg, &end, 10);
		if (!errno && !*end) {
			p->given = true;
			p->is_time = false;
			return 0;
		}
	}
	if (hvt_parse_duration(arg, &p->v)) {
		snprintf(problem, len, "neither an interval seq (12) nor a time with a unit (5s, 1500ms)");
		return -1;
	}
	p->given = p->is_time = true;
	return 0;
}

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

void series_each_run(const struct hvt_runs *runs, uint64_t first, uint64_t end, series_run_fn fn, void *ctx)
{
	size_t k, stop;

	hvt_runs_range(runs, first, end, &k, &stop);
	for (; k < stop; k++) {
		uint64_t a = runs->v[k].first, b = a + runs->v[k].count;

		a = a < first ? first : a;
		b = b > end ? end : b;
		fn(ctx, a, b - a);
	}
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

/* Pages of runs inside [first, end). */
static uint64_t count_pages(const struct hvt_runs *runs, uint64_t first, uint64_t end)
{
	uint64_t n = 0;
	size_t k, stop;

	hvt_runs_range(runs, first, end, &k, &stop);
	for (; k < stop; k++) {
		uint64_t x = runs->v[k].first, y = x + runs->v[k].count;

		x = x < first ? first : x;
		y = y > end ? end : y;
		n += y - x;
	}
	return n;
}

struct walk {
	struct trace_series *s;
	const struct series_select *sel;
	series_hook hook;
	void *ctx;
	uint64_t t_first_ns, cap;
	bool started;
};

static bool selected(const struct walk *w, const struct hvt_interval *iv)
{
	const struct series_point *f = &w->sel->from, *t = &w->sel->to;
	uint64_t rel = iv->t_start_ns - w->t_first_ns, rel_end = iv->t_end_ns - w->t_first_ns;

	/* As report's selection: by time, the intervals that overlap [from, to) */
	if (f->given && (f->is_time ? rel_end <= f->v : iv->seq < f->v))
		return false;
	if (t->given && (t->is_time ? rel >= t->v : iv->seq > t->v))
		return false;
	return true;
}

static int take(void *ctx, const struct hvt_iv_runs *ir, const struct hvt_layout *l)
{
	const struct hvt_interval *iv = &ir->hdr;
	struct walk *w = ctx;
	struct trace_series *s = w->s;
	struct series_iv *v;

	if (!w->started) {
		w->started = true;
		w->t_first_ns = iv->t_start_ns;
	}
	if (!selected(w, iv))
		return 0;
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
	    .t0 = (iv->t_start_ns - w->t_first_ns) / 1e9,
	    .t1 = (iv->t_end_ns - w->t_first_ns) / 1e9,
	    .flags = iv->flags,
	};
	if (iv->flags & HVT_IV_WRITTEN)
		v->written = count_pages(&ir->set[0], s->gfn_first, s->gfn_end);
	if (iv->flags & HVT_IV_ACCESSED)
		v->accessed = count_pages(&ir->set[1], s->gfn_first, s->gfn_end);
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
	return w->hook ? w->hook(w->ctx, s, ir, l, s->niv - 1) : 0;
}

int trace_series_open(struct trace_series *s, const char *cmd, const char *path,
		      const struct series_select *sel)
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
	if (collect_slots(s))
		return TRACE_OUTPUT_FAILED;
	s->gfn_first = s->slots[0].first;
	s->gfn_end = s->slots[s->nslots - 1].end;
	if (sel->range_given) {
		if (sel->gfn_first >= s->gfn_end || sel->gfn_end <= s->gfn_first) {
			fprintf(stderr,
				"hvmtrace %s: --range 0x%" PRIx64 "-0x%" PRIx64
				": outside the guest's RAM (GFN 0x%" PRIx64 "-0x%" PRIx64 ")\n",
				cmd, sel->gfn_first, sel->gfn_end - 1, s->gfn_first, s->gfn_end - 1);
			return TRACE_USAGE;
		}
		s->gfn_first = sel->gfn_first > s->gfn_first ? sel->gfn_first : s->gfn_first;
		s->gfn_end = sel->gfn_end < s->gfn_end ? sel->gfn_end : s->gfn_end;
	}
	s->bandwidth = s->meta->bandwidth_available;
	s->bw_total = s->meta->bandwidth_source == HVT_BW_SOURCE_RESCTRL_TOTAL;
	s->nchannels = s->bandwidth ? s->meta->channels.n : 0;
	return 0;
}

int trace_series_walk(struct trace_series *s, const struct series_select *sel, series_hook hook, void *ctx)
{
	struct walk w = {.s = s, .sel = sel, .hook = hook, .ctx = ctx};
	int rc;

	rc = trace_input_each(s->cmd, s->path, s->r, take, &w);
	s->incomplete = rc == TRACE_INCOMPLETE;
	if (rc && rc != TRACE_INCOMPLETE)
		return rc;
	if (!s->niv) {
		fprintf(stderr, "hvmtrace %s: %s: no interval in the --from/--to range\n", s->cmd, s->path);
		return TRACE_USAGE;
	}
	return rc;
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
		      const struct series_select *sel, series_hook hook, void *ctx)
{
	int rc = trace_series_open(s, cmd, path, sel);

	return rc ? rc : trace_series_walk(s, sel, hook, ctx);
}
