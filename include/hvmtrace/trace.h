/* SPDX-License-Identifier: MIT */
/*
 * The trace file (.hvt, docs/architecture.md §3.7; byte layout in docs/formats.md). Append-only and
 * self-describing:
 *
 *   file header   "HVMTRACE" magic, format version, flags                      (16 bytes)
 *   records       each: type, payload length, CRC32C, reserved, payload, zero padding to 8 bytes
 *                 META (JSON metadata, first), LAYOUT (JSON, before the intervals that use it),
 *                 INTERVAL (one per interval), OWNERS (owners snapshots, optional), INDEX (at close)
 *   trailer       at close: INDEX offset, interval count, CRC, "HVTEND\0\0"       (32 bytes)
 *
 * Each record reaches the file with one write(), so a writer killed at any moment leaves whole records
 * followed by at most one torn one. A reader uses the index when the trailer is intact and otherwise scans,
 * stopping at the first incomplete or corrupt record; it reports how many intervals it recovered.
 */
#ifndef HVMTRACE_TRACE_H
#define HVMTRACE_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "layout.h"
#include "pageset.h"
#include "trace_meta.h"

struct json_object;
struct hvt_err;

#define HVT_TRACE_VERSION 1

enum hvt_interval_flags {
	HVT_IV_WRITTEN = 1u << 0,   /* written sets present (else: not available in this mode) */
	HVT_IV_ACCESSED = 1u << 1,  /* accessed sets present */
	HVT_IV_BANDWIDTH = 1u << 2, /* per-channel bytes present */
	HVT_IV_FINAL = 1u << 3,     /* last interval, cut short by stop or VMM exit */
	/* With HVT_IV_BANDWIDTH only: the channels carry total bytes (reads + writes, e.g. resctrl), not
	 * split. Each channel's read_bytes then holds the total and write_bytes is 0. */
	HVT_IV_BW_TOTAL = 1u << 4,
	/* With HVT_IV_WRITTEN and HVT_IV_ACCESSED only: the tracer made written ⊆ accessed, and
	 * written_not_accessed counts the written pages the harvest had not reported accessed (now in the
	 * accessed sets). Clear: not checked (older traces; no accessed sets), which is not the same as 0. */
	HVT_IV_WNA_COUNTED = 1u << 5,
	/* tracer_cpu_ns is present: the tracer's CPU time over the interval (all its threads). */
	HVT_IV_TRACER_CPU = 1u << 6,
	/* With HVT_IV_TRACER_CPU only: the tracer needed more than half its CPU in this interval (record
	 * warned on stderr too); a shorter interval risks missed deadlines. */
	HVT_IV_TRACER_BUSY = 1u << 7,
	/* The last interval: the VMM announced a layout beyond the RAM this run's memory budget covers
	 * (record --max-guest-ram), so recording ended. The interval has no sets (their content is unknown).
	 */
	HVT_IV_LAYOUT_REFUSED = 1u << 8,
	/* ring_full is present (mode dirty-ring): the KVM_EXIT_DIRTY_RING_FULL exits of the interval, each a
	 * reap by the vCPU thread whose pages fault again within the interval: a ring smaller than what the
	 * guest writes in an interval costs the guest that. */
	HVT_IV_RING_FULL = 1u << 9,
};

struct hvt_channel_bytes {
	uint32_t channel;     /* index into the metadata's channels */
	uint64_t read_bytes;  /* with HVT_IV_BW_TOTAL: total bytes */
	uint64_t write_bytes; /* with HVT_IV_BW_TOTAL: 0 */
};

struct hvt_interval {
	uint64_t seq;          /* 1, 2, 3 …: intervals harvested, in order */
	uint64_t t_start_ns;   /* CLOCK_MONOTONIC: writes after this are in this or a later interval */
	uint64_t t_end_ns;     /* CLOCK_MONOTONIC: writes before this are in this or an earlier interval */
	int64_t wall_start_ns; /* CLOCK_REALTIME at t_start_ns */
	uint64_t harvest_ns;   /* time the harvest itself took */
	uint32_t flags;        /* enum hvt_interval_flags */
	uint32_t missed_deadlines;     /* deadlines that passed without a harvest inside this interval */
	uint64_t generation;           /* layout generation the sets refer to */
	uint64_t lost_pages;           /* written pages whose slot vanished in a layout change */
	uint64_t written_not_accessed; /* with HVT_IV_WNA_COUNTED: see there */
	uint64_t tracer_cpu_ns;        /* with HVT_IV_TRACER_CPU: see there */
	uint64_t ring_full;            /* with HVT_IV_RING_FULL: see there */
	uint32_t nslots;               /* = slots of that layout */
	struct hvt_pageset *written;   /* nslots sets if HVT_IV_WRITTEN, else NULL */
	struct hvt_pageset *accessed;  /* nslots sets if HVT_IV_ACCESSED, else NULL */
	uint32_t nchannels;
	struct hvt_channel_bytes *channels;
};

/* Allocates written/accessed sets for every slot of l as flags ask (all clear). */
int hvt_interval_init(struct hvt_interval *iv, const struct hvt_layout *l, uint32_t flags);
void hvt_interval_fini(struct hvt_interval *iv);
uint64_t hvt_interval_count_pages(const struct hvt_pageset *sets, uint32_t nslots);
/*
 * A written page is an accessed page (docs/kvm-ad.md). For an interval with both sets: adds every written
 * page that its accessed set lacks to it, counts them in written_not_accessed and sets HVT_IV_WNA_COUNTED,
 * so the anomaly stays visible. Without accessed sets it does nothing: there is nothing to count. 0, or
 * -EINVAL when a slot's two sets differ in size (iv unchanged).
 */
int hvt_interval_close_written_in_accessed(struct hvt_interval *iv);

/* ---- writer ---- */
struct hvt_trace_writer;

/* Creates (truncates) path and writes the header and the META record (meta's JSON form, trace_meta.h).
 * Refuses (-EINVAL) metadata that the reader would refuse. */
int hvt_trace_create(struct hvt_trace_writer **w, const char *path, const struct hvt_trace_meta *meta,
		     struct hvt_err *err);
int hvt_trace_write_layout(struct hvt_trace_writer *w, const struct hvt_layout *l, struct hvt_err *err);
/* iv->generation must be a layout written before. */
int hvt_trace_write_interval(struct hvt_trace_writer *w, const struct hvt_interval *iv, struct hvt_err *err);
/* Writes INDEX and trailer, fdatasync()s and closes; frees w even on error. */
int hvt_trace_close(struct hvt_trace_writer *w, struct hvt_err *err);
/* Closes without INDEX/trailer (what a crash leaves behind; for tests and error paths). */
void hvt_trace_abandon(struct hvt_trace_writer *w);
/*
 * An OWNERS record: one owners snapshot (include/hvmtrace/owners_format.h), its bytes as the guest agent sent
 * them, received complete at at_ns (CLOCK_MONOTONIC), after the last interval written so far. The writer
 * checks the frame only (magic, body_bytes = the bytes given); the snapshot's rules are its caller's.
 */
int hvt_trace_write_owners(struct hvt_trace_writer *w, uint64_t at_ns, const void *snapshot, size_t len,
			   struct hvt_err *err);

/* ---- reader ---- */
struct hvt_trace_reader;

struct hvt_trace_status {
	bool complete;      /* trailer and index intact: the writer closed the trace */
	uint64_t intervals; /* intervals readable */
	uint64_t layouts;
	uint64_t valid_bytes; /* the readable prefix */
	uint64_t file_bytes;
	char problem[256]; /* why reading stopped early, "" if complete */
};

/*
 * Opens a trace. Fails (-EINVAL, with a message) only when the file is not a trace at all: unreadable,
 * bad magic, unknown version, or no intact META record (or one whose metadata fails the checks of
 * hvt_trace_meta_from_json; the message names the field). A torn or corrupt tail is not a failure: the
 * reader keeps everything before it and the status says what happened.
 */
int hvt_trace_open(struct hvt_trace_reader **r, const char *path, struct hvt_err *err);
void hvt_trace_reader_close(struct hvt_trace_reader *r);
void hvt_trace_get_status(const struct hvt_trace_reader *r, struct hvt_trace_status *st);
const char *hvt_trace_path(const struct hvt_trace_reader *r);                  /* as opened; for messages */
const struct hvt_trace_meta *hvt_trace_meta(const struct hvt_trace_reader *r); /* borrowed */
uint64_t hvt_trace_interval_count(const struct hvt_trace_reader *r);
/* The i-th layout the trace holds (0 <= i < status.layouts), in file order; NULL past the end. */
const struct hvt_layout *hvt_trace_layout_at(const struct hvt_trace_reader *r, uint64_t i);
/* Layout of a generation, or NULL if the trace holds none such. */
const struct hvt_layout *hvt_trace_layout(const struct hvt_trace_reader *r, uint64_t generation);
/* Reads interval i (0-based) into iv (initialised by this call; free with hvt_interval_fini). */
int hvt_trace_read_interval(struct hvt_trace_reader *r, uint64_t i, struct hvt_interval *iv,
			    struct hvt_err *err);

/* An OWNERS record found by the walk (docs/formats.md). The reader checks its frame (CRC, size, the
 * snapshot's magic and body_bytes, after_seq); what the snapshot says is the loader's to check
 * (hvmtrace/attribute/owners_from_trace.c). */
#define HVT_OWNERS_NONE_BEFORE UINT64_MAX /* after_seq of a snapshot that came before any interval */
struct hvt_owners_info {
	uint64_t offset;    /* of the record */
	uint64_t at_ns;     /* when record received it complete, CLOCK_MONOTONIC (the intervals' clock) */
	uint64_t after_seq; /* seq of the last interval before it, or HVT_OWNERS_NONE_BEFORE */
	uint64_t bytes;     /* the snapshot's */
};
uint64_t hvt_trace_owners_count(const struct hvt_trace_reader *r);
/* Record i (0-based, file order); NULL past the end. Borrowed. */
const struct hvt_owners_info *hvt_trace_owners_at(const struct hvt_trace_reader *r, uint64_t i);
/* The snapshot of record i, read afresh and its CRC checked again, into *data (malloc'd, info->bytes). */
int hvt_trace_read_owners(struct hvt_trace_reader *r, uint64_t i, uint8_t **data, struct hvt_err *err);

#endif
