// SPDX-License-Identifier: MIT
/* The kind of every page, from /proc/kpageflags (the kernel's admin-guide/mm/pagemap): one 64-bit word of
 * flags per PFN, holes flagged NOPAGE. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "hvmtrace/owners_format.h"

#define KPF_LRU     5
#define KPF_SLAB    7
#define KPF_BUDDY   10
#define KPF_ANON    12
#define KPF_NOPAGE  20
#define KPF_PGTABLE 26

static const char *const kind_names[HVT_KIND_MAX + 1] = {
    [HVT_KIND_FREE] = "free", [HVT_KIND_SLAB] = "slab",   [HVT_KIND_PGTABLE] = "pagetable",
    [HVT_KIND_ANON] = "anon", [HVT_KIND_CACHE] = "cache", [HVT_KIND_OTHER] = "other",
};

/* 0 for a hole (no page behind the PFN). */
static int kind_of(uint64_t f)
{
	if (f & (1ull << KPF_NOPAGE))
		return 0;
	if (f & (1ull << KPF_BUDDY))
		return HVT_KIND_FREE;
	if (f & (1ull << KPF_SLAB))
		return HVT_KIND_SLAB;
	if (f & (1ull << KPF_PGTABLE))
		return HVT_KIND_PGTABLE;
	if (f & (1ull << KPF_ANON))
		return HVT_KIND_ANON;
	if (f & (1ull << KPF_LRU))
		return HVT_KIND_CACHE;
	return HVT_KIND_OTHER;
}

int scan_kinds(struct obuf *b, const char *kpageflags, const struct ram_map *ram, uint32_t *nowners,
	       struct agent_stats *st)
{
	static uint64_t flags[65536];
	struct pfn_runs runs[HVT_KIND_MAX + 1] = {{0}};
	int fd = open(kpageflags, O_RDONLY | O_CLOEXEC), rc = -1;
	uint64_t pfn = 0;

	if (fd < 0) {
		fprintf(stderr, "hvmtrace-guest: %s: %s (run as root)\n", kpageflags, strerror(errno));
		return -1;
	}
	for (;;) {
		ssize_t got = pread(fd, flags, sizeof(flags), (off_t)(pfn * 8));

		if (got < 0) {
			fprintf(stderr, "hvmtrace-guest: reading %s: %s\n", kpageflags, strerror(errno));
			goto out;
		}
		if (got < 8)
			break;
		for (size_t i = 0; i < (size_t)got / 8; i++, pfn++) {
			int k = kind_of(flags[i]);

			if (pfn >= HVT_OWN_MAX_PFN_END)
				break;
			if (k && !ram_has(ram, pfn)) {
				st->pages_not_ram++;
				continue;
			}
			if (k && pfn_runs_add(&runs[k], pfn)) {
				fprintf(stderr, "hvmtrace-guest: out of memory\n");
				goto out;
			}
		}
		st->pages_scanned += (uint64_t)got / 8;
		if (pfn >= HVT_OWN_MAX_PFN_END)
			break;
	}
	for (int k = 1; k <= HVT_KIND_MAX; k++) {
		st->kind_runs += runs[k].n;
		if (!runs[k].n)
			continue;
		snapshot_owner(b, HVT_OWN_KIND, (uint8_t)k, 0, 0, kind_names[k], "", &runs[k]);
		(*nowners)++;
	}
	if (st->kind_runs > HVT_OWN_MAX_RUNS) {
		fprintf(stderr, "hvmtrace-guest: %s: %llu runs of page kinds, over the format's %u\n",
			kpageflags, (unsigned long long)st->kind_runs, HVT_OWN_MAX_RUNS);
		goto out;
	}
	rc = 0;
out:
	for (int k = 0; k <= HVT_KIND_MAX; k++)
		pfn_runs_free(&runs[k]);
	close(fd);
	return rc;
}
