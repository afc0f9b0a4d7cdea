// SPDX-License-Identifier: MIT
/*
 * dirty-ring mode: the VMM runs its vCPUs on KVM's dirty rings and hands over each interval's written pages
 * as a list in the shared memfd (attach.h, mode "dirty-ring"), so what the VMM does per interval follows the
 * pages written, not the guest's size. An interval that wrote more pages than the list holds comes as
 * bitmaps, read as dirty-log reads them. All else is dirty-log's (harvest_memfd.h).
 */
#include <endian.h>
#include <stdio.h>
#include <string.h>

#include "harvest.h"
#include "harvest_memfd.h"
#include "hvmtrace/attach.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/pageset.h"
#include "hvmtrace/trace.h"
#include "session.h"

#define PAGE_BITS 48 /* an entry is (slot index << 48) | page of that slot */

static void load_list(struct memfd_copy *c)
{
	const struct hvt_layout *l = &c->s->layout;
	uint64_t n = c->h->dirty_pages;

	if (!c->h->listed) {
		memfd_load_bitmaps(c);
		return;
	}
	if (n > hvt_layout_bitmap_bytes(l) / 8) {
		snprintf(c->bad, sizeof(c->bad), "a list of %llu pages, longer than the memfd holds (%llu)",
			 (unsigned long long)n, (unsigned long long)(hvt_layout_bitmap_bytes(l) / 8));
		return;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t e;

		memcpy(&e, c->area + i * 8, 8);
		e = le64toh(e);
		uint64_t slot = e >> PAGE_BITS, page = e & ((1ull << PAGE_BITS) - 1);

		if (slot >= l->nslots || page >= hvt_memslot_npages(l, &l->slots[slot])) {
			snprintf(c->bad, sizeof(c->bad),
				 "list entry %llu names page %llu of slot %llu, outside the layout",
				 (unsigned long long)i, (unsigned long long)page, (unsigned long long)slot);
			return;
		}
		hvt_pageset_set(&c->iv->written[slot], page);
	}
}

static int dirty_ring_attach(struct session *s, struct hvt_msg *m, struct hvt_err *err)
{
	return memfd_attach(s, m, load_list, err);
}

const struct harvester harvester_dirty_ring = {
    .mode = HVT_MODE_DIRTY_RING,
    .sets = HVT_IV_WRITTEN,
    .attach = dirty_ring_attach,
    .layout = memfd_layout,
    .harvest = memfd_harvest,
    .after_end = memfd_after_end,
    .close = memfd_close,
    .describe = memfd_describe,
};
