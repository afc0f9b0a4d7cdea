// SPDX-License-Identifier: MIT
/*
 * Mode "ad": the VMM only creates the A/D fd and hands it over; the tracer harvests through it. Nothing is
 * armed here: KVM sets the A/D bits of its SPTEs anyway, and dirty logging stays off (its re-arm would
 * clear D bits behind the tracer's back).
 */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "ad_mode.h"
#include "hvmtrace/error.h"
#include "hvmtrace/kvm_ad.h"
#include "vm.h"

bool ad_mode_available(const struct vm *vm)
{
	return ioctl(vm->vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_AD_HARVEST) > 0;
}

int ad_mode_create_fd(struct vm *vm, struct hvt_err *err)
{
	/* The patch makes it close-on-exec: the fd keeps the VM alive and must not leak into children. */
	int fd = ioctl(vm->vm_fd, KVM_CREATE_AD_FD, 0);

	if (fd < 0)
		return hvt_err_set(err, -errno, "KVM_CREATE_AD_FD: %s", strerror(errno));
	return fd;
}
