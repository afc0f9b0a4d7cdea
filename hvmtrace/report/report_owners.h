/* SPDX-License-Identifier: MIT */
/*
 * hvmtrace report --by process|cgroup|kind: written and accessed pages per owner per interval, the top
 * writers and each owner's pages per class (docs/analyses.md, "By owner"), owners from the trace's snapshots
 * or --owners FILE, each interval by the rule of attribute/owners_interval.h.
 */
#ifndef HVT_REPORT_REPORT_OWNERS_H
#define HVT_REPORT_REPORT_OWNERS_H

#include <stdio.h>

#include "hvmtrace/error.h"

struct report;
struct json_object;

/* Reads the owners and counts the selection by them (rp->o.by set); 0, or -1 with one line said. */
int report_owners_compute(struct report *rp);
void report_owners_text(FILE *f, const struct report *rp);
struct json_object *report_owners_json(const struct report *rp);
void report_owners_free(struct report *rp);

#endif
