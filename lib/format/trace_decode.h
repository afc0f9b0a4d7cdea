/* SPDX-License-Identifier: MIT */
/*
 * Internal to libhvmtrace: what the run reader (hvmtrace/trace_runs.h) is built from. The analyses only
 * ever need runs, and decoding the zstd-runs codec straight into runs skips clearing, filling and
 * scanning two bitmaps per interval (half a MiB each for a 16 GiB guest). Checks what
 * hvt_interval_decode checks.
 */
#ifndef HVMTRACE_LIB_TRACE_DECODE_H
#define HVMTRACE_LIB_TRACE_DECODE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "hvmtrace/trace.h"
#include "hvmtrace/trace_runs.h"

/* Appends a run; 0 or -ENOMEM. */
static inline int hvt_runs_push(struct hvt_runs *r, uint64_t first, uint64_t count)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 1024;
		struct hvt_run *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (struct hvt_run){first, count};
	return 0;
}

/*
 * Decodes an encoded page set of a slot of npages pages (pageset.h) and appends its runs to out as GFNs
 * base + page, adding their pages to out->pages. On error out is as it was. Same checks as
 * hvt_pageset_decode.
 */
int hvt_pageset_decode_runs(struct hvt_runs *out, uint64_t base, uint64_t npages, enum hvt_codec c,
			    const uint8_t *in, size_t inlen, struct hvt_err *err);

/* The CRC-checked payload of interval i and its layout; valid until the next read from r. */
int hvt_trace_read_payload(struct hvt_trace_reader *r, uint64_t i, const uint8_t **payload, size_t *len,
			   const struct hvt_layout **layout, struct hvt_err *err);

/* What interval iv holds checked against the trace's META (sets, bandwidth, channel indexes). */
int hvt_trace_check_interval_meta(const struct hvt_trace_reader *r, const struct hvt_interval *iv,
				  struct hvt_err *err);
/* Prefixes err with the trace, interval i and its record's offset, as every reader names a bad interval. */
int hvt_trace_interval_err(const struct hvt_trace_reader *r, uint64_t i, int rc, struct hvt_err *err);

/* Decodes the payload of an interval of layout l into ir. */
int hvt_iv_runs_decode(struct hvt_iv_runs *ir, const struct hvt_layout *l, const uint8_t *payload, size_t len,
		       struct hvt_err *err);

#endif
