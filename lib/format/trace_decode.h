/* SPDX-License-Identifier: MIT */
/*
 * Internal to libhvmtrace: what the run reader (hvmtrace/trace_runs.h) is built from. The analyses only
 * ever need runs, and decoding the zstd-runs codec straight into runs skips clearing, filling and
 * scanning two bitmaps per interval (half a MiB each for a 16 GiB guest). Checks what
 * hvt_interval_decode checks.
 */
#ifndef HVMTRACE_LIB_TRACE_DECODE_H
#define HVMTRACE_LIB_TRACE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "hvmtrace/trace.h"
#include "hvmtrace/trace_runs.h"
#include "pageset_runs.h"

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
