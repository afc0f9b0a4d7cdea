/* SPDX-License-Identifier: MIT */
/*
 * The owners snapshots a trace's pages are attributed by, in the order they were taken, each placed on the
 * trace's clock (host CLOCK_MONOTONIC, the clock of an interval's t_start_ns/t_end_ns). Snapshots stored in
 * a trace (OWNERS records) carry the time record received them; snapshots of a file given by hand have no
 * host time, and the views attribute every interval by the one chosen (--snapshot N).
 */
#ifndef HVT_ATTRIBUTE_OWNERS_TIMELINE_H
#define HVT_ATTRIBUTE_OWNERS_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attribute/owners_snapshot.h"
#include "hvmtrace/error.h"

struct hvt_trace_reader;

struct owners_timeline {
	struct owners_snapshot *snap; /* ascending by at_ns */
	uint64_t *at_ns;              /* when each reached the host, trace clock; all 0 when !timed */
	size_t n;
	bool timed; /* from the trace: at_ns is meaningful */
};

/* Every owners snapshot stored in the trace, in file order; n = 0 when it has none. 0, or -errno with err
 * naming the trace and the snapshot that broke a rule. */
int owners_timeline_from_trace(struct hvt_trace_reader *r, struct owners_timeline *tl, struct hvt_err *err);

/* Snapshot `index` of a snapshot file (hvmtrace-guest's output) as an untimed timeline of one. */
int owners_timeline_from_file(const char *path, size_t index, struct owners_timeline *tl, size_t *count,
			      struct hvt_err *err);

void owners_timeline_free(struct owners_timeline *tl);

/* What a command attributes by: snapshot `index` of `file`, or (file NULL) the snapshots of the trace r
 * (named trace), which must hold some. 0, or -1 with one line "PROG: ..." said on stderr. */
int owners_timeline_load(const char *prog, const char *file, size_t index, struct hvt_trace_reader *r,
			 const char *trace, struct owners_timeline *tl, size_t *count);

#endif
