/* SPDX-License-Identifier: MIT */
/*
 * Reading owners snapshots (include/hvmtrace/owners_format.h, docs/attribution.md), which come from a guest
 * and are hostile input: every count, length and PFN is checked against the bytes there are and the format's
 * limits before anything is allocated for it, and a snapshot that breaks a rule is refused whole, with a
 * message naming the input, the snapshot, the owner and the rule.
 */
#ifndef HVT_ATTRIBUTE_OWNERS_SNAPSHOT_H
#define HVT_ATTRIBUTE_OWNERS_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "hvmtrace/error.h"
#include "hvmtrace/owners_format.h"
#include "hvmtrace/pageset.h"

struct owner {
	uint8_t type;   /* HVT_OWN_PROCESS or HVT_OWN_KIND */
	uint8_t kind;   /* HVT_OWN_KIND: enum hvt_own_kind */
	uint16_t flags; /* HVT_OWN_PARTIAL */
	uint32_t pid;
	char *name, *cgroup;     /* NUL-terminated, printable ASCII */
	size_t first_run, nruns; /* its runs: owners_snapshot.runs[first_run …] */
	uint64_t pages;
};

struct owners_snapshot {
	uint32_t page_size;
	uint16_t flags;   /* HVT_OWN_TRUNCATED */
	uint64_t time_ns; /* the guest's CLOCK_REALTIME when it was taken */
	struct owner *owners;
	size_t nowners, nprocesses;
	struct hvt_run *runs; /* each owner's ascending, apart; the kinds' disjoint */
	size_t nruns;
};

/* The snapshot at the start of data[0, size): 0 and *used its bytes, or -EINVAL (-ENOMEM) with err saying
 * why and s left empty. name names the input in messages. */
int owners_parse(const char *name, const uint8_t *data, size_t size, size_t *used, struct owners_snapshot *s,
		 struct hvt_err *err);

/* Snapshot `index` (from 0) of the file at path, a stream of snapshots; *count (may be NULL) the file's
 * snapshots. Every snapshot of the file is checked. */
int owners_read(const char *path, size_t index, struct owners_snapshot *s, size_t *count,
		struct hvt_err *err);

void owners_free(struct owners_snapshot *s);

/* The most owners_parse holds at once for a snapshot of body_bytes (its allocations, malloc's overhead
 * included): what a caller with a memory budget counts for it. */
uint64_t owners_parse_peak_bytes(uint64_t body_bytes);

/* "anon", "cache", …, for HVT_OWN_KIND owners. */
const char *owners_kind_name(unsigned kind);

#endif
