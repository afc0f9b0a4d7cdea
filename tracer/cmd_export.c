// SPDX-License-Identifier: MIT
/*
 * hvmtrace export: a trace as JSON Lines (one object per interval) and/or CSV (one row per interval, or one
 * row per page run with --csv-pages). Field names are documented in docs/formats.md and stay stable.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "hvmtrace/error.h"
#include "hvmtrace/interval_json.h"
#include "trace_input.h"

struct out {
	const char *path;
	FILE *f;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hvmtrace export [options] [TRACE]     (TRACE defaults to hvmtrace.hvt)\n"
		"\n"
		"  --jsonl FILE|-       one JSON object per interval (the default, to standard output)\n"
		"  --csv FILE|-         one CSV row per interval\n"
		"  --csv-pages FILE|-   one CSV row per run of pages: seq,kind,first_gfn,count\n"
		"  --no-pages           JSON Lines without the page ranges (counts only)\n"
		"  --meta               print the trace's metadata and layouts as one JSON object and exit\n"
		"\n"
		"Exit status: 0; 3 the trace is incomplete (everything before the damage was exported);\n"
		"2 bad arguments or not a trace; 1 writing the output failed.\n");
}

static int open_out(struct out *o)
{
	if (!o->path)
		return 0;
	if (!strcmp(o->path, "-")) {
		o->f = stdout;
		return 0;
	}
	o->f = fopen(o->path, "we");
	if (!o->f) {
		fprintf(stderr, "hvmtrace export: cannot create %s: %s\n", o->path, strerror(errno));
		return -1;
	}
	return 0;
}

static int close_out(struct out *o)
{
	int rc = 0;

	if (!o->f)
		return 0;
	if (o->f == stdout ? fflush(stdout) : fclose(o->f)) {
		fprintf(stderr, "hvmtrace export: writing %s: %s\n", o->path, strerror(errno));
		rc = -1;
	}
	o->f = NULL;
	return rc;
}

static const char csv_header[] =
    "seq,t_start_ns,t_end_ns,duration_s,wall_start,generation,missed_deadlines,final,"
    "harvest_us,written_pages,written_bytes,accessed_pages,accessed_bytes,read_bytes,"
    "write_bytes,lost_pages,total_bytes,written_not_accessed\n";

static void csv_opt_u64(FILE *f, bool present, uint64_t v)
{
	if (present)
		fprintf(f, ",%" PRIu64, v);
	else
		fputc(',', f); /* empty: not available, distinct from 0 */
}

static void csv_row(FILE *f, const struct hvt_interval *iv, const struct hvt_layout *l)
{
	bool w = iv->flags & HVT_IV_WRITTEN, a = iv->flags & HVT_IV_ACCESSED,
	     bw = iv->flags & HVT_IV_BANDWIDTH, split = bw && !(iv->flags & HVT_IV_BW_TOTAL);
	uint64_t wp = w ? hvt_interval_count_pages(iv->written, iv->nslots) : 0;
	uint64_t ap = a ? hvt_interval_count_pages(iv->accessed, iv->nslots) : 0;
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
	fputc('\n', f);
}

static void csv_page_rows(FILE *f, uint64_t seq, const char *kind, const struct hvt_pageset *sets,
			  const struct hvt_layout *l)
{
	for (uint32_t i = 0; sets && i < l->nslots; i++) {
		uint64_t pos = 0, base = hvt_memslot_first_gfn(l, &l->slots[i]);
		struct hvt_run run;

		while (hvt_pageset_next_run(&sets[i], &pos, &run))
			fprintf(f, "%" PRIu64 ",%s,%" PRIu64 ",%" PRIu64 "\n", seq, kind, base + run.first,
				run.count);
	}
}

struct export_ctx {
	struct out *jsonl;
	FILE *csv, *pages;
	const struct hvt_json_opts *jopts;
};

static int export_one(void *arg, const struct hvt_interval *iv, const struct hvt_layout *l)
{
	struct export_ctx *x = arg;

	if (x->jsonl->f && hvt_jsonl_write(x->jsonl->f, iv, l, x->jopts)) {
		fprintf(stderr, "hvmtrace export: writing %s: %s\n", x->jsonl->path, strerror(errno));
		return EXIT_READ_FAILED;
	}
	if (x->csv)
		csv_row(x->csv, iv, l);
	if (x->pages) {
		csv_page_rows(x->pages, iv->seq, "written", (iv->flags & HVT_IV_WRITTEN) ? iv->written : NULL,
			      l);
		csv_page_rows(x->pages, iv->seq, "accessed",
			      (iv->flags & HVT_IV_ACCESSED) ? iv->accessed : NULL, l);
	}
	return 0;
}

static int print_meta(struct hvt_trace_reader *r)
{
	struct json_object *o = json_object_new_object(), *layouts = json_object_new_array();
	struct hvt_trace_status st;

	hvt_trace_get_status(r, &st);
	json_object_object_add(o, "meta", json_object_get(hvt_trace_meta(r)));
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
	enum { OPT_JSONL = 256, OPT_CSV, OPT_CSV_PAGES, OPT_NO_PAGES, OPT_META };
	static const struct option longopts[] = {
	    {"jsonl", required_argument, NULL, OPT_JSONL},
	    {"csv", required_argument, NULL, OPT_CSV},
	    {"csv-pages", required_argument, NULL, OPT_CSV_PAGES},
	    {"no-pages", no_argument, NULL, OPT_NO_PAGES},
	    {"meta", no_argument, NULL, OPT_META},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct out jsonl = {0}, csv = {0}, pages = {0};
	struct hvt_json_opts jopts = {.page_ranges = true};
	bool meta = false;
	const char *path = "hvmtrace.hvt";
	struct hvt_trace_reader *r;
	int c, status = 0;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_JSONL:
			jsonl.path = optarg;
			break;
		case OPT_CSV:
			csv.path = optarg;
			break;
		case OPT_CSV_PAGES:
			pages.path = optarg;
			break;
		case OPT_NO_PAGES:
			jopts.page_ranges = false;
			break;
		case OPT_META:
			meta = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_NOT_TRACE;
		}
	}
	path = trace_input_path("export", argc, argv, optind);
	if (!path)
		return EXIT_NOT_TRACE;
	if (!jsonl.path && !csv.path && !pages.path)
		jsonl.path = "-";

	r = trace_input_open("export", path);
	if (!r)
		return EXIT_NOT_TRACE;
	if (meta) {
		print_meta(r);
		hvt_trace_reader_close(r);
		return 0;
	}
	if (open_out(&jsonl) || open_out(&csv) || open_out(&pages)) {
		status = EXIT_READ_FAILED;
		goto out;
	}
	if (csv.f)
		fputs(csv_header, csv.f);
	if (pages.f)
		fputs("seq,kind,first_gfn,count\n", pages.f);

	struct export_ctx ctx = {.jsonl = &jsonl, .csv = csv.f, .pages = pages.f, .jopts = &jopts};
	status = trace_input_each("export", path, r, export_one, &ctx);
out:
	if (close_out(&jsonl) | close_out(&csv) | close_out(&pages))
		status = EXIT_READ_FAILED;
	hvt_trace_reader_close(r);
	return status;
}
