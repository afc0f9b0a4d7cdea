// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/json_number.h"
#include "hvmtrace/interval_json.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/pageset.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/trace_runs.h"
#include "hvmtrace/util.h"

static int by_gpa(const void *a, const void *b, void *layout)
{
	const struct hvt_layout *l = layout;
	uint64_t ga = l->slots[*(const uint32_t *)a].gpa;
	uint64_t gb = l->slots[*(const uint32_t *)b].gpa;

	return (ga > gb) - (ga < gb);
}

/* [[first_gfn, count], …] over every slot in ascending GFN order. The layout's slot order is the VMM's and
 * need not be GFN order; slots never overlap, so sorting the slots sorts the runs. */
static struct json_object *ranges_json(const struct hvt_pageset *sets, const struct hvt_layout *l)
{
	struct json_object *arr = json_object_new_array();
	uint32_t order[HVT_LAYOUT_MAX_SLOTS];

	for (uint32_t i = 0; i < l->nslots; i++)
		order[i] = i;
	qsort_r(order, l->nslots, sizeof(order[0]), by_gpa, (void *)l);
	for (uint32_t k = 0; k < l->nslots; k++) {
		uint32_t i = order[k];
		uint64_t base = hvt_memslot_first_gfn(l, &l->slots[i]);
		uint64_t pos = 0;
		struct hvt_run run;

		while (hvt_pageset_next_run(&sets[i], &pos, &run)) {
			struct json_object *pair = json_object_new_array_ext(2);

			json_object_array_add(pair, json_object_new_uint64(base + run.first));
			json_object_array_add(pair, json_object_new_uint64(run.count));
			json_object_array_add(arr, pair);
		}
	}
	return arr;
}

static void add_set(struct json_object *o, const char *kind, const struct hvt_pageset *sets,
		    const struct hvt_layout *l, const struct hvt_json_opts *opts)
{
	char key[32];

	snprintf(key, sizeof(key), "%s_pages", kind);
	if (!sets) {
		json_object_object_add(o, key, NULL);
		snprintf(key, sizeof(key), "%s_bytes", kind);
		json_object_object_add(o, key, NULL);
		if (opts->page_ranges)
			json_object_object_add(o, kind, NULL);
		return;
	}
	uint64_t pages = hvt_interval_count_pages(sets, l->nslots);
	json_object_object_add(o, key, json_object_new_uint64(pages));
	snprintf(key, sizeof(key), "%s_bytes", kind);
	json_object_object_add(o, key, json_object_new_uint64(pages * l->page_size));
	if (opts->page_ranges)
		json_object_object_add(o, kind, ranges_json(sets, l));
}

/* An integer, or null when the quantity was not measured. */
static struct json_object *opt_u64(bool present, uint64_t v)
{
	return present ? json_object_new_uint64(v) : NULL;
}

/*
 * read_bytes/write_bytes/total_bytes of the VM and of each channel. Channels that count only totals
 * (HVT_IV_BW_TOTAL, e.g. resctrl) have null reads and writes: the split was not measured.
 */
static void add_bandwidth(struct json_object *o, const struct hvt_interval *iv)
{
	bool bw = iv->flags & HVT_IV_BANDWIDTH, split = bw && !(iv->flags & HVT_IV_BW_TOTAL);
	struct json_object *chans = bw ? json_object_new_array() : NULL;
	uint64_t rd = 0, wr = 0;

	for (uint32_t i = 0; bw && i < iv->nchannels; i++) {
		const struct hvt_channel_bytes *ch = &iv->channels[i];
		struct json_object *c = json_object_new_object();

		rd += ch->read_bytes;
		wr += ch->write_bytes;
		json_object_object_add(c, "channel", json_object_new_uint64(ch->channel));
		json_object_object_add(c, "read_bytes", opt_u64(split, ch->read_bytes));
		json_object_object_add(c, "write_bytes", opt_u64(split, ch->write_bytes));
		json_object_object_add(c, "total_bytes",
				       json_object_new_uint64(ch->read_bytes + ch->write_bytes));
		json_object_array_add(chans, c);
	}
	json_object_object_add(o, "read_bytes", opt_u64(split, rd));
	json_object_object_add(o, "write_bytes", opt_u64(split, wr));
	json_object_object_add(o, "total_bytes", opt_u64(bw, rd + wr));
	json_object_object_add(o, "channels", chans);
}

struct json_object *hvt_interval_to_json(const struct hvt_interval *iv, const struct hvt_layout *l,
					 const struct hvt_json_opts *opts)
{
	struct json_object *o = json_object_new_object();
	char wall[64];

	hvt_format_wall(iv->wall_start_ns, wall, sizeof(wall));
	json_object_object_add(o, "seq", json_object_new_uint64(iv->seq));
	json_object_object_add(o, "t_start_ns", json_object_new_uint64(iv->t_start_ns));
	json_object_object_add(o, "t_end_ns", json_object_new_uint64(iv->t_end_ns));
	json_object_object_add(o, "duration_s", hvt_json_new_double((iv->t_end_ns - iv->t_start_ns) / 1e9));
	json_object_object_add(o, "wall_start", json_object_new_string(wall));
	json_object_object_add(o, "generation", json_object_new_uint64(iv->generation));
	json_object_object_add(o, "missed_deadlines", json_object_new_uint64(iv->missed_deadlines));
	json_object_object_add(o, "final", json_object_new_boolean(!!(iv->flags & HVT_IV_FINAL)));
	json_object_object_add(o, "harvest_us", hvt_json_new_double(iv->harvest_ns / 1e3));
	json_object_object_add(o, "lost_pages", json_object_new_uint64(iv->lost_pages));
	json_object_object_add(o, "tracer_cpu_us",
			       iv->flags & HVT_IV_TRACER_CPU ? hvt_json_new_double(iv->tracer_cpu_ns / 1e3)
							     : NULL);
	json_object_object_add(o, "tracer_busy", json_object_new_boolean(!!(iv->flags & HVT_IV_TRACER_BUSY)));
	json_object_object_add(o, "layout_refused",
			       json_object_new_boolean(!!(iv->flags & HVT_IV_LAYOUT_REFUSED)));
	json_object_object_add(o, "ring_full", opt_u64(iv->flags & HVT_IV_RING_FULL, iv->ring_full));

	add_set(o, "written", (iv->flags & HVT_IV_WRITTEN) ? iv->written : NULL, l, opts);
	add_set(o, "accessed", (iv->flags & HVT_IV_ACCESSED) ? iv->accessed : NULL, l, opts);
	json_object_object_add(o, "written_not_accessed",
			       opt_u64(iv->flags & HVT_IV_WNA_COUNTED, iv->written_not_accessed));

	add_bandwidth(o, iv);
	return o;
}

/*
 * JSON Lines are written as they are produced, not built as a json-c tree and printed: a line of a large
 * guest holds millions of page ranges, and building it took gigabytes (a 16 GiB guest, or 1 GiB with every
 * other page written, made json-c abort under record's memory lock). The bytes are exactly what
 * json_object_to_json_string_ext(hvt_interval_to_json(…), JSON_C_TO_STRING_PLAIN) gives (unit-tested).
 */

/* A double as hvt_json_new_double serialises it. */
static void put_double(FILE *f, double v)
{
	char buf[HVT_JSON_DOUBLE_LEN];

	hvt_json_format_double(v, buf, sizeof(buf));
	fputs(buf, f);
}

/* A string as json-c escapes it (including "/"). */
static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '/':
			fputs("\\/", f);
			break;
		case '\b':
			fputs("\\b", f);
			break;
		case '\f':
			fputs("\\f", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (c < 0x20)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
}

static void put_key(FILE *f, const char *key)
{
	fprintf(f, ",\"%s\":", key);
}

static void put_opt_u64(FILE *f, const char *key, bool present, uint64_t v)
{
	put_key(f, key);
	if (present)
		fprintf(f, "%" PRIu64, v);
	else
		fputs("null", f);
}

static void put_ranges(FILE *f, const struct hvt_pageset *sets, const struct hvt_layout *l)
{
	uint32_t order[HVT_LAYOUT_MAX_SLOTS];
	bool first = true;

	for (uint32_t i = 0; i < l->nslots; i++)
		order[i] = i;
	qsort_r(order, l->nslots, sizeof(order[0]), by_gpa, (void *)l);
	fputc('[', f);
	for (uint32_t k = 0; k < l->nslots; k++) {
		uint32_t i = order[k];
		uint64_t base = hvt_memslot_first_gfn(l, &l->slots[i]), pos = 0;
		struct hvt_run run;

		while (hvt_pageset_next_run(&sets[i], &pos, &run)) {
			fprintf(f, "%s[%" PRIu64 ",%" PRIu64 "]", first ? "" : ",", base + run.first,
				run.count);
			first = false;
		}
	}
	fputc(']', f);
}

/* A set to write: a bitmap per slot (record), or runs of GFNs (the readers); neither when absent. */
struct set_src {
	const struct hvt_pageset *sets;
	const struct hvt_runs *runs;
};

static void put_runs(FILE *f, const struct hvt_runs *r)
{
	fputc('[', f);
	for (size_t i = 0; i < r->n; i++)
		fprintf(f, "%s[%" PRIu64 ",%" PRIu64 "]", i ? "," : "", r->v[i].first, r->v[i].count);
	fputc(']', f);
}

static void put_set(FILE *f, const char *kind, struct set_src src, const struct hvt_layout *l,
		    const struct hvt_json_opts *opts)
{
	char key[32];
	bool present = src.sets || src.runs;
	uint64_t pages = src.sets   ? hvt_interval_count_pages(src.sets, l->nslots)
			 : src.runs ? src.runs->pages
				    : 0;

	snprintf(key, sizeof(key), "%s_pages", kind);
	put_opt_u64(f, key, present, pages);
	snprintf(key, sizeof(key), "%s_bytes", kind);
	put_opt_u64(f, key, present, pages * l->page_size);
	if (!opts->page_ranges)
		return;
	put_key(f, kind);
	if (src.sets)
		put_ranges(f, src.sets, l);
	else if (src.runs)
		put_runs(f, src.runs); /* in GFN order already, as put_ranges sorts the slots */
	else
		fputs("null", f);
}

static void put_bandwidth(FILE *f, const struct hvt_interval *iv)
{
	bool bw = iv->flags & HVT_IV_BANDWIDTH, split = bw && !(iv->flags & HVT_IV_BW_TOTAL);
	uint64_t rd = 0, wr = 0;

	for (uint32_t i = 0; bw && i < iv->nchannels; i++) {
		rd += iv->channels[i].read_bytes;
		wr += iv->channels[i].write_bytes;
	}
	put_opt_u64(f, "read_bytes", split, rd);
	put_opt_u64(f, "write_bytes", split, wr);
	put_opt_u64(f, "total_bytes", bw, rd + wr);
	put_key(f, "channels");
	if (!bw) {
		fputs("null", f);
		return;
	}
	fputc('[', f);
	for (uint32_t i = 0; i < iv->nchannels; i++) {
		const struct hvt_channel_bytes *ch = &iv->channels[i];

		fprintf(f, "%s{\"channel\":%" PRIu32, i ? "," : "", ch->channel);
		put_opt_u64(f, "read_bytes", split, ch->read_bytes);
		put_opt_u64(f, "write_bytes", split, ch->write_bytes);
		put_opt_u64(f, "total_bytes", true, ch->read_bytes + ch->write_bytes);
		fputc('}', f);
	}
	fputc(']', f);
}

static int put_line(FILE *f, const struct hvt_interval *iv, struct set_src written, struct set_src accessed,
		    const struct hvt_layout *l, const struct hvt_json_opts *opts)
{
	char wall[64];

	hvt_format_wall(iv->wall_start_ns, wall, sizeof(wall));
	fprintf(f, "{\"seq\":%" PRIu64, iv->seq);
	put_opt_u64(f, "t_start_ns", true, iv->t_start_ns);
	put_opt_u64(f, "t_end_ns", true, iv->t_end_ns);
	put_key(f, "duration_s");
	put_double(f, (iv->t_end_ns - iv->t_start_ns) / 1e9);
	put_key(f, "wall_start");
	put_string(f, wall);
	put_opt_u64(f, "generation", true, iv->generation);
	put_opt_u64(f, "missed_deadlines", true, iv->missed_deadlines);
	put_key(f, "final");
	fputs((iv->flags & HVT_IV_FINAL) ? "true" : "false", f);
	put_key(f, "harvest_us");
	put_double(f, iv->harvest_ns / 1e3);
	put_opt_u64(f, "lost_pages", true, iv->lost_pages);
	put_key(f, "tracer_cpu_us");
	if (iv->flags & HVT_IV_TRACER_CPU)
		put_double(f, iv->tracer_cpu_ns / 1e3);
	else
		fputs("null", f);
	put_key(f, "tracer_busy");
	fputs((iv->flags & HVT_IV_TRACER_BUSY) ? "true" : "false", f);
	put_key(f, "layout_refused");
	fputs((iv->flags & HVT_IV_LAYOUT_REFUSED) ? "true" : "false", f);
	put_opt_u64(f, "ring_full", iv->flags & HVT_IV_RING_FULL, iv->ring_full);
	put_set(f, "written", written, l, opts);
	put_set(f, "accessed", accessed, l, opts);
	put_opt_u64(f, "written_not_accessed", iv->flags & HVT_IV_WNA_COUNTED, iv->written_not_accessed);
	put_bandwidth(f, iv);
	if (opts->more_fields && opts->more_fields(f, opts->more_ctx))
		return -EIO;
	fputs("}\n", f);
	if (fflush(f) == EOF || ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

int hvt_jsonl_write(FILE *f, const struct hvt_interval *iv, const struct hvt_layout *l,
		    const struct hvt_json_opts *opts)
{
	struct set_src w = {(iv->flags & HVT_IV_WRITTEN) ? iv->written : NULL, NULL};
	struct set_src a = {(iv->flags & HVT_IV_ACCESSED) ? iv->accessed : NULL, NULL};

	return put_line(f, iv, w, a, l, opts);
}

int hvt_jsonl_write_runs(FILE *f, const struct hvt_iv_runs *ir, const struct hvt_layout *l,
			 const struct hvt_json_opts *opts)
{
	struct set_src w = {NULL, (ir->hdr.flags & HVT_IV_WRITTEN) ? &ir->set[0] : NULL};
	struct set_src a = {NULL, (ir->hdr.flags & HVT_IV_ACCESSED) ? &ir->set[1] : NULL};

	return put_line(f, &ir->hdr, w, a, l, opts);
}
