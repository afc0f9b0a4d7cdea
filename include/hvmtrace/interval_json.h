/* SPDX-License-Identifier: MIT */
/*
 * One interval as a JSON object: the line format of JSON Lines output (`record --jsonl`, `export --jsonl`).
 * Field names are stable (docs/formats.md); later versions only add fields. A quantity the harvest mode or
 * the host cannot provide is null, never 0 or [].
 */
#ifndef HVMTRACE_INTERVAL_JSON_H
#define HVMTRACE_INTERVAL_JSON_H

#include <stdbool.h>
#include <stdio.h>

struct hvt_interval;
struct hvt_iv_runs;
struct hvt_layout;
struct json_object;

struct hvt_json_opts {
	bool page_ranges; /* include "written"/"accessed" as [[first_gfn, count], …] */
	/* more fields of the line, each written as `,"name":value` after the others (export's owners); NULL:
	 * none. Non-zero fails the line. */
	int (*more_fields)(FILE *f, void *ctx);
	void *more_ctx;
};

struct json_object *hvt_interval_to_json(const struct hvt_interval *iv, const struct hvt_layout *l,
					 const struct hvt_json_opts *opts);

/* Writes the interval as one line and flushes. 0 or -errno. */
int hvt_jsonl_write(FILE *f, const struct hvt_interval *iv, const struct hvt_layout *l,
		    const struct hvt_json_opts *opts);
/* The same line from an interval read as runs (trace_runs.h): the same bytes. */
int hvt_jsonl_write_runs(FILE *f, const struct hvt_iv_runs *ir, const struct hvt_layout *l,
			 const struct hvt_json_opts *opts);

#endif
