/* SPDX-License-Identifier: MIT */
/*
 * Internal to libhvmtrace: what the run reader (hvmtrace/trace_runs.h) is built from. The analyses only
 * ever need runs, and decoding straight into runs skips clearing, filling and scanning two bitmaps per
 * interval (half a MiB each for a 16 GiB guest). The payload is decoded once, into runs
 * (trace_interval_decode.c); the bitmap readers set those runs in bitmaps.
 */
#ifndef HVMTRACE_LIB_TRACE_DECODE_H
#define HVMTRACE_LIB_TRACE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "hvmtrace/trace.h"
#include "hvmtrace/trace_runs.h"

/* The CRC-checked payload of interval i and its layout; valid until the next read from r. */
int hvt_trace_read_payload(struct hvt_trace_reader *r, uint64_t i, const uint8_t **payload, size_t *len,
			   const struct hvt_layout **layout, struct hvt_err *err);

/* What interval iv holds checked against the trace's META (sets, bandwidth, channel indexes). */
int hvt_trace_check_interval_meta(const struct hvt_trace_reader *r, const struct hvt_interval *iv,
				  struct hvt_err *err);
/* Prefixes err with the trace, interval i and its record's offset, as every reader names a bad interval. */
int hvt_trace_interval_err(const struct hvt_trace_reader *r, uint64_t i, int rc, struct hvt_err *err);

/* Decodes the payload of an interval of layout l into ir, checking everything a payload can get wrong (its
 * fit to l included); on error ir holds no runs. The one decoder of a payload. */
int hvt_iv_runs_decode(struct hvt_iv_runs *ir, const struct hvt_layout *l, const uint8_t *payload, size_t len,
		       struct hvt_err *err);

/* Interval i of r, its payload and layout l given by hvt_trace_read_payload, into ir: hvt_iv_runs_decode,
 * then the META check, errors named as every reader names a bad interval. What hvt_trace_read_runs does after
 * reading, for readers that look at the payload before deciding to decode it. */
int hvt_trace_decode_runs(const struct hvt_trace_reader *r, uint64_t i, const uint8_t *payload, size_t len,
			  const struct hvt_layout *l, struct hvt_iv_runs *ir, struct hvt_err *err);

/* The bitmap form of an interval that hvt_iv_runs_decode gave for layout l: iv (initialised here) gets ir's
 * fields, a copy of its channels, and a bitmap per slot and set. Only -ENOMEM (iv finalised again). */
int hvt_interval_from_runs(struct hvt_interval *iv, const struct hvt_iv_runs *ir, const struct hvt_layout *l,
			   struct hvt_err *err);

#endif
