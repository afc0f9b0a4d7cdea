// SPDX-License-Identifier: MIT
/*
 * record's resident-memory budget. Locking with mlockall(MCL_FUTURE) made every later mapping count against
 * RLIMIT_MEMLOCK once CAP_IPC_LOCK was dropped, so large guests failed mid-run ("out of memory for interval
 * 1"). Instead, the heap the run needs is computed up front from the layout, for the worst written pattern,
 * grown to that size and locked while the privilege is still held; malloc is told to keep it and to serve
 * large blocks from it (docs/performance.md, "Memory").
 */
#include <cap-ng.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "hvmtrace/error.h"
#include "hvmtrace/pageset.h"
#include "hvmtrace/sanitizer.h"
#include "hvmtrace/util.h"
#include "mem_budget.h"

#define MiB (1ull << 20)

#ifdef HVT_ASAN
#define SANITIZER_NOTE " (a sanitizer build: its shadow maps, terabytes, count)"
#else
#define SANITIZER_NOTE ""
#endif

/* json-c objects of layouts and messages, zstd's contexts (the streaming compressor at level 1: 1.3 MiB)
 * and the zstd-runs encoder's 1 MiB of varints, stdio buffers (--jsonl streams its lines through one),
 * bandwidth counters. */
#define FIXED_BYTES (16 * MiB)
/* A trace index entry in memory (trace_writer.c) and in the INDEX record. */
#define INDEX_ENTRY_BYTES 32

/*
 * One set kind's share of the INTERVAL record at its worst, summed over the slots
 * (hvt_pageset_encode_auto_bound, pageset_codec.c), and each set's 16-byte header. zstd-runs' frame of a
 * slot's varints is at most a byte per page and one more (every other page written), its ZSTD_compressBound
 * 1/256 more and 64 bytes; but where that is above roaring's worst case the writer encodes the set with
 * roaring, at most a bitmap of 8 KiB per container of 65536 pages and 9 bytes of header per container, 16 per
 * set: each slot adds at most one container to the guest's. So the smaller of the two sums bounds the term,
 * which is about a bitmap's size for a large guest. Roaring's page indexes are 32-bit: past 2^32 pages a slot
 * may need zstd-runs' sum.
 */
static uint64_t record_set_bytes(uint64_t pages, uint64_t slots)
{
	uint64_t stream = pages + slots;
	uint64_t zstd_runs = stream + stream / 256 + (64 + 16) * slots;
	uint64_t containers = (pages + 65535) / 65536 + slots;
	uint64_t roaring = containers * (8192 + 9) + (16 + 16) * slots;

	return pages <= (1ull << 32) && roaring < zstd_runs ? roaring : zstd_runs;
}

void mem_budget_terms(const struct mem_budget_in *in, struct mem_budget_terms *t)
{
	uint64_t pages = in->max_guest_bytes / in->page_size;
	/* one bitmap per set with its marks (hvt_pageset_bytes), each slot's bitmap and marks rounded up to a
	 * 64-bit word */
	uint64_t bitmap = hvt_pageset_bytes(pages) + 16ull * in->max_slots;

	t->sets = in->nsets * bitmap * (in->retry_copy ? 2 : 1);
	/* The INTERVAL record is reserved once at its worst case and the sets are encoded straight into it
	 * (trace_interval.c, pageset_codec.c): no copy of a set's runs, of its compressed frame or of a
	 * roaring bitmap (the roaring encoder writes from the set's bitmap, allocating nothing). Its
	 * header, fixed part, padding and channels (24 bytes each: 160 fit) are in the 4 KiB, each slot's
	 * flags in 4 bytes. */
	t->record = in->nsets * record_set_bytes(pages, in->max_slots) + 4ull * in->max_slots + 4096;
	/* the writer's index doubles as it grows, and the INDEX record copies it once more at close */
	t->index = 6ull * INDEX_ENTRY_BYTES * in->max_intervals;
	t->owners = in->owners_bytes;
	t->fixed = FIXED_BYTES;
}

uint64_t mem_budget_working(const struct mem_budget_in *in)
{
	struct mem_budget_terms t;

	mem_budget_terms(in, &t);
	return t.sets + t.record + t.index + t.owners + t.fixed;
}

uint64_t mem_budget_guest_bytes(uint64_t total_pages, uint32_t page_size)
{
	return total_pages * page_size;
}

/* A "VmSize:"-style line of /proc/self/status, in bytes; 0 if absent. */
static uint64_t status_bytes(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	uint64_t kib = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && sscanf(line + klen, " %" SCNu64, &kib) == 1)
			break;
	fclose(f);
	return kib * 1024;
}

static uint64_t round_up_mib(uint64_t bytes)
{
	return (bytes + MiB - 1) / MiB * MiB;
}

static bool have_ipc_lock(void)
{
	capng_get_caps_process();
	return capng_have_capability(CAPNG_EFFECTIVE, CAP_IPC_LOCK);
}

/* Without CAP_IPC_LOCK, RLIMIT_MEMLOCK must cover `need`: raised if it can be, else the sentence. */
static int fit_rlimit(uint64_t need, const char *what, struct hvt_err *err)
{
	struct rlimit now, want;
	char need_s[32], limit_s[32];

	if (getrlimit(RLIMIT_MEMLOCK, &now))
		return hvt_err_set(err, -errno, "getrlimit(RLIMIT_MEMLOCK): %s", strerror(errno));
	if (now.rlim_cur == RLIM_INFINITY || now.rlim_cur >= need)
		return 0;
	/* The soft limit may rise to the hard one freely; the hard one only with CAP_SYS_RESOURCE. */
	want.rlim_cur = need;
	want.rlim_max = now.rlim_max == RLIM_INFINITY || now.rlim_max >= need ? now.rlim_max : need;
	if (!setrlimit(RLIMIT_MEMLOCK, &want))
		return 0;
	hvt_format_size(need, need_s, sizeof(need_s));
	hvt_format_size(now.rlim_max, limit_s, sizeof(limit_s));
	return hvt_err_set(
	    err, -ENOMEM,
	    "%s needs %s of locked memory%s, more than its RLIMIT_MEMLOCK of %s, which this process cannot raise without CAP_IPC_LOCK or CAP_SYS_RESOURCE: raise the limit before record (ulimit -l %llu, or LimitMEMLOCK=%llu in a systemd unit), or run it as root",
	    what, need_s, SANITIZER_NOTE, limit_s, (unsigned long long)((need + 1023) / 1024),
	    (unsigned long long)need);
}

int mem_budget_lock(uint64_t working, const char *what, struct mem_budget *b, struct hvt_err *err)
{
	int flags = MCL_CURRENT;
	int rc;

	memset(b, 0, sizeof(*b));
	b->working = working;
	b->need = round_up_mib(status_bytes("VmSize:") + working);
	if (!have_ipc_lock() && (rc = fit_rlimit(b->need, what, err)))
		return rc;
#ifdef HVT_ASAN
	/* The sanitizer's allocator has its own mappings and ignores mallopt: nothing to reserve. Its shadow
	 * maps are terabytes: lock them only as they fault in. */
	flags |= MCL_ONFAULT;
#else
	/* One arena, no separate mappings for large blocks, no trimming (-1 disables it): what is reserved
	 * now stays mapped, locked and reused by every later allocation, whichever thread makes it. */
	if (!mallopt(M_ARENA_MAX, 1) || !mallopt(M_MMAP_MAX, 0) || !mallopt(M_TRIM_THRESHOLD, -1))
		return hvt_err_set(err, -EINVAL, "mallopt refused to keep the heap");
	void *reserve = malloc(working);
	if (!reserve)
		return hvt_err_set(err, -ENOMEM, "%s needs %llu MiB of heap, and the host cannot give it",
				   what, (unsigned long long)(working >> 20));
	free(reserve);
#endif
	if (mlockall(flags))
		return hvt_err_set(err, -errno, "%s needs %llu MiB of locked memory, and mlockall failed: %s",
				   what, (unsigned long long)(b->need >> 20), strerror(errno));
	b->resident = status_bytes("VmRSS:");
	b->locked = status_bytes("VmLck:");
	return 0;
}
