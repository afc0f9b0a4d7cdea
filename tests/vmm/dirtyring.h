/* SPDX-License-Identifier: MIT */
/*
 * KVM's dirty ring (KVM_CAP_DIRTY_LOG_RING): each vCPU pushes the GFNs it dirties into a ring we map from
 * its fd; we reap them into the interval's page list and KVM_RESET_DIRTY_RINGS re-arms them. Reaped by the
 * harvest thread when the tracer asks and by the vCPU thread when KVM exits with the ring full.
 */
#ifndef HVMTRACE_VMM_DIRTYRING_H
#define HVMTRACE_VMM_DIRTYRING_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct vm;
struct hvt_layout;
struct hvt_err;

struct dirtyring_result {
	uint64_t t_end_ns;    /* before the vCPU was kicked to flush what it logged */
	uint64_t t_done_ns;   /* after KVM_RESET_DIRTY_RINGS and the copy into the memfd */
	uint64_t dirty_pages; /* list entries (listed) or bits set */
	bool listed;
	uint64_t ring_full; /* ring-full exits since the last harvest */
};

/* Enables the ring on vm (before its vCPU exists): entries a power of two, 256 .. 65536. */
int dirtyring_enable(struct vm *vm, uint32_t entries, struct hvt_err *err);
/* Maps the vCPU's ring (after the vCPU exists); vcpu_thread is the thread that runs KVM_RUN. */
int dirtyring_map(struct vm *vm, pthread_t vcpu_thread, struct hvt_err *err);
void dirtyring_destroy(struct vm *vm);

/* Dirty logging on for every slot; the interval's list holds at most list_max pages (then bitmaps). */
int dirtyring_arm(struct vm *vm, const struct hvt_layout *l, uint64_t list_max, uint64_t *t_armed_ns,
		  struct hvt_err *err);
int dirtyring_disarm(struct vm *vm, struct hvt_err *err);

/* The interval's pages into area (bitmap_bytes long, laid out as the layout's bitmaps when not listed). */
int dirtyring_harvest(struct vm *vm, void *area, uint64_t area_bytes, struct dirtyring_result *r,
		      struct hvt_err *err);

/* vCPU thread: after every KVM_RUN return (the kick's acknowledgement), and on KVM_EXIT_DIRTY_RING_FULL. */
void dirtyring_vcpu_exited(struct vm *vm);
int dirtyring_ring_full(struct vm *vm, struct hvt_err *err);
/* vCPU thread: it runs the guest no more (a harvest need not kick it). */
void dirtyring_vcpu_gone(struct vm *vm);
uint64_t dirtyring_full_exits(const struct vm *vm); /* in the VM's life */

#endif
