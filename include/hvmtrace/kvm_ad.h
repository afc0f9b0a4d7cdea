/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
#ifndef _UAPI_LINUX_KVM_AD_H
#define _UAPI_LINUX_KVM_AD_H

/*
 * Harvesting of the accessed and dirty bits of a VM's leaf SPTEs (EPT, NPT or
 * shadow page tables), so that a process other than the VMM can learn, per
 * interval, which guest pages were accessed and which were written.
 *
 * The numbers below are outside upstream's ranges (capabilities end far below
 * 0x10000; KVMIO 0xf0/0xf1 are unused), so this out-of-tree interface cannot
 * collide with an upstream one.
 */

#include <linux/types.h>
#include <linux/ioctl.h>
#include <linux/kvm.h>

#define KVM_CAP_AD_HARVEST	0x10000

/* Report the bits but leave them set. */
#define KVM_AD_HARVEST_NOCLEAR	(1U << 0)
/* Skip the remote TLB flush that follows clearing (testing, batching). */
#define KVM_AD_HARVEST_NOFLUSH	(1U << 1)
/* Only fill slot_base_gfn and slot_npages; touch no SPTE. */
#define KVM_AD_HARVEST_QUERY	(1U << 2)
/*
 * Skip the 2 MiB and 1 GiB regions that the guest has not used since the
 * last pruned harvest of them through this fd (TDP MMU with A/D bits).  Only on the fd
 * from KVM_CREATE_AD_FD, which keeps what the next walk must revisit, and
 * not with NOFLUSH.  On return the flag is cleared if the walk was full
 * (shadow MMU, or no A/D bits): then nothing was skipped.
 */
#define KVM_AD_HARVEST_PRUNE	(1U << 3)
/*
 * The bitmaps are zero on entry: write only the words of the 2 MiB chunks
 * (8 words) in which a bit was found, and leave the others as they are, so
 * that the harvest costs what it found, not the range.
 */
#define KVM_AD_HARVEST_SPARSE	(1U << 4)
#define KVM_AD_HARVEST_VALID_FLAGS	(KVM_AD_HARVEST_NOCLEAR | \
					 KVM_AD_HARVEST_NOFLUSH | \
					 KVM_AD_HARVEST_QUERY | \
					 KVM_AD_HARVEST_PRUNE | \
					 KVM_AD_HARVEST_SPARSE)

/*
 * Bit i of each bitmap (64-bit little-endian words) is page first_page + i
 * of the slot.  A huge SPTE sets the bit of every 4 KiB page it maps.
 * first_page is a multiple of 64; num_pages is too unless the range ends at
 * the end of the slot.  A bitmap pointer may be 0 to skip that bitmap.
 */
struct kvm_ad_harvest {
	__u32 slot;		/* as_id << 16 | slot id, as in kvm_dirty_log */
	__u32 flags;		/* KVM_AD_HARVEST_* */
	__u64 first_page;
	__u64 num_pages;
	__u64 accessed_bitmap;	/* user pointer or 0 */
	__u64 dirty_bitmap;	/* user pointer or 0 */
	__u64 nr_accessed;	/* out: leaf SPTEs found accessed */
	__u64 nr_dirty;		/* out: leaf SPTEs found dirty */
	__u64 slot_base_gfn;	/* out */
	__u64 slot_npages;	/* out */
	__u64 nr_pruned;	/* out: 2 MiB regions skipped by PRUNE */
	__u64 nr_pruned_1g;	/* out: 1 GiB regions skipped by PRUNE */
};

/* On the VM fd (VMM only) and on the fd from KVM_CREATE_AD_FD (any process). */
#define KVM_AD_HARVEST		_IOWR(KVMIO, 0xf0, struct kvm_ad_harvest)
/* VM ioctl: returns a new fd whose only operation is KVM_AD_HARVEST. */
#define KVM_CREATE_AD_FD	_IO(KVMIO, 0xf1)

#endif /* _UAPI_LINUX_KVM_AD_H */
