// SPDX-License-Identifier: MIT
/* /proc/self/pagemap on this host, for real: our pages' physical addresses are RAM the kernel lists. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <linux/mman.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/iomem.h"
#include "hvmtrace/pagemap.h"

static void test_decode(void **state)
{
	uint64_t pfn = 0;
	(void)state;
	assert_true(hvt_pagemap_decode(HVT_PAGEMAP_PRESENT | 0x12345, &pfn));
	assert_int_equal(pfn, 0x12345);
	assert_true(
	    hvt_pagemap_decode(HVT_PAGEMAP_PRESENT | (1ull << 55) | (1ull << 61) | 7, &pfn)); /* flags */
	assert_int_equal(pfn, 7);
	assert_false(hvt_pagemap_decode(0x12345, &pfn));                                       /* absent */
	assert_false(hvt_pagemap_decode(HVT_PAGEMAP_PRESENT | HVT_PAGEMAP_SWAPPED | 9, &pfn)); /* swapped */
}

/* Whether phys lies in System RAM (or under it: kernel code etc.) in /proc/iomem. */
static bool in_ram(const struct hvt_iomem *io, uint64_t phys)
{
	for (int k = hvt_iomem_find(io, phys); k >= 0; k = io->entries[k].parent)
		if (!strcmp(io->entries[k].name, "System RAM"))
			return true;
	return false;
}

static void test_our_pages(void **state)
{
	struct hvt_pagemap pm;
	struct hvt_pagemap_run *runs;
	struct hvt_iomem io;
	struct hvt_err e;
	size_t n, pages = 64, psz = (size_t)sysconf(_SC_PAGESIZE);

	(void)state;
	if (geteuid() != 0)
		skip(); /* PFNs read as 0 without CAP_SYS_ADMIN */
	assert_int_equal(hvt_pagemap_open(&pm, NULL, &e), 0);
	char *p = mmap(NULL, pages * psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);

	/* Untouched: not present, and the message says what to do. */
	uint64_t phys;
	assert_int_equal(hvt_pagemap_phys(&pm, p, &phys, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "touch or mlock"));
	assert_int_equal(hvt_pagemap_runs(&pm, p, pages * psz, &runs, &n, &e), -ENOENT);

	memset(p, 0x5a, pages * psz);
	assert_int_equal(hvt_pagemap_phys(&pm, p + 123, &phys, &e), 0);
	assert_int_equal(phys % psz, 123);
	assert_int_equal(hvt_pagemap_runs(&pm, p, pages * psz, &runs, &n, &e), 0);
	assert_true(n >= 1 && n <= pages);
	assert_int_equal(hvt_iomem_read(NULL, &io, &e), 0);
	size_t covered = 0;
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(runs[i].va, (uintptr_t)p + covered); /* runs tile the range in order */
		assert_int_equal(runs[i].phys % psz, 0);
		assert_true(in_ram(&io, runs[i].phys));
		assert_true(in_ram(&io, runs[i].phys + runs[i].size - 1));
		/* each run is contiguous: its last page is where the single lookup says */
		uint64_t last;
		assert_int_equal(hvt_pagemap_phys(&pm, (char *)runs[i].va + runs[i].size - psz, &last, &e),
				 0);
		assert_int_equal(last, runs[i].phys + runs[i].size - psz);
		if (i)
			assert_true(runs[i - 1].phys + runs[i - 1].size != runs[i].phys);
		covered += runs[i].size;
	}
	assert_int_equal(covered, pages * psz);
	free(runs);
	hvt_iomem_free(&io);
	munmap(p, pages * psz);
	hvt_pagemap_close(&pm);
}

/* A hugetlb page is one physically contiguous, aligned run (skipped when the host has no free ones). */
static void test_hugetlb_page(void **state)
{
	struct hvt_pagemap pm;
	struct hvt_pagemap_run *runs;
	struct hvt_err e;
	size_t n, huge = 2u << 20;

	(void)state;
	char *p = mmap(NULL, huge, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);
	if (p == MAP_FAILED || geteuid() != 0) {
		print_message("no free 2 MiB hugetlb page on this host (nr_hugepages is 0): skipped\n");
		skip();
	}
	memset(p, 1, huge);
	assert_int_equal(hvt_pagemap_open(&pm, NULL, &e), 0);
	assert_int_equal(hvt_pagemap_runs(&pm, p, huge, &runs, &n, &e), 0);
	assert_int_equal(n, 1);
	assert_int_equal(runs[0].size, huge);
	assert_int_equal(runs[0].phys % huge, 0);
	free(runs);
	hvt_pagemap_close(&pm);
	munmap(p, huge);
}

static void test_errors(void **state)
{
	struct hvt_pagemap pm;
	struct hvt_pagemap_run *runs;
	struct hvt_err e;
	size_t n;

	(void)state;
	assert_int_equal(hvt_pagemap_open(&pm, "/proc/self/no-pagemap", &e), -ENOENT);
	assert_non_null(strstr(e.msg, "no-pagemap"));
	assert_int_equal(hvt_pagemap_open(&pm, NULL, &e), 0);
	assert_int_equal(hvt_pagemap_runs(&pm, (void *)0x1001, 4096, &runs, &n, &e), -EINVAL);
	hvt_pagemap_close(&pm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode),
	    cmocka_unit_test(test_our_pages),
	    cmocka_unit_test(test_hugetlb_page),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
