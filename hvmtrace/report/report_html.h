/* SPDX-License-Identifier: MIT */
/* hvmtrace report --html: the interactive memory display, one self-contained file (docs/plots.md). */
#ifndef HVT_REPORT_REPORT_HTML_H
#define HVT_REPORT_REPORT_HTML_H

#include "hvmtrace/select.h"

/* --by: the owners the hover and the legend name (report_html_owners.h); by 0: none. */
struct report_html_owners {
	int by;
	const char *file; /* --owners, or NULL: the trace's snapshots */
	int snapshot;
};

/* Writes the page for the selection sel of trace to out (by NULL: no owners); returns the exit status of
 * report (enum trace_cmd_exit). */
int report_html(const char *trace, const struct hvt_selection *sel, const char *out,
		const struct report_html_owners *by);

#endif
