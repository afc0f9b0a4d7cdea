/* SPDX-License-Identifier: MIT */
/* hvmtrace score --dirty-rate FILE: QEMU's calc-dirty-rate results against the trace (docs/score.md). */
#ifndef HVT_SCORE_RATE_H
#define HVT_SCORE_RATE_H

#include <stdbool.h>
#include <stdint.h>

#include "hvmtrace/select.h"
#include "hvmtrace/trace.h"

/* Scores every measured reply of file against the trace r (path); prints the table or JSON. Returns
 * cmd_score's exit status (a refusal says why in one line, naming the file and the line). */
int score_dirty_rate(const char *path, struct hvt_trace_reader *r, const struct hvt_selection *sel,
		     uint64_t gfn_first, uint64_t gfn_end, const char *file, int64_t offset_ns, bool json);

#endif
