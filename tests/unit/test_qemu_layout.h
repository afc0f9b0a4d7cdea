/* SPDX-License-Identifier: MIT */
/*
 * The layout of a QEMU-like 4 GiB guest, as the tests of the layout and of the attach protocol start from:
 * 3 GiB "low" at GPA 0, below the PCI hole, and 1 GiB "high" at 4 GiB, both anonymous memory. Include after
 * cmocka.h and hvmtrace/layout.h; a test changes what it is about.
 */
#ifndef HVMTRACE_TEST_QEMU_LAYOUT_H
#define HVMTRACE_TEST_QEMU_LAYOUT_H

#include <stdlib.h>
#include <string.h>

static void qemu_layout(struct hvt_layout *l, uint64_t generation)
{
	const uint64_t gib = 1ull << 30;

	memset(l, 0, sizeof(*l));
	l->generation = generation;
	l->page_size = 4096;
	l->nslots = 2;
	l->slots = calloc(2, sizeof(*l->slots));
	assert_non_null(l->slots);
	l->slots[0] =
	    (struct hvt_memslot){.slot = 0, .gpa = 0, .size = 3 * gib, .backing = "anon", .name = "low"};
	l->slots[1] =
	    (struct hvt_memslot){.slot = 1, .gpa = 4 * gib, .size = gib, .backing = "anon", .name = "high"};
}

#endif
