/* SPDX-License-Identifier: MIT */
/* Output sinks of `hvmtrace record`: the trace file, JSON Lines, and the terminal summary. */
#ifndef HVT_RECORD_SINK_H
#define HVT_RECORD_SINK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct hvt_err;
struct hvt_interval;
struct hvt_layout;
struct hvt_trace_meta;
struct json_object;

struct sink {
	const char *name;
	/* A layout generation the following intervals refer to (called before its first interval). */
	int (*layout)(struct sink *k, const struct hvt_layout *l, struct hvt_err *err);
	int (*interval)(struct sink *k, const struct hvt_interval *iv, const struct hvt_layout *l,
			struct hvt_err *err);
	/* An owners snapshot received complete at at_ns (NULL: this output does not keep them). */
	int (*owners)(struct sink *k, uint64_t at_ns, const uint8_t *snap, size_t len, struct hvt_err *err);
	/* Finishes the output and frees the sink, even on error. */
	int (*close)(struct sink *k, struct hvt_err *err);
};

struct sink *sink_trace_open(const char *path, const struct hvt_trace_meta *meta, struct hvt_err *err);
struct sink *sink_jsonl_open(const char *path, struct hvt_err *err); /* "-" is stdout */
struct sink *sink_summary_open(FILE *f);

#endif
