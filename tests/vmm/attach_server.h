/* SPDX-License-Identifier: MIT */
/*
 * The VMM side of the attach protocol (include/hvmtrace/attach.h), modes "dirty-log" and (when KVM has
 * KVM_CAP_AD_HARVEST) "ad": a listening socket, an accept thread, and per tracer a session thread that is
 * also the dirty-log harvest thread (pinned to the CPU the tracer asks for). One tracer at a time.
 */
#ifndef HVMTRACE_VMM_ATTACH_SERVER_H
#define HVMTRACE_VMM_ATTACH_SERVER_H

#include <signal.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>

struct vm;
struct hvt_err;
struct attach_server;

struct attach_server_config {
	const char *path;
	const char *vm_name;
	int default_cpu; /* --harvest-cpu, -1 if none */
	pid_t vcpu_tid;
	bool verbose;
	uint64_t ring_list_max; /* dirty-ring: most pages handed over as a list; 0: bitmap_bytes / 8 */
};

int attach_server_start(struct attach_server **out, struct vm *vm, const struct attach_server_config *cfg,
			struct hvt_err *err);

/* Waits until a tracer is attached (0) or *stop is set (-EINTR). */
int attach_server_wait_attached(struct attach_server *s, volatile sig_atomic_t *stop);

/* The guest stopped: an attached tracer gets bye, then (dirty-log) its next harvest request is answered
 * as the final interval; in mode ad the VM waits briefly for the tracer's own last harvest. Then the server
 * closes and removes its socket. Safe with s == NULL. */
void attach_server_finish(struct attach_server *s, const char *reason);

#endif
