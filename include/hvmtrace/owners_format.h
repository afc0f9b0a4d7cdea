/* SPDX-License-Identifier: MIT */
/*
 * The owners snapshot (docs/attribution.md, "Snapshot format"): who owns which guest-physical page, as the
 * guest agent hvmtrace-guest writes it and hvmtrace attribute reads it. Little-endian; a snapshot is a
 * 40-byte header and body_bytes of owners, so a stream of snapshots (a serial port, a file of several)
 * splits without reading the owners. The limits are the reader's: it refuses a snapshot beyond them, and
 * the agent stops adding processes (and sets HVT_OWN_TRUNCATED) before it reaches them.
 */
#ifndef HVMTRACE_OWNERS_FORMAT_H
#define HVMTRACE_OWNERS_FORMAT_H

#define HVT_OWN_MAGIC        "HVTOWNRS"
#define HVT_OWN_VERSION      1
#define HVT_OWN_HEADER_BYTES 40
#define HVT_OWN_OWNER_BYTES  20 /* an owner's fixed part, before its name, cgroup and runs */

/* header flags */
#define HVT_OWN_TRUNCATED 1u /* processes were left out: the owner or run limit was reached */
/* owner flags: a mapping of the process was too large to scan (the agent's --max-vma) */
#define HVT_OWN_PARTIAL 1u

enum hvt_own_type {
	HVT_OWN_PROCESS = 1,
	HVT_OWN_KIND = 2,
};

/* A page's kind, from /proc/kpageflags (one per page; the first that applies, in this order). */
enum hvt_own_kind {
	HVT_KIND_FREE = 1,    /* KPF_BUDDY: the first page of a free block (its other pages are "other") */
	HVT_KIND_SLAB = 2,    /* KPF_SLAB */
	HVT_KIND_PGTABLE = 3, /* KPF_PGTABLE */
	HVT_KIND_ANON = 4,    /* KPF_ANON */
	HVT_KIND_CACHE = 5,   /* KPF_LRU and not anonymous: the page cache */
	HVT_KIND_OTHER = 6,   /* none of these: kernel allocations, free blocks' tails, reserved */
	HVT_KIND_MAX = 6,
};

/* The reader's limits. */
#define HVT_OWN_MAX_BODY    (256u << 20) /* bytes after the header */
#define HVT_OWN_MAX_OWNERS  65536u
#define HVT_OWN_MAX_RUNS    (4u << 20) /* runs of all owners together */
#define HVT_OWN_MAX_NAME    255u       /* comm (the kernel's is 15 bytes) */
#define HVT_OWN_MAX_CGROUP  4096u
#define HVT_OWN_MAX_PFN_END (1ull << 40) /* 52-bit guest-physical addresses of 4 KiB pages */
#define HVT_OWN_MIN_PAGE    4096u
#define HVT_OWN_MAX_PAGE    65536u

#endif
