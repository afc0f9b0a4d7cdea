/* SPDX-License-Identifier: MIT */
/*
 * The tracking mode: which pages a trace's sets hold and who harvests them. The attach protocol negotiates
 * it (attach.h) and the trace's metadata records it (trace_meta.h, "mode"), so it lives apart from both:
 * a trace's readers need its names, not the protocol.
 */
#ifndef HVMTRACE_TRACKING_MODE_H
#define HVMTRACE_TRACKING_MODE_H

enum hvt_mode {
	HVT_MODE_NONE = 0,
	HVT_MODE_DIRTY_LOG = 1,  /* "dirty-log": written pages only, harvested by a thread in the VMM */
	HVT_MODE_AD = 2,         /* "ad": accessed and written pages, harvested by the tracer (KVM patch) */
	HVT_MODE_DIRTY_RING = 3, /* "dirty-ring": written pages, reaped by the VMM from KVM's dirty rings */
	HVT_MODE_NMODES,         /* how many: every mode is below it */
};
#define HVT_MODE_BIT(m) (1u << (m))

const char *hvt_mode_name(enum hvt_mode m);         /* "dirty-log", "ad", "dirty-ring", "none" */
enum hvt_mode hvt_mode_from_name(const char *name); /* HVT_MODE_NONE when unknown */

#endif
