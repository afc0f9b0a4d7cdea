/* SPDX-License-Identifier: MIT */
/* hvmtrace report --html: the interactive memory display, one self-contained file (docs/plots.md). */
#ifndef HVT_REPORT_REPORT_HTML_H
#define HVT_REPORT_REPORT_HTML_H

#include "hvmtrace/select.h"

/* Writes the page for the selection sel of trace to out; returns the exit status of report (enum
 * trace_cmd_exit). */
int report_html(const char *trace, const struct hvt_selection *sel, const char *out);

#endif
