/* SPDX-License-Identifier: MIT */
/* Opening a trace for the reading commands (report, export), with the same messages and exit codes. */
#ifndef TRACER_TRACE_INPUT_H
#define TRACER_TRACE_INPUT_H

#include <stdbool.h>

#include "hvmtrace/trace.h"

/* Exit codes of the reading commands. */
enum {
	EXIT_READ_FAILED = 1, /* writing the output failed */
	EXIT_NOT_TRACE = 2,   /* bad arguments, or the file is not a readable trace */
	EXIT_INCOMPLETE = 3,  /* the trace ends early (writer killed, torn or corrupt record): what comes
				 before that point was processed */
};

/* Opens path; prints why not (and returns NULL) if it is not a trace. */
struct hvt_trace_reader *trace_input_open(const char *cmd, const char *path);

/* Prints the incomplete-trace warning if there is one; returns 0 or EXIT_INCOMPLETE. */
int trace_input_finish(const char *cmd, const char *path, const struct hvt_trace_reader *r, uint64_t done);

#endif
