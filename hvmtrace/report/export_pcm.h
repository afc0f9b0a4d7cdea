/* SPDX-License-Identifier: MIT */
/*
 * hvmtrace export --pcm-csv: the VM's bandwidth in the CSV pcm-memory -csv writes on the same host
 * (display_bandwidth_csv in https://github.com/intel/pcm, src/pcm-memory.cpp): every channel of every
 * socket in pcm's numbering, the VM's figures in its channels' columns and empty cells elsewhere, then each
 * socket's and the system's columns. The mapping is in docs/analyses.md, "Exports for other tools".
 */
#ifndef HVT_REPORT_EXPORT_PCM_H
#define HVT_REPORT_EXPORT_PCM_H

#include <stdio.h>

struct hvt_interval;
struct hvt_trace_meta;
struct pcm_csv;

/*
 * The columns for the trace's channels; chanmap_path (or NULL) is the host's channel map, which lists
 * every channel pcm-memory shows. NULL after saying (one line, naming trace or map) why the trace has no
 * pcm-memory form: no bandwidth, resctrl totals, a channel id that names no socket/controller/channel, or
 * one the map lacks. Without a map, says on stderr which channels the columns know.
 */
struct pcm_csv *pcm_csv_new(const struct hvt_trace_meta *m, const char *trace_path, const char *chanmap_path);
void pcm_csv_header(FILE *f, const struct pcm_csv *p);
void pcm_csv_interval(FILE *f, const struct pcm_csv *p, const struct hvt_interval *iv);
void pcm_csv_free(struct pcm_csv *p);

#endif
