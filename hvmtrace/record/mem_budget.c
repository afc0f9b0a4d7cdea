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
#include "hvmtrace/util.h"
#include "mem_budget.h"

#if defined(__SANITIZE_ADDRESS__)
#define HVT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HVT_ASAN 1
#endif
#endif

#define MiB (1ull << 20)

#ifdef HVT_ASAN
#define SANITIZER_NOTE " (a sanitizer build: its shadow maps, terabytes, count)"
#else
#define SANITIZER_NOTE ""
#endif

/* json-c objects of layouts and messages, zstd contexts, stdio buffers, bandwidth counters. */
#define FIXED_BYTES (16 * MiB)
/* A trace index entry in memory (trace_writer.c) and in the INDEX record. */
#define INDEX_ENTRY_BYTES 32

/* ZSTD_compressBound's formula, rounded up. */
static uint64_t zstd_bound(uint64_t n)
{
	return n + n / 256 + 128 * 1024;
}

uint64_t mem_budget_working(const struct mem_budget_in *in)
{
	uint64_t pages = in->max_guest_bytes / in->page_size;
	/* one bitmap per set: a bit per page, each slot rounded up to a 64-bit word */
	uint64_t bitmap = pages / 8 + 8ull * in->max_slots + 8;
	/* zstd-runs (pageset_codec.c): at most one varint byte per page, the varints in a buffer that doubles
	 * as it grows (old and new both live while realloc copies), then their compressed copy */
	uint64_t varints = pages + 20;
	uint64_t varint_buf = 3 * varints + 3 * 4096;
	uint64_t compressed = zstd_bound(varints);
	/* the INTERVAL record gathers every set's compressed copy in a buffer that doubles too */
	uint64_t record = in->nsets * (compressed + 16) + 16ull * in->max_slots + 4096;
	uint64_t encode = 3 * record + varint_buf + compressed;
	uint64_t sets = in->nsets * bitmap * (in->retry_copy ? 2 : 1);
	/* the writer's index doubles as it grows, and the INDEX record copies it once more at close */
	uint64_t index = 6ull * INDEX_ENTRY_BYTES * in->max_intervals;

	return sets + encode + index + in->owners_bytes + FIXED_BYTES;
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
