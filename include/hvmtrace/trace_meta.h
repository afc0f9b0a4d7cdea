/* SPDX-License-Identifier: MIT */
/*
 * The trace's metadata: what the META record of a .hvt file holds (docs/formats.md, "META"), as a C type.
 * `hvmtrace record` fills one and the trace writer stores it as JSON; the reader turns the JSON back into
 * this type, checking every field, and the commands read the type, never the JSON.
 *
 * The fields are described once, by a table in lib/format/trace_meta.c (in the spirit of the feature table of
 * Linux perf's perf.data header): each row gives an item's JSON key, its type, where it lives in the struct,
 * its range, and whether it is required or optional. Adding an item is a field here, its enum entry, one
 * row there and a line in docs/formats.md.
 *
 * Required items: a reader refuses META without them. Optional items: present only if their bit is in
 * `present`; an absent one reads as zero, NULL or HVT_BW_SOURCE_NONE. Members the table does not know (from a
 * newer writer) are kept as they are in `unknown` and written back by to_json.
 */
#ifndef HVMTRACE_TRACE_META_H
#define HVMTRACE_TRACE_META_H

#include <stdbool.h>
#include <stdint.h>

#include "tracking_mode.h"

struct json_object;
struct hvt_err;

/* Where an interval's DRAM bytes come from. The names are the values of META's "bandwidth_source". */
enum hvt_bw_source {
	HVT_BW_SOURCE_NONE = 0,      /* no bandwidth in this trace (the member is absent) */
	HVT_BW_SOURCE_PMU,           /* "pmu": the channels' CAS counters, reads and writes apart */
	HVT_BW_SOURCE_PMU_STAND_IN,  /* "pmu-stand-in": a test tree's software events posing as channels */
	HVT_BW_SOURCE_RESCTRL_TOTAL, /* "resctrl-total": resctrl's total bytes of the VMM's threads */
};

const char *hvt_bw_source_name(enum hvt_bw_source s);         /* NULL for NONE and unknown values */
enum hvt_bw_source hvt_bw_source_from_name(const char *name); /* NONE when unknown */

/* One entry of META's "channels": a channel (PMU) or L3 domain (resctrl) whose bytes intervals carry. */
enum hvt_meta_channel_item {
	HVT_MCH_ID,
	HVT_MCH_SOURCE,
	HVT_MCH_SOCKET,
	HVT_MCH_CONTROLLER,
	HVT_MCH_CHANNEL,
	HVT_MCH_PMU,
	HVT_MCH_CPU,
	HVT_MCH_INFERRED,
	HVT_MCH_GROUP,
	HVT_MCH_READS_WRITES_SPLIT,
	HVT_MCH_NOTE,
	HVT_MCH_NITEMS
};

struct hvt_meta_channel {
	uint64_t present; /* bits 1 << enum hvt_meta_channel_item of the optional items given */
	char *id;         /* "s0.mc1.ch0", "resctrl.mon_L3_00" */
	char *source;     /* how it is counted, for people ("uncore IMC (SKX)", "resctrl mbm_total_bytes") */
	int32_t socket;   /* PMU only: package, controller and channel within it */
	int32_t controller;
	int32_t channel;
	char *pmu;                   /* PMU only: "uncore_imc_3" */
	int32_t cpu;                 /* PMU only: the CPU the counters are opened on */
	bool inferred;               /* PMU only: box -> (controller, channel) is an inference */
	char *group;                 /* resctrl only: the monitoring group's directory */
	bool reads_writes_split;     /* false: the bytes are totals (resctrl) */
	char *note;                  /* resctrl only: what the figures mean */
	struct json_object *unknown; /* members no row knows, or NULL */
};

/* The items of META, in the order record writes them. */
enum hvt_meta_item {
	HVT_META_TOOL,
	HVT_META_CREATED,
	HVT_META_HOST_NAME,
	HVT_META_HOST_KERNEL,
	HVT_META_HOST_MACHINE,
	HVT_META_VM_NAME,
	HVT_META_VM_UUID,
	HVT_META_VM_PID,
	HVT_META_VM_VMM,
	HVT_META_VM_ACCEL,
	HVT_META_TRACER_VERSION,
	HVT_META_TRACER_CPU,
	HVT_META_TRACER_HARVEST_CPU,
	HVT_META_TRACER_COMMAND,
	HVT_META_MODE,
	HVT_META_INTERVAL_NS,
	HVT_META_PAGE_SIZE,
	HVT_META_WRITTEN_AVAILABLE,
	HVT_META_ACCESSED_AVAILABLE,
	HVT_META_BANDWIDTH_AVAILABLE,
	HVT_META_BANDWIDTH_SOURCE,
	HVT_META_CHANNELS,
	HVT_META_T_ARMED_NS,
	HVT_META_AD_WALK,
	HVT_META_NITEMS
};

struct hvt_meta_strv {
	uint32_t n;
	char **v;
};

struct hvt_meta_channels {
	uint32_t n;
	struct hvt_meta_channel *v;
};

struct hvt_trace_meta {
	uint64_t present;   /* bits 1 << enum hvt_meta_item of the optional items given */
	char *tool;         /* "hvmtrace 0.1.0" */
	char *created;      /* UTC wall time the trace was created */
	char *host_name;    /* the host the VM ran on */
	char *host_kernel;  /* optional: uname release */
	char *host_machine; /* optional: uname machine */
	char *vm_name;      /* from the VMM's hello, "" if none */
	char *vm_uuid;
	int32_t vm_pid; /* from the socket's peer credentials */
	char *vm_vmm;   /* "hvmtrace-vmm 0.1.0", "QEMU 10.0.2" */
	char *vm_accel; /* "kvm", "tcg" */
	char *tracer_version;
	int32_t tracer_cpu;
	int32_t harvest_cpu; /* -1: the VMM's harvest thread was not pinned */
	struct hvt_meta_strv command;
	enum hvt_mode mode;
	uint64_t interval_ns; /* nominal interval */
	uint32_t page_size;
	bool written_available, accessed_available, bandwidth_available;
	enum hvt_bw_source bandwidth_source; /* optional; given exactly when bandwidth_available */
	struct hvt_meta_channels
	    channels;                /* indexed by an interval's channel field; empty without bandwidth */
	uint64_t t_armed_ns;         /* CLOCK_MONOTONIC when tracking was armed */
	char *ad_walk;               /* optional, mode ad: "pruned" or "full" (docs/kvm-ad.md) */
	struct json_object *unknown; /* members no row knows, or NULL */
};

static inline bool hvt_trace_meta_has(const struct hvt_trace_meta *m, enum hvt_meta_item i)
{
	return m->present & (1ull << i);
}

static inline void hvt_trace_meta_set_present(struct hvt_trace_meta *m, enum hvt_meta_item i)
{
	m->present |= 1ull << i;
}

void hvt_trace_meta_fini(struct hvt_trace_meta *m);
void hvt_meta_channel_fini(struct hvt_meta_channel *c);

/* Replaces *dst with a copy of s (NULL: none); -ENOMEM leaves *dst as it was. */
int hvt_meta_set_str(char **dst, const char *s);

/*
 * JSON conversion. to_json writes the required items and the optional ones marked present, then the
 * unknown members (NULL only when out of memory). from_json (m uninitialised) checks every item's type and
 * range and fails with a message naming the field ("META: field \"channels\": expected an array, got a
 * number"); m is then empty.
 */
struct json_object *hvt_trace_meta_to_json(const struct hvt_trace_meta *m);
int hvt_trace_meta_from_json(struct hvt_trace_meta *m, struct json_object *o, struct hvt_err *err);

#endif
