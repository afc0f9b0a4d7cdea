/* SPDX-License-Identifier: MIT */
/* Opening a trace for the reading commands (report, export), with the same messages and exit codes. */
#ifndef HVMTRACE_TRACE_INPUT_H
#define HVMTRACE_TRACE_INPUT_H

#include "hvmtrace/trace.h"
#include "hvmtrace/trace_runs.h"

/* The exit statuses of the commands that read a trace (report, export), as their --help lists them. */
enum trace_cmd_exit {
	TRACE_OK = 0,
	TRACE_OUTPUT_FAILED = 1, /* writing the output failed */
	TRACE_USAGE = 2,         /* bad arguments, or the file is not a readable trace */
	TRACE_INCOMPLETE = 3,    /* the trace ends early (writer killed, torn or corrupt record): what comes
				    before that point was processed */
};

/* Opens path; prints why not (and returns NULL) if it is not a trace. */
struct hvt_trace_reader *trace_input_open(const char *cmd, const char *path);

/* Called for each interval in order, read as runs (so that its cost follows the record, not the slots it
 * declares); a non-zero return stops the walk and becomes its status. */
typedef int (*trace_input_fn)(void *ctx, const struct hvt_iv_runs *ir, const struct hvt_layout *l);

/*
 * Walks every readable interval. Returns 0; the callback's status; or TRACE_INCOMPLETE (after saying why)
 * when the trace ends early: every interval before that point has been given to fn.
 */
int trace_input_each(const char *cmd, const char *path, struct hvt_trace_reader *r, trace_input_fn fn,
		     void *ctx);

#endif
