/* SPDX-License-Identifier: MIT */
/*
 * hvmtrace-guest, the guest agent (docs/attribution.md): its parts. A snapshot is built in memory (struct
 * obuf) and written in one piece, so a reader of a serial port gets whole snapshots or nothing.
 */
#ifndef HVT_GUEST_AGENT_H
#define HVT_GUEST_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growing byte buffer; fail is set (and stays) when memory runs out. */
struct obuf {
	uint8_t *p;
	size_t n, cap;
	bool fail;
};

/* Runs of PFNs, built from PFNs given in ascending order. */
struct pfn_run {
	uint64_t first, count;
};
struct pfn_runs {
	struct pfn_run *v;
	size_t n, cap;
};

/* The guest's RAM in PFNs (ram.c): [first, end) ranges, ascending; none read means every PFN counts. */
struct ram_range {
	uint64_t first, end;
};
struct ram_map {
	struct ram_range *v;
	size_t n;
};

struct agent_opts {
	uint64_t max_vma_bytes; /* larger mappings are not scanned (the owner is marked partial) */
	bool verbose;
	struct ram_map ram; /* pages outside it are left out of the snapshot */
};

/* What a snapshot took, for --verbose and the cost figures of docs/attribution.md. */
struct agent_stats {
	unsigned procs, procs_gone, procs_partial;
	uint64_t process_runs, kind_runs, pages_scanned, pages_not_ram;
};

int pfn_runs_add(struct pfn_runs *r, uint64_t pfn); /* pfn >= every PFN before it; 0 or -1 (memory) */
void pfn_runs_free(struct pfn_runs *r);

void obuf_put(struct obuf *b, const void *p, size_t n);
void obuf_u8(struct obuf *b, uint8_t v);
void obuf_u16(struct obuf *b, uint16_t v);
void obuf_u32(struct obuf *b, uint32_t v);
void obuf_u64(struct obuf *b, uint64_t v);
void obuf_patch_u32(struct obuf *b, size_t at, uint32_t v);
void obuf_patch_u64(struct obuf *b, size_t at, uint64_t v);

/* The snapshot's header (body size and owner count patched by snapshot_end). */
void snapshot_begin(struct obuf *b, uint32_t page_size, uint64_t time_ns);
void snapshot_end(struct obuf *b, uint32_t nowners, uint16_t flags);
/* One owner: type, kind, flags, pid, name, cgroup, runs. */
void snapshot_owner(struct obuf *b, uint8_t type, uint8_t kind, uint16_t flags, uint32_t pid,
		    const char *name, const char *cgroup, const struct pfn_runs *runs);

/* The "System RAM" of an iomem file (/proc/iomem) in PFNs; an unreadable file or one without (an
 * unprivileged reader sees zeros) gives no ranges. 0, or -1 when memory runs out. */
int ram_map_read(struct ram_map *m, const char *iomem, uint32_t page_size);
bool ram_has(const struct ram_map *m, uint64_t pfn);

/* The kinds of every page of RAM from /proc/kpageflags: appends up to HVT_KIND_MAX owners; -1 after saying
 * why. */
int scan_kinds(struct obuf *b, const char *kpageflags, const struct ram_map *ram, uint32_t *nowners,
	       struct agent_stats *st);
/* Every process with present pages: appends one owner each, up to the limits; -1 after saying why. */
int scan_processes(struct obuf *b, const char *proc, const struct agent_opts *o, uint32_t page_size,
		   uint32_t *nowners, uint64_t *runs_total, uint16_t *flags, struct agent_stats *st);

#endif
