/* SPDX-License-Identifier: MIT */
/*
 * What both trace harnesses do with a file: everything `report` and `export` read through the library.
 * Open it, read its status, metadata and layouts, read its intervals as runs (as every command does) and
 * write each as the JSON Lines line `export --jsonl` writes. Where the layouts are small enough for bitmaps,
 * each interval is also decoded into bitmaps, and the two readers must agree: both refuse it, or both give
 * the same line. Every OWNERS record the walk found reads back as one snapshot's frame.
 */
#ifndef HVMTRACE_FUZZ_TRACE_READ_H
#define HVMTRACE_FUZZ_TRACE_READ_H

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "hvmtrace/interval_json.h"
#include "hvmtrace/owners_format.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/trace_runs.h"

/* Intervals decoded per input: enough to reach every record of a small file, and bounded so that one
 * input costs little. */
#define FUZZ_TRACE_MAX_INTERVALS 64
/* Layouts up to this many pages are also decoded into bitmaps (a bit per page) to compare the readers. */
#define FUZZ_TRACE_BITMAP_PAGES (1ull << 24)

/* The interval's JSON Lines line, from runs (ir) or bitmaps (iv), in a malloc'd string. */
static inline char *fuzz_line(const struct hvt_iv_runs *ir, const struct hvt_interval *iv,
			      const struct hvt_layout *l)
{
	struct hvt_json_opts opts = {.page_ranges = true};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		abort();
	if (ir ? hvt_jsonl_write_runs(f, ir, l, &opts) : hvt_jsonl_write(f, iv, l, &opts))
		abort();
	fclose(f);
	return buf;
}

static inline void fuzz_read_trace(const char *path)
{
	struct hvt_trace_reader *r;
	struct hvt_trace_status st;
	struct hvt_err err = {{0}};
	const struct hvt_layout *l;
	struct hvt_iv_runs ir = {0};
	bool small = true;
	uint64_t n;

	if (hvt_trace_open(&r, path, &err))
		return;
	hvt_trace_get_status(r, &st);
	if (st.intervals != hvt_trace_interval_count(r) || st.valid_bytes > st.file_bytes)
		abort(); /* the status must agree with itself */
	json_object_put(hvt_trace_meta_to_json(hvt_trace_meta(r)));
	for (uint64_t i = 0; (l = hvt_trace_layout_at(r, i)); i++)
		if (hvt_trace_layout(r, l->generation) != l)
			abort(); /* generations are unique and increasing */
	n = hvt_trace_interval_count(r);
	for (uint64_t i = 0; (l = hvt_trace_layout_at(r, i)); i++)
		small = small && hvt_layout_total_pages(l) <= FUZZ_TRACE_BITMAP_PAGES;
	for (uint64_t i = 0; i < n && i < FUZZ_TRACE_MAX_INTERVALS; i++) {
		struct hvt_interval iv;
		char *line = NULL, *bits;
		int rc = hvt_trace_read_runs(r, i, &ir, &err);

		if (!rc) {
			l = hvt_trace_layout(r, ir.hdr.generation);
			if (!l || ir.hdr.nslots != l->nslots)
				abort(); /* a decoded interval always has its layout */
			line = fuzz_line(&ir, NULL, l);
		}
		if (small) {
			if (!hvt_trace_read_interval(r, i, &iv, &err) != !rc)
				abort(); /* the readers disagree on whether the interval is sane */
			if (!rc) {
				bits = fuzz_line(NULL, &iv, l);
				if (strcmp(line, bits))
					abort(); /* or on what it holds */
				free(bits);
				hvt_interval_fini(&iv);
			}
		}
		free(line);
	}
	hvt_iv_runs_fini(&ir);
	for (uint64_t i = 0; i < hvt_trace_owners_count(r) && i < FUZZ_TRACE_MAX_INTERVALS; i++) {
		const struct hvt_owners_info *o = hvt_trace_owners_at(r, i);
		uint8_t *snap;

		if (!o || o->bytes < HVT_OWN_HEADER_BYTES || o->offset >= st.valid_bytes)
			abort(); /* the walk remembers only whole frames, before the damage */
		if (hvt_trace_read_owners(r, i, &snap, &err))
			abort(); /* what the walk checked reads again */
		if (memcmp(snap, HVT_OWN_MAGIC, 8))
			abort();
		free(snap);
	}
	hvt_trace_reader_close(r);
}

#endif
