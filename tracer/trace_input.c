// SPDX-License-Identifier: MIT
#include <inttypes.h>
#include <stdio.h>

#include "hvmtrace/error.h"
#include "trace_input.h"

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

int trace_input_finish(const char *cmd, const char *path, const struct hvt_trace_reader *r, uint64_t done)
{
	struct hvt_trace_status st;

	hvt_trace_get_status(r, &st);
	if (st.complete)
		return 0;
	fprintf(stderr,
		"hvmtrace %s: %s: incomplete trace (%s); the %" PRIu64
		" intervals before that point were read "
		"(%" PRIu64 " of %" PRIu64 " bytes readable)\n",
		cmd, path, st.problem[0] ? st.problem : "no index: the writer did not close it", done,
		st.valid_bytes, st.file_bytes);
	return EXIT_INCOMPLETE;
}
