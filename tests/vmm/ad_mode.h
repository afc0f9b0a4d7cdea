/* SPDX-License-Identifier: MIT */
/* Mode "ad" on the VMM side: whether this KVM has our KVM_AD_HARVEST patch, and the A/D fd for a tracer. */
#ifndef HVMTRACE_VMM_AD_MODE_H
#define HVMTRACE_VMM_AD_MODE_H

#include <stdbool.h>

struct vm;
struct hvt_err;

/* KVM_CHECK_EXTENSION(KVM_CAP_AD_HARVEST) on the VM fd. */
bool ad_mode_available(const struct vm *vm);

/* KVM_CREATE_AD_FD: a new fd (close-on-exec) whose only operation is KVM_AD_HARVEST, or -errno. */
int ad_mode_create_fd(struct vm *vm, struct hvt_err *err);

#endif
