/* SPDX-License-Identifier: MIT */
/*
 * What both trace harnesses do with a file: everything `report` and `export` read through the library.
 * Open it, read its status, metadata and layouts, decode its intervals and turn each into the JSON Lines
 * object `export --jsonl` writes.
 */
#ifndef HVMTRACE_FUZZ_TRACE_READ_H
#define HVMTRACE_FUZZ_TRACE_READ_H

#include <json-c/json.h>

#include "hvmtrace/error.h"
#include "hvmtrace/interval_json.h"
#include "hvmtrace/trace.h"

/* Intervals decoded per input: enough to reach every record of a small file, and bounded so that one
 * input costs little. */
#define FUZZ_TRACE_MAX_INTERVALS 64

static inline void fuzz_read_trace(const char *path)
{
	struct hvt_trace_reader *r;
	struct hvt_trace_status st;
	struct hvt_err err = {{0}};
	const struct hvt_layout *l;
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
	for (uint64_t i = 0; i < n && i < FUZZ_TRACE_MAX_INTERVALS; i++) {
		struct hvt_interval iv;
		struct hvt_json_opts opts = {.page_ranges = true};

		if (hvt_trace_read_interval(r, i, &iv, &err))
			continue;
		l = hvt_trace_layout(r, iv.generation);
		if (!l || iv.nslots != l->nslots)
			abort(); /* a decoded interval always has its layout */
		json_object_put(hvt_interval_to_json(&iv, l, &opts));
		hvt_interval_fini(&iv);
	}
	hvt_trace_reader_close(r);
}

#endif
