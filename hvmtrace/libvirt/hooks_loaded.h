// SPDX-License-Identifier: MIT
/*
 * Whether the running libvirt daemon has loaded hvmtrace's hooks (docs/libvirt.md §4). libvirt looks for
 * hook scripts only when its daemon starts or reloads (SIGHUP), and then runs the daemon hook: hvmtrace's
 * daemon hook records there which daemon (pid and start time) looked, and whether the qemu hook was
 * installed when it did. A hook installed later is not run until the daemon restarts: a traced domain
 * would start without its run directory (QEMU cannot make its socket) or, with one left behind, untraced.
 */
#ifndef HVT_LIBVIRT_HOOKS_LOADED_H
#define HVT_LIBVIRT_HOOKS_LOADED_H

#include <sys/types.h>

struct hvt_err;

#define HVT_LV_HOOKS_DIR    "/etc/libvirt/hooks" /* libvirt's, for the system daemon */
#define HVT_LV_LIBVIRT_RUN  "/run/libvirt"       /* the system daemon's runtime directory */
#define HVT_LV_HOOKS_RECORD "hvmtrace-hooks"     /* the record's name in it */

/* The daemon hook: op "start" or "reload" records that daemon (the hook's parent) has loaded the hooks as
 * hooks_dir holds them now; "shutdown" removes the record. Other ops do nothing. */
int hvt_lv_hooks_record(const char *hooks_dir, const char *libvirt_run, const char *op, pid_t daemon,
			struct hvt_err *e);

/* 0 when a running daemon has loaded the qemu hook (its pid in *daemon); else one line in e (-ENOENT: the
 * hook is not installed; -ESRCH: no running daemon has loaded it) that says what to do. */
int hvt_lv_hooks_check(const char *hooks_dir, const char *libvirt_run, pid_t *daemon, struct hvt_err *e);

#endif
