// SPDX-License-Identifier: MIT
/* The KVM virtual machine: /dev/kvm, guest RAM slots and the vCPU. */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/layout.h"
#include "dirtyring.h"
#include "vm.h"

int vm_create(struct vm *vm, struct hvt_err *err)
{
	int v;

	memset(vm, 0, sizeof(*vm));
	vm->vm_fd = vm->vcpu_fd = -1;
	pthread_mutex_init(&vm->slots_lock, NULL);
	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0)
		return hvt_err_set(err, -errno, "opening /dev/kvm: %s", strerror(errno));
	v = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);
	if (v != KVM_API_VERSION)
		return hvt_err_set(err, -ENOTSUP, "/dev/kvm speaks API version %d, not %d", v,
				   KVM_API_VERSION);
	/* Without manual protect a harvest could not re-arm exactly the pages it reports. */
	if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2) <= 0)
		return hvt_err_set(err, -ENOTSUP, "this KVM lacks KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2");
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0)
		return hvt_err_set(err, -errno, "KVM_CREATE_VM: %s", strerror(errno));
	vm->generation = 1;
	return 0;
}

void vm_destroy(struct vm *vm)
{
	dirtyring_destroy(vm);
	if (vm->run)
		munmap(vm->run, vm->run_size);
	if (vm->vcpu_fd >= 0)
		close(vm->vcpu_fd);
	if (vm->vm_fd >= 0)
		close(vm->vm_fd);
	if (vm->kvm_fd >= 0)
		close(vm->kvm_fd);
	for (uint32_t i = 0; i < vm->nslots; i++)
		munmap(vm->slots[i].host, vm->slots[i].size);
	pthread_mutex_destroy(&vm->slots_lock);
	memset(vm, 0, sizeof(*vm));
	vm->kvm_fd = vm->vm_fd = vm->vcpu_fd = -1;
}

static int set_region(struct vm *vm, const struct vm_slot *s, uint32_t flags)
{
	struct kvm_userspace_memory_region r = {
	    .slot = s->id,
	    .flags = flags,
	    .guest_phys_addr = s->gpa,
	    .memory_size = s->size,
	    .userspace_addr = (uint64_t)(uintptr_t)s->host,
	};

	return ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &r) < 0 ? -errno : 0;
}

int vm_add_slot(struct vm *vm, uint64_t gpa, uint64_t size, const char *name, struct hvt_err *err)
{
	struct vm_slot *s;
	int rc;

	if (vm->nslots == VM_MAX_SLOTS)
		return hvt_err_set(err, -ENOSPC, "at most %d RAM slots", VM_MAX_SLOTS);
	s = &vm->slots[vm->nslots];
	memset(s, 0, sizeof(*s));
	s->id = vm->nslots;
	s->gpa = gpa;
	s->size = size;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->host =
	    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (s->host == MAP_FAILED)
		return hvt_err_set(err, -errno, "mapping %llu bytes for RAM slot %s: %s",
				   (unsigned long long)size, name, strerror(errno));
	/* 4 KiB host pages keep KVM's mappings 4 KiB too, so turning dirty logging off never zaps (and later
	 * re-faults) pages, which would make a guest read look like a write to the next tracer. */
	madvise(s->host, size, MADV_NOHUGEPAGE);
	/* A fork (e.g. of a test harness) would make this private memory copy-on-write, and the guest's next
	 * write would move the page under KVM's mapping (found in the nested lab). */
	madvise(s->host, size, MADV_DONTFORK);
	rc = set_region(vm, s, 0);
	if (rc) {
		munmap(s->host, size);
		return hvt_err_set(err, rc, "KVM_SET_USER_MEMORY_REGION slot %u (gpa 0x%llx, %llu bytes): %s",
				   s->id, (unsigned long long)gpa, (unsigned long long)size, strerror(-rc));
	}
	vm->nslots++;
	return 0;
}

int vm_set_slot_flags(struct vm *vm, uint32_t index, uint32_t flags, struct hvt_err *err)
{
	struct vm_slot *s = &vm->slots[index];
	int rc = set_region(vm, s, flags);

	if (rc)
		return hvt_err_set(err, rc, "setting flags 0x%x on slot %u: %s", flags, s->id, strerror(-rc));
	s->flags = flags;
	return 0;
}

void *vm_gpa_to_host(struct vm *vm, uint64_t gpa, uint64_t len)
{
	for (uint32_t i = 0; i < vm->nslots; i++) {
		struct vm_slot *s = &vm->slots[i];

		if (gpa >= s->gpa && len <= s->size && gpa - s->gpa <= s->size - len)
			return (char *)s->host + (gpa - s->gpa);
	}
	return NULL;
}

int vm_layout(const struct vm *vm, struct hvt_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->generation = vm->generation;
	l->page_size = 4096;
	l->slots = calloc(vm->nslots, sizeof(*l->slots));
	if (!l->slots)
		return -ENOMEM;
	l->nslots = vm->nslots;
	for (uint32_t i = 0; i < vm->nslots; i++) {
		struct hvt_memslot *m = &l->slots[i];

		m->slot = vm->slots[i].id;
		m->gpa = vm->slots[i].gpa;
		m->size = vm->slots[i].size;
		snprintf(m->backing, sizeof(m->backing), "anon");
		snprintf(m->name, sizeof(m->name), "%s", vm->slots[i].name);
	}
	return 0;
}

/* The host's supported CPUID, as is: the payload needs long mode and nothing exotic. */
static int set_cpuid(struct vm *vm, struct hvt_err *err)
{
	struct kvm_cpuid2 *c = NULL;
	int n = 64, rc;

	for (;;) {
		free(c);
		c = calloc(1, sizeof(*c) + (size_t)n * sizeof(c->entries[0]));
		if (!c)
			return hvt_err_set(err, -ENOMEM, "out of memory");
		c->nent = (uint32_t)n;
		if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0)
			break;
		if (errno != E2BIG || n >= 4096) {
			rc = -errno;
			free(c);
			return hvt_err_set(err, rc, "KVM_GET_SUPPORTED_CPUID: %s", strerror(-rc));
		}
		n *= 2;
	}
	rc = ioctl(vm->vcpu_fd, KVM_SET_CPUID2, c) < 0 ? -errno : 0;
	free(c);
	if (rc)
		return hvt_err_set(err, rc, "KVM_SET_CPUID2: %s", strerror(-rc));
	return 0;
}

int vm_create_vcpu(struct vm *vm, struct hvt_err *err)
{
	int size;

	vm->vcpu_fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, 0);
	if (vm->vcpu_fd < 0)
		return hvt_err_set(err, -errno, "KVM_CREATE_VCPU: %s", strerror(errno));
	size = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (size < (int)sizeof(struct kvm_run))
		return hvt_err_set(err, -EINVAL, "KVM_GET_VCPU_MMAP_SIZE returned %d", size);
	vm->run_size = (size_t)size;
	vm->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vm->vcpu_fd, 0);
	if (vm->run == MAP_FAILED) {
		vm->run = NULL;
		return hvt_err_set(err, -errno, "mapping kvm_run: %s", strerror(errno));
	}
	return set_cpuid(vm, err);
}
