// SPDX-License-Identifier: MIT
/*
 * Dirty logging with KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2 (without INITIALLY_SET: arming write-protects the
 * slot at once, so the first interval starts clean). GET copies the log without clearing it; CLEAR re-arms
 * only the pages we report, so a write that lands between the two stays in the log for the next interval.
 */
#include <errno.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>

#include "dirtylog.h"
#include "hvmtrace/error.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/util.h"
#include "vm.h"

int dirtylog_arm(struct vm *vm, uint64_t *t_armed_ns, struct hvt_err *err)
{
	struct kvm_enable_cap cap = {.cap = KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2,
				     .args = {KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE}};
	int rc = 0;

	if (ioctl(vm->vm_fd, KVM_ENABLE_CAP, &cap) < 0)
		return hvt_err_set(err, -errno, "enabling KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2: %s",
				   strerror(errno));
	pthread_mutex_lock(&vm->slots_lock);
	for (uint32_t i = 0; i < vm->nslots && !rc; i++)
		rc = vm_set_slot_flags(vm, i, KVM_MEM_LOG_DIRTY_PAGES, err);
	pthread_mutex_unlock(&vm->slots_lock);
	*t_armed_ns = hvt_now_ns();
	if (rc)
		dirtylog_disarm(vm, NULL);
	return rc;
}

int dirtylog_disarm(struct vm *vm, struct hvt_err *err)
{
	int rc = 0;

	pthread_mutex_lock(&vm->slots_lock);
	for (uint32_t i = 0; i < vm->nslots; i++)
		if (vm->slots[i].flags & KVM_MEM_LOG_DIRTY_PAGES) {
			int r = vm_set_slot_flags(vm, i, 0, err);

			rc = rc ? rc : r;
		}
	pthread_mutex_unlock(&vm->slots_lock);
	return rc;
}

static uint64_t popcount_words(const uint64_t *w, uint64_t n)
{
	uint64_t c = 0;

	for (uint64_t i = 0; i < n; i++)
		c += (uint64_t)__builtin_popcountll(w[i]);
	return c;
}

int dirtylog_harvest(struct vm *vm, const struct hvt_layout *l, void *bitmaps, struct dirtylog_result *r,
		     struct hvt_err *err)
{
	int rc = 0;

	memset(r, 0, sizeof(*r));
	pthread_mutex_lock(&vm->slots_lock);
	r->t_end_ns = hvt_now_ns();
	for (uint32_t i = 0; i < l->nslots && !rc; i++) {
		struct kvm_dirty_log d = {.slot = l->slots[i].slot};

		d.dirty_bitmap = (char *)bitmaps + hvt_layout_bitmap_offset(l, i);
		if (ioctl(vm->vm_fd, KVM_GET_DIRTY_LOG, &d) < 0)
			rc = hvt_err_set(err, -errno, "KVM_GET_DIRTY_LOG slot %u: %s", l->slots[i].slot,
					 strerror(errno));
	}
	for (uint32_t i = 0; i < l->nslots && !rc; i++) {
		struct kvm_clear_dirty_log c = {
		    .slot = l->slots[i].slot,
		    .first_page = 0,
		    .num_pages = (uint32_t)hvt_memslot_npages(l, &l->slots[i]),
		};

		c.dirty_bitmap = (char *)bitmaps + hvt_layout_bitmap_offset(l, i);
		if (ioctl(vm->vm_fd, KVM_CLEAR_DIRTY_LOG, &c) < 0)
			rc = hvt_err_set(err, -errno, "KVM_CLEAR_DIRTY_LOG slot %u: %s", l->slots[i].slot,
					 strerror(errno));
	}
	r->t_done_ns = hvt_now_ns();
	pthread_mutex_unlock(&vm->slots_lock);
	for (uint32_t i = 0; i < l->nslots; i++)
		r->dirty_pages +=
		    popcount_words((const uint64_t *)((char *)bitmaps + hvt_layout_bitmap_offset(l, i)),
				   (hvt_memslot_npages(l, &l->slots[i]) + 63) / 64);
	return rc;
}
