/* SPDX-License-Identifier: MIT */
/*
 * A DAMON monitoring record, read for hvmtrace score (docs/score.md): damo's own file (its JSON, plain or
 * zlib-compressed as damo's json_compressed, which export --damo writes) or our plain text form
 * "hvmtrace-damon 1" that a guest script writes from DAMON's sysfs snapshots. Either way: snapshots (one
 * aggregation window each, in the record's clock) of regions (byte ranges of one address space, ascending,
 * apart) with their nr_accesses.
 */
#ifndef HVT_SCORE_DAMON_RECORD_H
#define HVT_SCORE_DAMON_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hvt_err;

struct damon_region {
	uint64_t start, end; /* bytes [start, end) */
	uint32_t nr_accesses;
	uint64_t where; /* for messages: its line (text), or its index in the snapshot (JSON) */
};

struct damon_snapshot {
	uint64_t start_ns, end_ns; /* the aggregation window, in the record's clock */
	size_t first, n;           /* its regions: record.regions[first, first + n) */
	uint64_t where; /* for messages: the line of its first region (text), or its index (JSON) */
};

struct damon_record {
	const char *format; /* "damo json", "damo json_compressed", "hvmtrace-damon 1" */
	bool text;          /* the last: where counts lines */
	struct damon_snapshot *snaps;
	size_t nsnaps, snaps_cap;
	struct damon_region *regions;
	size_t nregions, regions_cap;
};

/* The largest record read (after decompression): a bound on memory for a hostile file. */
#define DAMON_RECORD_MAX_BYTES (1u << 30)

/*
 * Reads data[0, len) (name: how messages call it) into rec, zeroed by the caller. The form is told by the
 * content: a zlib stream, "[" (damo's JSON) or the "hvmtrace-damon 1" header. Refuses, with one message
 * naming the input and the line (text) or snapshot and region (JSON): bad syntax, a missing or mistyped
 * field, an empty record, several targets, a region that is empty or before its neighbour's end, a window
 * that ends before it starts or before the previous one. 0 or -EINVAL / -ENOMEM.
 */
int damon_record_parse(const char *name, const unsigned char *data, size_t len, struct damon_record *rec,
		       struct hvt_err *err);
/* damon_record_parse of a file's content. */
int damon_record_read(const char *path, struct damon_record *rec, struct hvt_err *err);
void damon_record_free(struct damon_record *rec);

#endif
