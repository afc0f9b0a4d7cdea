/* SPDX-License-Identifier: MIT */
/*
 * Physical addresses of our own memory through /proc/self/pagemap (Documentation/admin-guide/mm/pagemap.rst):
 * one 64-bit entry per virtual page; bit 63 present, bit 62 swapped, bits 0-54 the PFN. Since Linux 4.2 the
 * PFN reads as 0 without CAP_SYS_ADMIN, which these functions report as -EPERM with that reason.
 */
#ifndef HVMTRACE_PAGEMAP_H
#define HVMTRACE_PAGEMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hvt_err;

#define HVT_PAGEMAP_PATH    "/proc/self/pagemap"
#define HVT_PAGEMAP_PRESENT (1ull << 63)
#define HVT_PAGEMAP_SWAPPED (1ull << 62)
#define HVT_PAGEMAP_PFN     ((1ull << 55) - 1)

struct hvt_pagemap {
	int fd;
	char path[256];
	uint64_t page_size; /* the base page size the file is indexed by */
};

/* One physically contiguous piece of a virtual range. */
struct hvt_pagemap_run {
	uintptr_t va;
	uint64_t phys, size;
};

int hvt_pagemap_open(struct hvt_pagemap *pm, const char *path, struct hvt_err *e);
void hvt_pagemap_close(struct hvt_pagemap *pm);

/* Decodes one entry: true and *pfn if the page is present with a known PFN. */
bool hvt_pagemap_decode(uint64_t entry, uint64_t *pfn);

/* The physical address of va (which must be touched or locked first): -ENOENT not present (or swapped),
 * -EPERM the kernel hid the PFN (needs CAP_SYS_ADMIN). */
int hvt_pagemap_phys(struct hvt_pagemap *pm, const void *va, uint64_t *phys, struct hvt_err *e);

/* Splits [va, va+len) (page aligned) into physically contiguous runs; *out is malloc'd. */
int hvt_pagemap_runs(struct hvt_pagemap *pm, const void *va, size_t len, struct hvt_pagemap_run **out,
		     size_t *n, struct hvt_err *e);

#endif
