/* SPDX-License-Identifier: MIT */
/*
 * export --by process|cgroup|kind: the owner of each run's pages in --csv-pages (a fifth column) and JSON
 * Lines (written_owners, accessed_owners), runs split where the owner changes; owners by the rule of
 * attribute/owners_interval.h, from the trace's snapshots or --owners FILE (docs/formats.md).
 */
#ifndef HVT_REPORT_EXPORT_OWNERS_H
#define HVT_REPORT_EXPORT_OWNERS_H

#include <stdint.h>
#include <stdio.h>

#include "attribute/owners_interval.h"
#include "hvmtrace/trace_runs.h"

struct export_owners {
	struct owners_timeline tl;
	struct owners_interval v;
	const struct owners_map *map; /* the current interval's */
	const struct hvt_iv_runs *ir; /* the current interval */
	FILE *csv;
	uint64_t seq;
	const char *kind;
};

/* 0, or -1 with one line said. */
int export_owners_open(struct export_owners *x, const char *file, int snapshot, struct hvt_trace_reader *r,
		       const char *trace, int by);
/* The interval whose runs follow; 0 or -ENOMEM (said). */
int export_owners_interval(struct export_owners *x, const struct hvt_iv_runs *ir, uint32_t page_size);
/* --csv-pages rows of runs [k, end) of one set: seq,kind,first_gfn,count,owner. */
void export_owners_csv(struct export_owners *x, FILE *f, uint64_t seq, const char *kind,
		       const struct hvt_runs *runs, size_t k, size_t end);
/* The JSON Lines fields (hvt_json_opts.more_fields; ctx an export_owners). */
int export_owners_jsonl(FILE *f, void *ctx);
void export_owners_close(struct export_owners *x);

#endif
