/* SPDX-License-Identifier: MIT */
/* The KVM virtual machine: guest RAM slots, one vCPU, and the guest-physical address helpers. */
#ifndef HVMTRACE_VMM_VM_H
#define HVMTRACE_VMM_VM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct hvt_err;
struct hvt_layout;
struct dirtyring;

#define VM_MAX_SLOTS 4

struct vm_slot {
	uint32_t id;
	uint64_t gpa, size;
	void *host;     /* anonymous MAP_NORESERVE memory of size bytes */
	uint32_t flags; /* KVM_MEM_* now in force */
	char name[16];
};

struct vm {
	int kvm_fd, vm_fd, vcpu_fd;
	struct kvm_run *run;
	size_t run_size;
	/* Slots change from the vCPU thread (hot-plug) and their flags from the harvest thread. */
	pthread_mutex_t slots_lock;
	uint32_t nslots;
	struct vm_slot slots[VM_MAX_SLOTS];
	uint64_t generation;    /* of the layout: grows whenever a slot is added */
	struct dirtyring *ring; /* KVM's dirty ring, when enabled (dirtyring.h) */
};

int vm_create(struct vm *vm, struct hvt_err *err);
void vm_destroy(struct vm *vm);

/* Adds a RAM slot (id = its index) backed by fresh anonymous memory. */
int vm_add_slot(struct vm *vm, uint64_t gpa, uint64_t size, const char *name, struct hvt_err *err);

/* Re-registers slot index with new KVM_MEM_* flags (dirty logging on or off); caller holds slots_lock. */
int vm_set_slot_flags(struct vm *vm, uint32_t index, uint32_t flags, struct hvt_err *err);

/* The host address of [gpa, gpa + len), or NULL if that range is not inside one slot. */
void *vm_gpa_to_host(struct vm *vm, uint64_t gpa, uint64_t len);

/* The slots as an hvt_layout (allocated; hvt_layout_fini it); caller holds slots_lock. */
int vm_layout(const struct vm *vm, struct hvt_layout *l);

/* Creates the vCPU with the host's supported CPUID and maps its kvm_run. */
int vm_create_vcpu(struct vm *vm, struct hvt_err *err);

#endif
