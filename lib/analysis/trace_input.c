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

int trace_input_span(const char *cmd, const char *path, struct hvt_trace_reader *r,
		     const struct hvt_selection *sel, uint64_t *first, uint64_t *end)
{
	struct hvt_err err = {{0}};

	if (hvt_select_span(r, sel, first, end, &err)) {
		fprintf(stderr, "hvmtrace %s: %s: %s\n", cmd, path, err.msg);
		return TRACE_USAGE;
	}
	return 0;
}

/* The trace is not complete (no index, a torn tail): st.problem says where and why. Every interval before
 * that point was readable, whether or not the walk went that far. */
static int say_incomplete(const char *cmd, const char *path, const struct hvt_trace_reader *r)
{
	struct hvt_trace_status st;

	hvt_trace_get_status(r, &st);
	fprintf(stderr,
		"hvmtrace %s: %s: incomplete trace (%s); the %" PRIu64
		" intervals before that point were read (%" PRIu64 " of %" PRIu64 " bytes readable)\n",
		cmd, path, st.problem, hvt_trace_interval_count(r), st.valid_bytes, st.file_bytes);
	return TRACE_INCOMPLETE;
}

/* An interval the walk took does not decode (its record is framed and CRC-checked, its content is not
 * sane, or the file changed): the trace may well be closed, so this is said apart from a missing index.
 * err names the file, the interval, the record and the field. */
static int say_unreadable(const char *cmd, const struct hvt_err *err, uint64_t done)
{
	fprintf(stderr,
		"hvmtrace %s: %s; damaged trace: the %" PRIu64 " intervals before this one were read\n", cmd,
		err->msg, done);
	return TRACE_INCOMPLETE;
}

int trace_input_walk(const char *cmd, const char *path, struct hvt_trace_reader *r,
		     const struct hvt_selection *sel, uint64_t first, uint64_t end, bool need_one,
		     hvt_walk_fn fn, void *ctx)
{
	struct hvt_trace_status st;
	struct hvt_walk_end e;
	struct hvt_err err = {{0}};
	int status = hvt_select_walk(r, sel, first, end, fn, ctx, &e, &err);

	if (status < 0) {
		fprintf(stderr, "hvmtrace %s: %s: %s\n", cmd, path, err.msg);
		return TRACE_USAGE;
	}
	if (status)
		return status;
	hvt_trace_get_status(r, &st);
	status = e.damaged     ? say_unreadable(cmd, &e.why, e.bad_index)
		 : st.complete ? 0
			       : say_incomplete(cmd, path, r);
	if (!e.selected && (need_one || sel->from.kind || sel->to.kind)) {
		hvt_select_none(sel, &e, &err);
		fprintf(stderr, "hvmtrace %s: %s: %s\n", cmd, path, err.msg);
		return TRACE_USAGE;
	}
	return status;
}
