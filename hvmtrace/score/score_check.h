/* SPDX-License-Identifier: MIT */
/* What hvmtrace score checks of a DAMON record before it scores it against a trace (docs/score.md). */
#ifndef HVT_SCORE_SCORE_CHECK_H
#define HVT_SCORE_SCORE_CHECK_H

#include "damon_record.h"
#include "hvmtrace/trace.h"

struct hvt_err;

/*
 * Every region of rec must be whole pages of page_size inside the guest's RAM: the slots of some layout
 * of the trace r (a record of another machine, or of virtual addresses, is not). -EINVAL with a message
 * naming the record's file (name), the line or snapshot and region, and the guest's RAM; -ENOMEM.
 */
int score_check_regions(const char *name, const struct damon_record *rec, struct hvt_trace_reader *r,
			struct hvt_err *err);

#endif
