// SPDX-License-Identifier: MIT
/*
 * hvmtrace export: a trace as JSON Lines (one object per interval) and/or CSV (one row per interval, or one
 * row per page run with --csv-pages), and forms for other tools; of the intervals --from/--to select, with
 * the page runs and counts cut to --range (select.h). Field names are documented in docs/formats.md and
 * stay stable.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "report/export_owners.h"
#include "hvmtrace/util.h"
#include "report/export_damo.h"
#include "report/export_interop.h"
#include "report/export_pcm.h"
#include "hvmtrace/error.h"
#include "hvmtrace/files.h"
#include "hvmtrace/interval_json.h"
#include "hvmtrace/options.h"
#include "hvmtrace/trace_input.h"

struct out {
	const char *path;
	const char *option; /* for messages */
	struct hvt_outfile file;
	FILE *f;
};

/* Each output is written to a temporary file and renamed when complete (hvmtrace/files.h). */
static int open_out(struct out *o)
{
	struct hvt_err err = {{0}};

	if (!o->path)
		return 0;
	if (hvt_outfile_open(&o->file, o->path, &err)) {
		fprintf(stderr, "hvmtrace export: %s\n", err.msg);
		return -1;
	}
	o->f = o->file.f;
	return 0;
}

/* Keeps the output when keep, else leaves what was there before. */
static int close_out(struct out *o, bool keep)
{
	struct hvt_err err = {{0}};

	if (!o->f)
		return 0;
	o->f = NULL;
	if (!keep) {
		hvt_outfile_abort(&o->file);
		return 0;
	}
	if (hvt_outfile_commit(&o->file, &err)) {
		fprintf(stderr, "hvmtrace export: %s\n", err.msg);
		return -1;
	}
	return 0;
}

/* Standard output, or an existing file that is not regular (/dev/stdout, a FIFO): written in place, so
 * nothing is replaced, and two outputs may share it as they may share "-". */
static bool written_in_place(const char *path)
{
	struct stat sb;

	return !strcmp(path, "-") || (!stat(path, &sb) && !S_ISREG(sb.st_mode));
}

/* No output may be the trace, or another output: both would destroy what is read or written. */
static int check_outputs(const char *trace, struct out *const outs[], int n)
{
	for (int i = 0; i < n; i++) {
		if (!outs[i]->path || written_in_place(outs[i]->path))
			continue;
		if (hvt_same_file(outs[i]->path, trace)) {
			fprintf(
			    stderr,
			    "hvmtrace export: --%s %s is the trace being read; refusing to overwrite it\n",
			    outs[i]->option, outs[i]->path);
			return -1;
		}
		for (int j = 0; j < i; j++)
			if (outs[j]->path && hvt_same_file(outs[i]->path, outs[j]->path)) {
				fprintf(stderr, "hvmtrace export: --%s and --%s name the same file %s\n",
					outs[j]->option, outs[i]->option, outs[i]->path);
				return -1;
			}
	}
	return 0;
}

static const char csv_header[] =
    "seq,t_start_ns,t_end_ns,duration_s,wall_start,generation,missed_deadlines,final,harvest_us,written_pages,written_bytes,accessed_pages,accessed_bytes,read_bytes,write_bytes,lost_pages,total_bytes,written_not_accessed,tracer_cpu_us,tracer_busy,layout_refused,ring_full\n";

static void csv_opt_u64(FILE *f, bool present, uint64_t v)
{
	if (present)
		fprintf(f, ",%" PRIu64, v);
	else
		fputc(',', f); /* empty: not available, distinct from 0 */
}

static void csv_row(FILE *f, const struct hvt_iv_runs *ir, const struct hvt_layout *l)
{
	const struct hvt_interval *iv = &ir->hdr;
	bool w = iv->flags & HVT_IV_WRITTEN, a = iv->flags & HVT_IV_ACCESSED,
	     bw = iv->flags & HVT_IV_BANDWIDTH, split = bw && !(iv->flags & HVT_IV_BW_TOTAL);
	uint64_t wp = ir->set[0].pages, ap = ir->set[1].pages;
	uint64_t rd = 0, wr = 0;
	char wall[64];

	for (uint32_t i = 0; bw && i < iv->nchannels; i++) {
		rd += iv->channels[i].read_bytes;
		wr += iv->channels[i].write_bytes;
	}
	hvt_format_wall(iv->wall_start_ns, wall, sizeof(wall));
	fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.9f,%s,%" PRIu64 ",%u,%d,%.3f", iv->seq,
		iv->t_start_ns, iv->t_end_ns, (iv->t_end_ns - iv->t_start_ns) / 1e9, wall, iv->generation,
		iv->missed_deadlines, !!(iv->flags & HVT_IV_FINAL), iv->harvest_ns / 1e3);
	csv_opt_u64(f, w, wp);
	csv_opt_u64(f, w, wp * l->page_size);
	csv_opt_u64(f, a, ap);
	csv_opt_u64(f, a, ap * l->page_size);
	csv_opt_u64(f, split, rd);
	csv_opt_u64(f, split, wr);
	fprintf(f, ",%" PRIu64, iv->lost_pages);
	csv_opt_u64(f, bw, rd + wr);
	csv_opt_u64(f, iv->flags & HVT_IV_WNA_COUNTED, iv->written_not_accessed);
	if (iv->flags & HVT_IV_TRACER_CPU)
		fprintf(f, ",%.3f", iv->tracer_cpu_ns / 1e3);
	else
		fputc(',', f);
	fprintf(f, ",%d,%d", !!(iv->flags & HVT_IV_TRACER_BUSY), !!(iv->flags & HVT_IV_LAYOUT_REFUSED));
	csv_opt_u64(f, iv->flags & HVT_IV_RING_FULL, iv->ring_full);
	fputc('\n', f);
}

/* Slot by slot in the layout's order, as the rows have always come; with owners, each run cut into the
 * pieces of one owner, the owner in a fifth column. */
static void csv_page_rows(FILE *f, uint64_t seq, const char *kind, const struct hvt_runs *runs,
			  const struct hvt_layout *l, struct export_owners *owners)
{
	for (uint32_t i = 0; runs && i < l->nslots; i++) {
		uint64_t base = hvt_memslot_first_gfn(l, &l->slots[i]);
		size_t k, end;

		hvt_runs_range(runs, base, base + hvt_memslot_npages(l, &l->slots[i]), &k, &end);
		if (owners) {
			export_owners_csv(owners, f, seq, kind, runs, k, end);
			continue;
		}
		for (; k < end; k++)
			fprintf(f, "%" PRIu64 ",%s,%" PRIu64 ",%" PRIu64 "\n", seq, kind, runs->v[k].first,
				runs->v[k].count);
	}
}

struct export_ctx {
	struct out *jsonl;
	FILE *csv, *pages, *pcm, *raw;
	struct pcm_csv *pcm_layout;
	struct damo_export *damo;
	const struct hvt_trace_meta *meta;
	const struct hvt_json_opts *jopts;
	const char *damo_path;
	uint64_t gfn_first, gfn_end;  /* the selected GFNs */
	struct export_owners *owners; /* --by, else NULL */
};

/* One selected interval, its runs cut to the selected GFNs. */
static int export_one(void *arg, const struct hvt_walk_iv *w)
{
	struct export_ctx *x = arg;
	const struct hvt_iv_runs *ir = w->ir;
	const struct hvt_layout *l = w->layout;
	const struct hvt_interval *iv = &ir->hdr;
	int rc;

	if (x->owners && export_owners_interval(x->owners, ir, l->page_size))
		return TRACE_USAGE;
	if (x->jsonl->f && hvt_jsonl_write_runs(x->jsonl->f, ir, l, x->jopts)) {
		fprintf(stderr, "hvmtrace export: writing %s: %s\n", x->jsonl->path, strerror(errno));
		return TRACE_OUTPUT_FAILED;
	}
	if (x->csv)
		csv_row(x->csv, ir, l);
	if (x->pages) {
		csv_page_rows(x->pages, iv->seq, "written", (iv->flags & HVT_IV_WRITTEN) ? &ir->set[0] : NULL,
			      l, x->owners);
		csv_page_rows(x->pages, iv->seq, "accessed",
			      (iv->flags & HVT_IV_ACCESSED) ? &ir->set[1] : NULL, l, x->owners);
	}
	if (x->damo && (rc = damo_export_interval(x->damo, w))) {
		fprintf(stderr, "hvmtrace export: writing %s: %s\n", x->damo_path, strerror(-rc));
		return TRACE_OUTPUT_FAILED;
	}
	if (x->pcm)
		pcm_csv_interval(x->pcm, x->pcm_layout, iv);
	if (x->raw)
		export_raw_interval(x->raw, ir, l, x->gfn_first, x->gfn_end);
	return 0;
}

/* --damo-aggr in whole intervals (*n; 0 when not given); -1 after saying why not. */
static int damo_window(const struct hvt_trace_meta *m, uint64_t aggr_ns, const char *path, uint32_t *n)
{
	uint64_t k = m->interval_ns ? (aggr_ns + m->interval_ns / 2) / m->interval_ns : 1;

	*n = 0;
	if (!aggr_ns)
		return 0;
	if (!k || k > UINT32_MAX) {
		fprintf(stderr, "hvmtrace export: --damo-aggr %.3f ms is %s than %s's interval (%.3f ms)\n",
			aggr_ns / 1e6, k ? "over 2^32 times longer" : "shorter", path, m->interval_ns / 1e6);
		return -1;
	}
	*n = (uint32_t)k;
	return 0;
}

static int print_meta(struct hvt_trace_reader *r)
{
	struct json_object *o = json_object_new_object(), *layouts = json_object_new_array();
	struct hvt_trace_status st;

	hvt_trace_get_status(r, &st);
	json_object_object_add(o, "meta", hvt_trace_meta_to_json(hvt_trace_meta(r)));
	for (uint64_t i = 0; i < st.layouts; i++)
		json_object_array_add(layouts, hvt_layout_to_json(hvt_trace_layout_at(r, i)));
	json_object_object_add(o, "layouts", layouts);
	json_object_object_add(o, "intervals", json_object_new_uint64(st.intervals));
	json_object_object_add(o, "complete", json_object_new_boolean(st.complete));
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	json_object_put(o);
	return 0;
}

int cmd_export(int argc, char **argv)
{
	static const struct hvt_exit_status exits[] = {
	    {TRACE_OK, "everything was exported"},
	    {TRACE_OUTPUT_FAILED, "writing the output failed"},
	    {TRACE_USAGE, "bad arguments, TRACE is not a trace, or the selection holds nothing"},
	    {TRACE_INCOMPLETE, "the trace is incomplete (everything before the damage was exported)"},
	    {0, NULL},
	};
	struct out jsonl = {.option = "jsonl"}, csv = {.option = "csv"}, pages = {.option = "csv-pages"},
		   damo = {.option = "damo"}, pcm = {.option = "pcm-csv"}, raw = {.option = "raw"};
	struct out *const outs[] = {&jsonl, &csv, &pages, &damo, &pcm, &raw};
	const int nouts = sizeof(outs) / sizeof(outs[0]);
	struct hvt_json_opts jopts = {.page_ranges = true};
	struct hvt_selection sel = {0};
	struct export_ctx ctx = {0};
	bool meta = false;
	uint64_t damo_aggr_ns = 0;
	uint32_t damo_max_regions = DAMO_DEFAULT_MAX_REGIONS, damo_aggr;
	const char *path = "hvmtrace.hvt", *chanmap = NULL, *owners_file = NULL;
	static const struct hvt_opt_choice bys[] = {
	    {"process", HVT_OWN_PROCESS}, {"cgroup", OWNERS_BY_CGROUP}, {"kind", HVT_OWN_KIND}, {NULL}};
	int by = 0, snapshot = 0;
	struct export_owners owners;
	bool owners_open = false;
	struct hvt_trace_reader *r;
	const struct hvt_option opts[] = {
	    HVT_OPT_OPERAND(&path, "TRACE", "the trace to read (default hvmtrace.hvt)"),
	    HVT_OPT_PATH(0, "jsonl", &jsonl.path, "FILE|-",
			 "one JSON object per interval (the default, to standard output)"),
	    HVT_OPT_PATH(0, "csv", &csv.path, "FILE|-", "one CSV row per interval"),
	    HVT_OPT_PATH(0, "csv-pages", &pages.path, "FILE|-",
			 "one CSV row per run of pages: seq,kind,first_gfn,count"),
	    HVT_OPT_PATH(0, "damo", &damo.path, "FILE|-",
			 "a DAMON record in damo's json_compressed format (damo report ... -i FILE)"),
	    HVT_OPT_DURATION(0, "damo-aggr", &damo_aggr_ns, 1, "DURATION",
			     "--damo's aggregation window, whole intervals (default 10 intervals)"),
	    HVT_OPT_INT(0, "damo-max-regions", &damo_max_regions, 1, UINT32_MAX, "N",
			"--damo's regions per snapshot at most, neighbours merged (default 1000, as DAMON)"),
	    HVT_OPT_PATH(0, "pcm-csv", &pcm.path, "FILE|-", "bandwidth in the CSV layout of pcm-memory -csv"),
	    HVT_OPT_PATH(
		0, "chanmap", &chanmap, "FILE",
		"the host's channel map: --pcm-csv gets a column for every channel pcm-memory shows"),
	    HVT_OPT_PATH(0, "raw", &raw.path, "FILE|-",
			 "page-set bitmaps per interval in KVM's dirty-log layout"),
	    HVT_OPT_FLAG_OFF(0, "no-pages", &jopts.page_ranges,
			     "JSON Lines without the page ranges (counts only)"),
	    HVT_OPT_CHOICE(
		0, "by", &by, bys, "process|cgroup|kind",
		"each run's owner: --csv-pages gets an owner column, JSON Lines written_owners and "
		"accessed_owners, runs cut where the owner changes (docs/formats.md)"),
	    HVT_OPT_PATH(0, "owners", &owners_file, "SNAPSHOT",
			 "--by with the owners of hvmtrace-guest's file SNAPSHOT (default: the trace's)"),
	    HVT_OPT_INT(0, "snapshot", &snapshot, 0, HVT_OWN_MAX_OWNERS, "N",
			"which snapshot of SNAPSHOT, from 0 (default 0)"),
	    HVT_OPT_FLAG(0, "meta", &meta,
			 "print the trace's metadata and layouts as one JSON object and exit"),
	    HVT_SELECT_OPTIONS(&sel),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace export",
	    .synopsis = "[options] [TRACE]",
	    .options = opts,
	    .exits = exits,
	    .usage_status = TRACE_USAGE,
	};
	int status = hvt_opts_parse(&cmd, argc, argv), damo_rc;

	if (status != HVT_OPTS_RUN)
		return status;
	if (!jsonl.path && !csv.path && !pages.path && !damo.path && !pcm.path && !raw.path)
		jsonl.path = "-";

	if (check_outputs(path, outs, nouts))
		return TRACE_USAGE;
	r = trace_input_open("export", path);
	if (!r)
		return TRACE_USAGE;
	if (meta) {
		print_meta(r);
		hvt_trace_reader_close(r);
		return 0;
	}
	if (chanmap && !pcm.path) {
		fprintf(stderr, "hvmtrace export: --chanmap is for --pcm-csv, which is not asked for\n");
		hvt_trace_reader_close(r);
		return TRACE_USAGE;
	}
	if (owners_file && !by) {
		fprintf(stderr, "hvmtrace export: --owners is for --by, which is not asked for\n");
		hvt_trace_reader_close(r);
		return TRACE_USAGE;
	}
	if (by && !jsonl.path && !pages.path) {
		fprintf(stderr,
			"hvmtrace export: --by adds owners to --jsonl and --csv-pages, and neither is "
			"asked for\n");
		hvt_trace_reader_close(r);
		return TRACE_USAGE;
	}
	if (by) {
		if (export_owners_open(&owners, owners_file, snapshot, r, path, by)) {
			hvt_trace_reader_close(r);
			return TRACE_USAGE;
		}
		owners_open = true;
		ctx.owners = &owners;
		jopts.more_fields = export_owners_jsonl;
		jopts.more_ctx = &owners;
	}
	if ((pcm.path && !(ctx.pcm_layout = pcm_csv_new(hvt_trace_meta(r), path, chanmap))) ||
	    damo_window(hvt_trace_meta(r), damo_aggr_ns, path, &damo_aggr) ||
	    trace_input_span("export", path, r, &sel, &ctx.gfn_first, &ctx.gfn_end)) {
		pcm_csv_free(ctx.pcm_layout);
		if (owners_open)
			export_owners_close(&owners);
		hvt_trace_reader_close(r);
		return TRACE_USAGE;
	}
	if (open_out(&jsonl) || open_out(&csv) || open_out(&pages) || open_out(&damo) || open_out(&pcm) ||
	    open_out(&raw)) {
		status = TRACE_OUTPUT_FAILED;
		goto out;
	}
	if (csv.f)
		fputs(csv_header, csv.f);
	if (pages.f)
		fputs(by ? "seq,kind,first_gfn,count,owner\n" : "seq,kind,first_gfn,count\n", pages.f);
	if (pcm.f)
		pcm_csv_header(pcm.f, ctx.pcm_layout);
	if (raw.f)
		export_raw_header(raw.f);
	if (damo.f && !(ctx.damo = damo_export_new(damo.f, hvt_trace_meta(r)->interval_ns,
						   damo_aggr ? damo_aggr : DAMO_DEFAULT_AGGR_INTERVALS,
						   damo_max_regions, ctx.gfn_first, ctx.gfn_end))) {
		fprintf(stderr, "hvmtrace export: --damo: out of memory\n");
		status = TRACE_OUTPUT_FAILED;
		goto out;
	}
	ctx.damo_path = damo.path;

	ctx.jsonl = &jsonl;
	ctx.csv = csv.f;
	ctx.pages = pages.f;
	ctx.pcm = pcm.f;
	ctx.raw = raw.f;
	ctx.meta = hvt_trace_meta(r);
	ctx.jopts = &jopts;
	status =
	    trace_input_walk("export", path, r, &sel, ctx.gfn_first, ctx.gfn_end, false, export_one, &ctx);
	if (ctx.damo && (status == TRACE_OK || status == TRACE_INCOMPLETE) &&
	    (damo_rc = damo_export_finish(ctx.damo))) {
		fprintf(stderr, "hvmtrace export: writing %s: %s\n", damo.path, strerror(-damo_rc));
		status = TRACE_OUTPUT_FAILED;
	}
out:
	damo_export_free(ctx.damo);
	pcm_csv_free(ctx.pcm_layout);
	if (owners_open)
		export_owners_close(&owners);
	/* an incomplete trace's export is kept (it holds everything before the damage); a failed one, or one
	 * whose --from/--to took no interval, is not */
	for (int i = 0; i < nouts; i++)
		if (close_out(outs[i], status == TRACE_OK || status == TRACE_INCOMPLETE))
			status = TRACE_OUTPUT_FAILED;
	hvt_trace_reader_close(r);
	return status;
}
