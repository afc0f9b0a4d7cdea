// SPDX-License-Identifier: MIT
/* /proc/self/pagemap: virtual → physical for our own pages. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/pagemap.h"

int hvt_pagemap_open(struct hvt_pagemap *pm, const char *path, struct hvt_err *e)
{
	if (!path)
		path = HVT_PAGEMAP_PATH;
	snprintf(pm->path, sizeof(pm->path), "%s", path);
	pm->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	pm->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (pm->fd < 0)
		return hvt_err_set(e, -errno, "cannot open %s: %s", path, strerror(errno));
	return 0;
}

void hvt_pagemap_close(struct hvt_pagemap *pm)
{
	if (pm->fd >= 0)
		close(pm->fd);
	pm->fd = -1;
}

bool hvt_pagemap_decode(uint64_t entry, uint64_t *pfn)
{
	if (!(entry & HVT_PAGEMAP_PRESENT) || (entry & HVT_PAGEMAP_SWAPPED))
		return false;
	*pfn = entry & HVT_PAGEMAP_PFN;
	return true;
}

/* Reads the entries of n pages from va's page on. */
static int read_entries(struct hvt_pagemap *pm, uintptr_t va, uint64_t *buf, size_t n, struct hvt_err *e)
{
	off_t off = (off_t)(va / pm->page_size * 8);
	size_t want = n * 8, got = 0;

	while (got < want) {
		ssize_t r = pread(pm->fd, (char *)buf + got, want - got, off + (off_t)got);
		if (r < 0)
			return hvt_err_set(e, -errno, "reading %s at 0x%jx: %s", pm->path,
					   (uintmax_t)off + got, strerror(errno));
		if (r == 0)
			return hvt_err_set(e, -EIO, "%s ended at 0x%jx", pm->path, (uintmax_t)off + got);
		got += (size_t)r;
	}
	return 0;
}

static int entry_to_phys(struct hvt_pagemap *pm, uintptr_t va, uint64_t entry, uint64_t *phys,
			 struct hvt_err *e)
{
	uint64_t pfn;

	if (!hvt_pagemap_decode(entry, &pfn))
		return hvt_err_set(e, -ENOENT,
				   "virtual address 0x%jx is not present in memory (%s entry 0x%" PRIx64
				   "): touch or mlock it first",
				   (uintmax_t)va, pm->path, entry);
	if (pfn == 0)
		return hvt_err_set(
		    e, -EPERM,
		    "%s hides physical addresses (PFN 0): reading them needs CAP_SYS_ADMIN (run as root)",
		    pm->path);
	*phys = pfn * pm->page_size + va % pm->page_size;
	return 0;
}

int hvt_pagemap_phys(struct hvt_pagemap *pm, const void *va, uint64_t *phys, struct hvt_err *e)
{
	uint64_t entry;
	int rc = read_entries(pm, (uintptr_t)va, &entry, 1, e);
	return rc ? rc : entry_to_phys(pm, (uintptr_t)va, entry, phys, e);
}

int hvt_pagemap_runs(struct hvt_pagemap *pm, const void *va, size_t len, struct hvt_pagemap_run **out,
		     size_t *n, struct hvt_err *e)
{
	uintptr_t base = (uintptr_t)va;
	size_t pages = len / pm->page_size;
	uint64_t buf[512];
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (base % pm->page_size || len % pm->page_size)
		return hvt_err_set(e, -EINVAL, "range 0x%jx+0x%zx is not page aligned", (uintmax_t)base, len);
	for (size_t i = 0; i < pages && !rc; i += 512) {
		size_t chunk = pages - i < 512 ? pages - i : 512;
		if ((rc = read_entries(pm, base + i * pm->page_size, buf, chunk, e)))
			break;
		for (size_t j = 0; j < chunk && !rc; j++) {
			uintptr_t v = base + (i + j) * pm->page_size;
			uint64_t phys;
			if ((rc = entry_to_phys(pm, v, buf[j], &phys, e)))
				break;
			struct hvt_pagemap_run *last = *n ? &(*out)[*n - 1] : NULL;
			if (last && last->phys + last->size == phys && last->va + last->size == v) {
				last->size += pm->page_size;
				continue;
			}
			struct hvt_pagemap_run *r = realloc(*out, (*n + 1) * sizeof(*r));
			if (!r) {
				rc = hvt_err_set(e, -ENOMEM, "out of memory");
				break;
			}
			*out = r;
			r[(*n)++] = (struct hvt_pagemap_run){v, phys, pm->page_size};
		}
	}
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}
