// SPDX-License-Identifier: MIT
/*
 * The dirty ring (Documentation/virt/kvm/api.rst, KVM_CAP_DIRTY_LOG_RING): entries {flags, slot, offset};
 * KVM sets DIRTY (with a release store under _ACQ_REL), we read it with an acquire load, set RESET with a
 * release store, and KVM_RESET_DIRTY_RINGS write-protects the reset pages again. A vCPU may buffer dirty
 * GFNs (Intel PML) until it exits, so a harvest first kicks the vCPU out of the guest and waits until it
 * has been out of it since the interval's end.
 */
#include <endian.h>
#include <errno.h>
#include <linux/kvm.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "dirtyring.h"
#include "hvmtrace/error.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/util.h"
#include "vm.h"

#define KICK_SIGNAL  SIGUSR1
#define KICK_WAIT_NS 5000000000ull /* a vCPU thread that ignores the kick this long is a bug */

struct dirtyring {
	struct kvm_dirty_gfn *gfns;
	uint32_t nentries, fetch;
	pthread_t vcpu_thread;
	uint64_t exits;    /* KVM_RUN returns (atomic) */
	bool vcpu_gone;    /* atomic */
	uint64_t full_all; /* atomic: ring-full exits in the VM's life */

	pthread_mutex_t lock; /* the rest: the interval being collected */
	bool collecting;
	struct hvt_layout layout; /* of the armed session */
	uint64_t *list, nlist, list_max;
	uint64_t *bits; /* the interval's pages as bitmaps once the list overflowed (layout's offsets) */
	uint64_t bits_bytes;
	bool overflow;
	uint64_t full;  /* ring-full exits since the last harvest */
	uint64_t stray; /* entries outside every slot (a bug: counted, reported at harvest) */
};

int dirtyring_enable(struct vm *vm, uint32_t entries, struct hvt_err *err)
{
	int acq_rel = ioctl(vm->vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_DIRTY_LOG_RING_ACQ_REL) > 0;
	struct kvm_enable_cap cap = {
	    .cap = acq_rel ? KVM_CAP_DIRTY_LOG_RING_ACQ_REL : KVM_CAP_DIRTY_LOG_RING,
	    .args = {(uint64_t)entries * sizeof(struct kvm_dirty_gfn)},
	};
	struct dirtyring *r;

	if (ioctl(vm->vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_DIRTY_LOG_RING) <= 0)
		return hvt_err_set(err, -ENOTSUP, "--dirty-ring: this KVM has no dirty ring");
	if (ioctl(vm->vm_fd, KVM_ENABLE_CAP, &cap) < 0)
		return hvt_err_set(err, -errno, "--dirty-ring %u: enabling KVM's dirty ring: %s", entries,
				   strerror(errno));
	r = calloc(1, sizeof(*r));
	if (!r)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	r->nentries = entries;
	pthread_mutex_init(&r->lock, NULL);
	vm->ring = r;
	return 0;
}

int dirtyring_map(struct vm *vm, pthread_t vcpu_thread, struct hvt_err *err)
{
	struct dirtyring *r = vm->ring;
	size_t bytes = (size_t)r->nentries * sizeof(struct kvm_dirty_gfn);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, vm->vcpu_fd,
		       (off_t)KVM_DIRTY_LOG_PAGE_OFFSET * getpagesize());

	if (p == MAP_FAILED)
		return hvt_err_set(err, -errno, "mapping the vCPU's dirty ring: %s", strerror(errno));
	r->gfns = p;
	r->vcpu_thread = vcpu_thread;
	return 0;
}

void dirtyring_destroy(struct vm *vm)
{
	struct dirtyring *r = vm->ring;

	if (!r)
		return;
	if (r->gfns)
		munmap(r->gfns, (size_t)r->nentries * sizeof(struct kvm_dirty_gfn));
	hvt_layout_fini(&r->layout);
	free(r->list);
	free(r->bits);
	pthread_mutex_destroy(&r->lock);
	free(r);
	vm->ring = NULL;
}

static void set_bit(struct dirtyring *r, uint32_t slot, uint64_t page)
{
	uint64_t w = hvt_layout_bitmap_offset(&r->layout, slot) / 8 + page / 64;

	r->bits[w] |= 1ull << (page % 64);
}

/* The list no longer fits: from now on this interval is a bitmap. -ENOMEM leaves the list as it is. */
static int to_bitmap(struct dirtyring *r)
{
	if (!r->bits) {
		r->bits = calloc(1, r->bits_bytes); /* kept: later overflows reuse it */
		if (!r->bits)
			return -ENOMEM;
	}
	for (uint64_t i = 0; i < r->nlist; i++)
		set_bit(r, (uint32_t)(r->list[i] >> 48), r->list[i] & ((1ull << 48) - 1));
	r->overflow = true;
	return 0;
}

static void add_page(struct dirtyring *r, uint32_t kvm_slot, uint64_t offset)
{
	uint32_t i;

	for (i = 0; i < r->layout.nslots; i++)
		if (r->layout.slots[i].slot == kvm_slot)
			break;
	if (i == r->layout.nslots || offset >= hvt_memslot_npages(&r->layout, &r->layout.slots[i])) {
		r->stray++;
		return;
	}
	if (!r->overflow && r->nlist < r->list_max) {
		r->list[r->nlist++] = (uint64_t)i << 48 | offset;
		return;
	}
	if (!r->overflow && to_bitmap(r)) {
		r->stray++; /* out of memory: reported as an error at the harvest, never silently lost */
		return;
	}
	set_bit(r, i, offset);
}

/* Takes every entry KVM has published and re-arms them. Caller holds r->lock. */
static int reap_locked(struct vm *vm, struct hvt_err *err)
{
	struct dirtyring *r = vm->ring;

	for (;;) {
		struct kvm_dirty_gfn *e = &r->gfns[r->fetch & (r->nentries - 1)];

		if (!(__atomic_load_n(&e->flags, __ATOMIC_ACQUIRE) & KVM_DIRTY_GFN_F_DIRTY))
			break;
		if (r->collecting)
			add_page(r, e->slot, e->offset);
		__atomic_store_n(&e->flags, KVM_DIRTY_GFN_F_RESET, __ATOMIC_RELEASE);
		r->fetch++;
	}
	if (ioctl(vm->vm_fd, KVM_RESET_DIRTY_RINGS, 0) < 0)
		return hvt_err_set(err, -errno, "KVM_RESET_DIRTY_RINGS: %s", strerror(errno));
	return 0;
}

void dirtyring_vcpu_exited(struct vm *vm)
{
	if (vm->ring)
		__atomic_add_fetch(&vm->ring->exits, 1, __ATOMIC_RELEASE);
}

void dirtyring_vcpu_gone(struct vm *vm)
{
	if (vm->ring)
		__atomic_store_n(&vm->ring->vcpu_gone, true, __ATOMIC_RELEASE);
}

uint64_t dirtyring_full_exits(const struct vm *vm)
{
	return vm->ring ? __atomic_load_n(&vm->ring->full_all, __ATOMIC_RELAXED) : 0;
}

/*
 * Runs on the vCPU thread, which a harvest kicks with KICK_SIGNAL. KVM_RESET_DIRTY_RINGS stops at a pending
 * signal (kvm_dirty_ring_reset(), virt/kvm/dirty_ring.c, in recent Linux: 6.18 here), after it has marked the
 * entries of its current batch reset but before it write-protects their pages, and the ioctl still
 * succeeds: those pages stay writable and their next writes reach no ring (seen here as one page missing
 * from two whole intervals). So the kick waits, blocked, until the reset is done.
 */
int dirtyring_ring_full(struct vm *vm, struct hvt_err *err)
{
	struct dirtyring *r = vm->ring;
	sigset_t kick, old;
	int rc;

	sigemptyset(&kick);
	sigaddset(&kick, KICK_SIGNAL);
	__atomic_add_fetch(&r->full_all, 1, __ATOMIC_RELAXED);
	pthread_sigmask(SIG_BLOCK, &kick, &old);
	pthread_mutex_lock(&r->lock);
	r->full++;
	rc = reap_locked(vm, err);
	pthread_mutex_unlock(&r->lock);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Makes the vCPU leave the guest (flushing what it buffered into the ring) and waits until it has been
 * out of it at some moment after this call began. */
static int kick_vcpu(struct dirtyring *r, struct hvt_err *err)
{
	uint64_t seen = __atomic_load_n(&r->exits, __ATOMIC_ACQUIRE);
	uint64_t give_up = hvt_now_ns() + KICK_WAIT_NS;
	struct timespec nap = {0, 20000};

	if (__atomic_load_n(&r->vcpu_gone, __ATOMIC_ACQUIRE))
		return 0;
	pthread_kill(r->vcpu_thread, KICK_SIGNAL);
	while (__atomic_load_n(&r->exits, __ATOMIC_ACQUIRE) == seen &&
	       !__atomic_load_n(&r->vcpu_gone, __ATOMIC_ACQUIRE)) {
		if (hvt_now_ns() > give_up)
			return hvt_err_set(err, -ETIMEDOUT, "the vCPU did not leave the guest within %llu s",
					   KICK_WAIT_NS / 1000000000ull);
		nanosleep(&nap, NULL);
	}
	return 0;
}

int dirtyring_arm(struct vm *vm, const struct hvt_layout *l, uint64_t list_max, uint64_t *t_armed_ns,
		  struct hvt_err *err)
{
	struct dirtyring *r = vm->ring;
	int rc = 0;

	pthread_mutex_lock(&r->lock);
	rc = reap_locked(vm, err); /* what an earlier session left */
	hvt_layout_fini(&r->layout);
	if (!rc)
		rc = hvt_layout_copy(&r->layout, l) ? hvt_err_set(err, -ENOMEM, "out of memory") : 0;
	free(r->list);
	free(r->bits);
	r->bits = NULL;
	r->bits_bytes = hvt_layout_bitmap_bytes(l);
	r->list_max = list_max;
	r->list = rc ? NULL : malloc((list_max ? list_max : 1) * sizeof(*r->list));
	if (!rc && !r->list)
		rc = hvt_err_set(err, -ENOMEM, "out of memory for a page list of %llu entries",
				 (unsigned long long)list_max);
	r->nlist = r->full = r->stray = 0;
	r->overflow = false;
	r->collecting = !rc;
	pthread_mutex_unlock(&r->lock);
	if (rc)
		return rc;
	pthread_mutex_lock(&vm->slots_lock);
	for (uint32_t i = 0; i < vm->nslots && !rc; i++)
		rc = vm_set_slot_flags(vm, i, KVM_MEM_LOG_DIRTY_PAGES, err);
	pthread_mutex_unlock(&vm->slots_lock);
	*t_armed_ns = hvt_now_ns();
	if (rc)
		dirtyring_disarm(vm, NULL);
	return rc;
}

int dirtyring_disarm(struct vm *vm, struct hvt_err *err)
{
	struct dirtyring *r = vm->ring;
	int rc = 0;

	pthread_mutex_lock(&vm->slots_lock);
	for (uint32_t i = 0; i < vm->nslots; i++)
		if (vm->slots[i].flags & KVM_MEM_LOG_DIRTY_PAGES) {
			int e = vm_set_slot_flags(vm, i, 0, err);

			rc = rc ? rc : e;
		}
	pthread_mutex_unlock(&vm->slots_lock);
	pthread_mutex_lock(&r->lock);
	r->collecting = false;
	pthread_mutex_unlock(&r->lock);
	return rc;
}

int dirtyring_harvest(struct vm *vm, void *area, uint64_t area_bytes, struct dirtyring_result *res,
		      struct hvt_err *err)
{
	struct dirtyring *r = vm->ring;
	int rc;

	memset(res, 0, sizeof(*res));
	res->t_end_ns = hvt_now_ns();
	rc = kick_vcpu(r, err);
	if (rc)
		return rc;
	pthread_mutex_lock(&r->lock);
	rc = reap_locked(vm, err);
	if (!rc && r->stray)
		rc = hvt_err_set(
		    err, -EIO,
		    "%llu dirty-ring entries this interval could not be kept (outside every slot, or out of memory)",
		    (unsigned long long)r->stray);
	if (!rc && !r->overflow && r->nlist * 8 > area_bytes)
		rc = to_bitmap(r) ? hvt_err_set(err, -ENOMEM, "out of memory") : 0;
	if (!rc && r->overflow) {
		memcpy(area, r->bits, r->bits_bytes);
		for (uint64_t w = 0; w < r->bits_bytes / 8; w++)
			res->dirty_pages += (uint64_t)__builtin_popcountll(r->bits[w]);
		memset(r->bits, 0, r->bits_bytes);
	} else if (!rc) {
		uint64_t *out = area;

		for (uint64_t i = 0; i < r->nlist; i++)
			out[i] = htole64(r->list[i]);
		res->dirty_pages = r->nlist;
		res->listed = true;
	}
	res->ring_full = r->full;
	r->nlist = r->full = r->stray = 0;
	r->overflow = false;
	pthread_mutex_unlock(&r->lock);
	res->t_done_ns = hvt_now_ns();
	return rc;
}
