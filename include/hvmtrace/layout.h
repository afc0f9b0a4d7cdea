/* SPDX-License-Identifier: MIT */
/*
 * The guest memory layout (docs/architecture.md §3.1): a VM's RAM as a list of memslots. Page sets are kept
 * per slot and reported as guest-physical page numbers (GFNs). A devmem-backed slot lists the host-physical
 * extents it is built from, which is how bandwidth of memory channels is tied to the VM.
 *
 * JSON form (used by the attach protocol and the trace metadata; see docs/attach-protocol.md):
 *   {"generation": 3, "page_size": 4096,
 *    "slots": [{"slot": 0, "gpa": 0, "size": 3221225472, "backing": "anon", "name": "pc.ram",
 *               "extents": [{"gpa": 0, "hpa": 34359738368, "size": 1073741824, "channel": "s0.mc1.ch0"}]}]}
 * "name" and "extents" are optional; "extents" is present only for devmem backing.
 */
#ifndef HVMTRACE_LAYOUT_H
#define HVMTRACE_LAYOUT_H

#include <stdint.h>

struct json_object;
struct hvt_err;

#define HVT_BACKING_MAX      16
#define HVT_NAME_MAX         64
#define HVT_CHANNEL_MAX      32
#define HVT_LAYOUT_MAX_SLOTS 4096
#define HVT_SLOT_MAX_EXTENTS 1024

struct hvt_extent {
	uint64_t gpa;                  /* guest-physical start, page aligned, inside its slot */
	uint64_t hpa;                  /* host-physical start of the reserved range */
	uint64_t size;                 /* bytes, page multiple */
	char channel[HVT_CHANNEL_MAX]; /* chanmap id ("s0.mc1.ch0"), or "" if unknown */
};

struct hvt_memslot {
	uint32_t slot; /* unique per layout; in mode ad the KVM slot id KVM_AD_HARVEST takes (address
			* space << 16 | id, as in struct kvm_dirty_log); in dirty-log mode the VMM's own
			* numbering (QEMU: its index of the RAM range; there is no KVM slot under TCG) */
	uint64_t gpa;  /* guest-physical start, page aligned */
	uint64_t size; /* bytes, page multiple, > 0 */
	char backing[HVT_BACKING_MAX]; /* "anon", "memfd", "file", "hugetlb", "devmem" */
	char name[HVT_NAME_MAX];       /* the VMM's name for the RAM ("pc.ram", "low"), may be "" */
	uint32_t nextents;
	struct hvt_extent *extents;
};

struct hvt_layout {
	uint64_t generation; /* increases by at least one whenever the slots change */
	uint32_t page_size;  /* 4096 on x86 */
	uint32_t nslots;
	struct hvt_memslot *slots; /* in the VMM's order, which is also the order of the shared bitmaps */
};

void hvt_layout_fini(struct hvt_layout *l);
int hvt_layout_copy(struct hvt_layout *dst, const struct hvt_layout *src); /* dst uninitialised */

/*
 * Checks what every consumer relies on: page size a power of two >= 4096; slots non-empty, page aligned
 * and not overlapping in guest-physical space; slot ids unique; extents inside their slot, page aligned,
 * not overlapping. The message names the offending slot or extent.
 */
int hvt_layout_validate(const struct hvt_layout *l, struct hvt_err *err);

/* JSON conversion; from_json validates, and names the field at fault. */
struct json_object *hvt_layout_to_json(const struct hvt_layout *l);
int hvt_layout_from_json(struct hvt_layout *l, struct json_object *o, struct hvt_err *err);

static inline uint64_t hvt_memslot_npages(const struct hvt_layout *l, const struct hvt_memslot *s)
{
	return s->size / l->page_size;
}

static inline uint64_t hvt_memslot_first_gfn(const struct hvt_layout *l, const struct hvt_memslot *s)
{
	return s->gpa / l->page_size;
}

uint64_t hvt_layout_total_pages(const struct hvt_layout *l);

/* Index of the slot holding gfn, or -1; *page (if not NULL) gets the page's index inside that slot. */
int hvt_layout_find_gfn(const struct hvt_layout *l, uint64_t gfn, uint64_t *page);

/*
 * Shared bitmap geometry (attach protocol, dirty-log mode): one bitmap per slot in layout order, each
 * hvt_pageset_nwords(npages) 64-bit words, packed with no padding. Offsets and the total are in bytes.
 */
uint64_t hvt_layout_bitmap_offset(const struct hvt_layout *l, uint32_t index);
uint64_t hvt_layout_bitmap_bytes(const struct hvt_layout *l);

#endif
