/* SPDX-License-Identifier: MIT */
/* Opening and walking a trace for the reading commands (plot, report --html, export), with the same messages
 * and exit codes. */
#ifndef HVMTRACE_TRACE_INPUT_H
#define HVMTRACE_TRACE_INPUT_H

#include <stdbool.h>

#include "hvmtrace/select.h"
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

/* The GFNs [*first, *end) sel takes of r (hvt_select_span); prints why not and returns TRACE_USAGE. */
int trace_input_span(const char *cmd, const char *path, struct hvt_trace_reader *r,
		     const struct hvt_selection *sel, uint64_t *first, uint64_t *end);

/*
 * Walks the intervals sel takes, their runs cut to [first, end) (hvt_select_walk). Returns 0; fn's status;
 * TRACE_INCOMPLETE (after saying why) when the trace ends early or an interval is damaged: every selected
 * interval before that point has been given to fn; or TRACE_USAGE (after saying so) when sel's --from/--to
 * take no interval, or need_one and none could be read.
 */
int trace_input_walk(const char *cmd, const char *path, struct hvt_trace_reader *r,
		     const struct hvt_selection *sel, uint64_t first, uint64_t end, bool need_one,
		     hvt_walk_fn fn, void *ctx);

#endif
