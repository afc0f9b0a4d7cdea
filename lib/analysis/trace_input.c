// SPDX-License-Identifier: MIT
#include <inttypes.h>
#include <stdio.h>

#include "hvmtrace/error.h"
#include "hvmtrace/trace_input.h"

struct hvt_trace_reader *trace_input_open(const char *cmd, const char *path)
{
	struct hvt_trace_reader *r;
	struct hvt_err err = {{0}};

	if (hvt_trace_open(&r, path, &err)) {
		fprintf(stderr, "hvmtrace %s: %s\n", cmd, err.msg);
		return NULL;
	}
	return r;
}

/* The walk at open stopped early: st.problem says where and why. */
static int say_incomplete(const char *cmd, const char *path, const struct hvt_trace_reader *r, uint64_t done)
{
	struct hvt_trace_status st;

	hvt_trace_get_status(r, &st);
	fprintf(stderr,
		"hvmtrace %s: %s: incomplete trace (%s); the %" PRIu64
		" intervals before that point were read (%" PRIu64 " of %" PRIu64 " bytes readable)\n",
		cmd, path, st.problem, done, st.valid_bytes, st.file_bytes);
	return TRACE_INCOMPLETE;
}

/* An interval the walk accepted does not decode (its record is framed and CRC-checked, its content is not
 * sane, or the file changed): the trace may well be closed, so this is said apart from a missing index.
 * err names the file, the interval, the record and the field. */
static int say_unreadable(const char *cmd, const struct hvt_err *err, uint64_t done)
{
	fprintf(stderr,
		"hvmtrace %s: %s; damaged trace: the %" PRIu64 " intervals before this one were read\n", cmd,
		err->msg, done);
	return TRACE_INCOMPLETE;
}

int trace_input_each(const char *cmd, const char *path, struct hvt_trace_reader *r, trace_input_fn fn,
		     void *ctx)
{
	struct hvt_trace_status st;
	struct hvt_iv_runs ir = {0};
	uint64_t n = hvt_trace_interval_count(r), done = 0;
	int status = 0;

	for (; done < n && !status; done++) {
		struct hvt_err err = {{0}};

		if (hvt_trace_read_runs(r, done, &ir, &err)) {
			hvt_iv_runs_fini(&ir);
			return say_unreadable(cmd, &err, done);
		}
		status = fn(ctx, &ir, hvt_trace_layout(r, ir.hdr.generation));
	}
	hvt_iv_runs_fini(&ir);
	if (status)
		return status;
	hvt_trace_get_status(r, &st);
	return st.complete ? 0 : say_incomplete(cmd, path, r, done);
}
