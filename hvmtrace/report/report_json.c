// SPDX-License-Identifier: MIT
/* hvmtrace report --json: the same figures as one JSON object (docs/analyses.md); null = not available. */
#include <json-c/json.h>
#include <stdio.h>

#include "hvmtrace/json_number.h"

#include "report.h"
#include "report_energy.h"
#include "report_owners.h"

static struct json_object *u64_or_null(uint64_t v)
{
	return v == HVT_NA ? NULL : json_object_new_uint64(v);
}

static void add(struct json_object *o, const char *k, struct json_object *v)
{
	json_object_object_add(o, k, v);
}

static struct json_object *stats_json(const struct series_stats *s)
{
	struct json_object *o;

	if (!s->n)
		return NULL;
	o = json_object_new_object();
	add(o, "mean", hvt_json_new_double(s->mean));
	add(o, "min", json_object_new_uint64(s->min));
	add(o, "median", json_object_new_uint64(s->median));
	add(o, "p95", json_object_new_uint64(s->p95));
	add(o, "max", json_object_new_uint64(s->max));
	add(o, "max_seq", json_object_new_uint64(s->max_seq));
	return o;
}

static struct json_object *trace_json(const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	struct json_object *o = json_object_new_object();

	add(o, "path", json_object_new_string(rp->path));
	add(o, "vm", json_object_new_string(a->meta->vm_name));
	add(o, "mode", json_object_new_string(hvt_mode_name(a->meta->mode)));
	add(o, "interval_ns", json_object_new_uint64(a->meta->interval_ns));
	add(o, "page_size", json_object_new_uint64(a->page_size));
	add(o, "complete", json_object_new_boolean(a->complete));
	add(o, "problem", a->complete ? NULL : json_object_new_string(a->problem));
	add(o, "intervals_readable", json_object_new_uint64(a->readable));
	return o;
}

static struct json_object *selection_json(const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	struct json_object *o = json_object_new_object();

	add(o, "first_seq", json_object_new_uint64(a->iv[0].seq));
	add(o, "last_seq", json_object_new_uint64(a->iv[a->n - 1].seq));
	add(o, "intervals", json_object_new_uint64(a->n));
	add(o, "t_start_s", hvt_json_new_double(a->iv[0].t_start_ns / 1e9));
	add(o, "t_end_s", hvt_json_new_double(a->iv[a->n - 1].t_end_ns / 1e9));
	add(o, "first_gfn", json_object_new_uint64(a->gfn_first));
	add(o, "last_gfn", json_object_new_uint64(a->gfn_first + a->npages - 1));
	add(o, "pages", json_object_new_uint64(a->npages));
	add(o, "ram_pages", json_object_new_uint64(a->ram_pages));
	return o;
}

static struct json_object *totals_json(const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	struct json_object *o = json_object_new_object();
	bool w = a->n_written;

	add(o, "intervals", json_object_new_uint64(a->n));
	add(o, "final_intervals", json_object_new_uint64(rp->finals));
	add(o, "deadlines_missed", json_object_new_uint64(rp->missed_deadlines));
	add(o, "dirty_ring_full_exits", rp->ring_counted ? json_object_new_uint64(rp->ring_full) : NULL);
	add(o, "time_s", hvt_json_new_double(rp->span_ns / 1e9));
	add(o, "pages_ever_written", w ? json_object_new_uint64(rp->ever) : NULL);
	add(o, "pages_written_every_interval", w ? json_object_new_uint64(rp->every) : NULL);
	add(o, "peak_written_pages", w ? json_object_new_uint64(rp->peak_written) : NULL);
	add(o, "peak_written_seq", w ? json_object_new_uint64(rp->peak_seq) : NULL);
	add(o, "written_not_accessed", json_object_new_uint64(rp->wna_pages));
	add(o, "harvest_core_share",
	    hvt_json_new_double(rp->span_ns ? (double)rp->harvest_ns / rp->span_ns : 0));
	add(o, "tracer_core_share",
	    rp->cpu_span_ns ? hvt_json_new_double((double)rp->cpu_ns / rp->cpu_span_ns) : NULL);
	add(o, "tracer_busy_intervals", json_object_new_uint64(rp->busy_intervals));
	add(o, "layout_refused", json_object_new_boolean(rp->refused_intervals > 0));
	add(o, "read_bytes", a->bw == HVT_BW_SPLIT ? json_object_new_uint64(rp->bw_read) : NULL);
	add(o, "write_bytes", a->bw == HVT_BW_SPLIT ? json_object_new_uint64(rp->bw_write) : NULL);
	add(o, "total_bytes", a->bw != HVT_BW_NONE ? json_object_new_uint64(rp->bw_sum) : NULL);
	return o;
}

static struct json_object *intervals_json(const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	struct json_object *arr = json_object_new_array_ext((int)a->n);

	for (uint64_t k = 0; k < a->n; k++) {
		const struct hvt_iv_info *ii = &a->iv[k];
		struct json_object *o = json_object_new_object();

		add(o, "seq", json_object_new_uint64(ii->seq));
		add(o, "t_start_s", hvt_json_new_double(ii->t_start_ns / 1e9));
		add(o, "t_end_s", hvt_json_new_double(ii->t_end_ns / 1e9));
		add(o, "written", u64_or_null(ii->written));
		add(o, "accessed", u64_or_null(ii->accessed));
		add(o, "window_written", u64_or_null(ii->win_written));
		add(o, "window_accessed", u64_or_null(ii->win_accessed));
		add(o, "read_bytes", u64_or_null(ii->read_bytes));
		add(o, "write_bytes", u64_or_null(ii->write_bytes));
		add(o, "final", json_object_new_boolean(ii->flags & HVT_IV_FINAL));
		json_object_array_add(arr, o);
	}
	return arr;
}

static struct json_object *write_frequency_json(const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	struct json_object *o, *hist, *cdf;

	if (!rp->hist)
		return NULL;
	o = json_object_new_object();
	hist = json_object_new_array();
	cdf = json_object_new_array();
	for (uint64_t j = 0; j <= a->n_written; j++)
		json_object_array_add(hist, json_object_new_uint64(rp->hist[j]));
	for (uint64_t i = 0; i < rp->ncdf; i++) {
		struct json_object *p = json_object_new_object();

		add(p, "min_intervals", json_object_new_uint64(rp->cdf[i].min_count));
		add(p, "pages", json_object_new_uint64(rp->cdf[i].pages));
		add(p, "pages_pct", hvt_json_new_double(rp->cdf[i].pages_pct));
		add(p, "writes_pct", hvt_json_new_double(rp->cdf[i].writes_pct));
		json_object_array_add(cdf, p);
	}
	add(o, "intervals", json_object_new_uint64(a->n_written));
	add(o, "pages_written", json_object_new_uint64(rp->pages_written));
	add(o, "page_writes", json_object_new_uint64(rp->page_writes));
	add(o, "histogram", hist);
	add(o, "cdf", cdf);
	return o;
}

static bool class_available(const struct hvt_analysis *a, int c)
{
	if (c == HVT_CLASS_READ_MOSTLY || c == HVT_CLASS_UNTOUCHED)
		return a->n_accessed;
	if (c == HVT_CLASS_UNKNOWN)
		return !a->n_accessed;
	return true;
}

struct class_run_out {
	struct json_object *runs;
	const struct hvt_analysis *a;
};

static int add_class_run(void *ctx, uint64_t first, uint64_t count, enum hvt_page_class c)
{
	const struct class_run_out *o = ctx;
	struct json_object *r = json_object_new_array();

	json_object_array_add(r, json_object_new_uint64(o->a->gfn_first + first));
	json_object_array_add(r, json_object_new_uint64(count));
	json_object_array_add(r, json_object_new_string(hvt_class_name(c)));
	json_object_array_add(o->runs, r);
	return 0;
}

static struct json_object *classes_json(const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	struct json_object *o = json_object_new_object(), *th = json_object_new_object();
	struct json_object *pages = json_object_new_object(), *regions = json_object_new_object();

	add(th, "write_heavy", hvt_json_new_double(rp->o.th.write_heavy));
	add(th, "read_mostly", hvt_json_new_double(rp->o.th.read_mostly_min));
	add(th, "read_mostly_write", hvt_json_new_double(rp->o.th.read_mostly_write));
	add(th, "cold", hvt_json_new_double(rp->o.th.cold));
	for (int c = 0; c < HVT_CLASS_COUNT; c++) {
		bool ok = class_available(a, c);

		add(pages, hvt_class_name(c), ok ? json_object_new_uint64(rp->class_pages[c]) : NULL);
		add(regions, hvt_class_name(c), ok ? json_object_new_uint64(rp->region_count[c]) : NULL);
	}
	add(o, "thresholds", th);
	add(o, "pages", pages);
	add(o, "regions", regions);
	if (rp->o.pages) {
		struct json_object *runs = json_object_new_array();

		hvt_class_runs(a, &rp->o.th, add_class_run, &(struct class_run_out){runs, a});
		add(o, "page_runs", runs);
	}
	if (rp->o.regions) {
		struct json_object *list = json_object_new_array();

		for (uint64_t i = 0; i < rp->nregions; i++) {
			struct json_object *r = json_object_new_object(), *cnt = json_object_new_object();

			add(r, "first_gfn", json_object_new_uint64(rp->regions[i].gfn_first));
			add(r, "class", json_object_new_string(hvt_class_name(rp->regions[i].cls)));
			for (int c = 0; c < HVT_CLASS_COUNT; c++)
				if (class_available(a, c))
					add(cnt, hvt_class_name(c),
					    json_object_new_uint64(rp->regions[i].pages[c]));
			add(r, "pages", cnt);
			json_object_array_add(list, r);
		}
		add(o, "region_list", list);
	}
	return o;
}

static struct json_object *phases_json(const struct report *rp)
{
	struct json_object *o = json_object_new_object();

	add(o, "span", json_object_new_uint64(rp->o.ph.span));
	add(o, "rel", hvt_json_new_double(rp->o.ph.rel));
	for (int s = 0; s < 3; s++) {
		struct json_object *arr = NULL;

		if (rp->phases[s]) {
			arr = json_object_new_array();
			for (uint64_t i = 0; i < rp->nphases[s]; i++)
				json_object_array_add(arr,
						      json_object_new_uint64(rp->a.iv[rp->phases[s][i]].seq));
		}
		add(o, report_phase_series[s], arr);
	}
	return o;
}

static struct json_object *channels_json(const struct report *rp)
{
	const struct hvt_analysis *a = &rp->a;
	struct json_object *arr;

	if (!a->nchannels)
		return NULL;
	arr = json_object_new_array();
	for (uint32_t c = 0; c < a->nchannels; c++) {
		const struct channel_stats *cs = &rp->ch[c];
		struct json_object *o = json_object_new_object();
		bool split = cs->write != HVT_NA;

		add(o, "id", json_object_new_string(cs->id));
		add(o, "intervals", json_object_new_uint64(cs->intervals));
		add(o, split ? "read_bytes" : "total_bytes", json_object_new_uint64(cs->read));
		add(o, "write_bytes", split ? json_object_new_uint64(cs->write) : NULL);
		add(o, split ? "mean_read_MBps" : "mean_total_MBps", hvt_json_new_double(cs->mean_read_mbps));
		add(o, split ? "peak_read_MBps" : "peak_total_MBps", hvt_json_new_double(cs->peak_read_mbps));
		add(o, "mean_write_MBps", split ? hvt_json_new_double(cs->mean_write_mbps) : NULL);
		add(o, "peak_write_MBps", split ? hvt_json_new_double(cs->peak_write_mbps) : NULL);
		json_object_array_add(arr, o);
	}
	return arr;
}

struct json_object *report_json(const struct report *rp)
{
	struct json_object *o = json_object_new_object(), *wss = json_object_new_object();

	add(o, "trace", trace_json(rp));
	add(o, "selection", selection_json(rp));
	add(o, "totals", totals_json(rp));
	add(wss, "window", rp->a.window ? json_object_new_uint64(rp->a.window) : NULL); /* --no-windows */
	add(wss, "written", stats_json(&rp->wss[0]));
	add(wss, "accessed", stats_json(&rp->wss[1]));
	add(wss, "window_written", stats_json(&rp->win[0]));
	add(wss, "window_accessed", stats_json(&rp->win[1]));
	add(o, "working_set", wss);
	add(o, "write_frequency", write_frequency_json(rp));
	add(o, "classes", classes_json(rp));
	add(o, "phases", phases_json(rp));
	add(o, "channels", channels_json(rp));
	if (rp->energy)
		add(o, "energy", report_energy_json(rp));
	if (rp->owners)
		add(o, "by_owner", report_owners_json(rp));
	add(o, "intervals", intervals_json(rp));
	return o;
}

int report_print_json(FILE *f, const struct report *rp)
{
	struct json_object *o = report_json(rp);
	int rc;

	rc = fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) < 0 ? -1 : 0;
	json_object_put(o);
	return rc;
}
