// SPDX-License-Identifier: MIT
/* Whether the running libvirt daemon has loaded hvmtrace's hooks (hooks_loaded.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hooks_loaded.h"
#include "hvmtrace/error.h"
#include "hvmtrace/util.h"

#define NOT_LOADED "libvirtd has not loaded the hvmtrace hook: restart libvirtd (or virtqemud)"

static void qemu_hook_path(const char *hooks_dir, char *buf, size_t len)
{
	snprintf(buf, len, "%s/qemu.d/hvmtrace", hooks_dir);
}

int hvt_lv_hooks_record(const char *hooks_dir, const char *libvirt_run, const char *op, pid_t daemon,
			struct hvt_err *e)
{
	char path[4200], tmp[4300], hook[4200];
	unsigned long long start;
	FILE *f;

	snprintf(path, sizeof(path), "%s/" HVT_LV_HOOKS_RECORD, libvirt_run);
	if (!strcmp(op, "shutdown")) {
		unlink(path);
		return 0;
	}
	if (strcmp(op, "start") && strcmp(op, "reload"))
		return 0;
	if (hvt_process_start_time(daemon, &start))
		return hvt_err_set(e, -ESRCH, "the libvirt daemon (pid %d) is gone", (int)daemon);
	qemu_hook_path(hooks_dir, hook, sizeof(hook));
	/* libvirt has just looked for the hooks: the qemu hook runs from now on if it is there now */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(f = fopen(tmp, "w")))
		return hvt_err_set(e, -errno, "%s: %s", tmp, strerror(errno));
	fprintf(f, "daemon %d %llu\nqemu-hook %s\n", (int)daemon, start, access(hook, X_OK) ? "no" : "yes");
	if (fclose(f) || rename(tmp, path))
		return hvt_err_set(e, -errno, "%s: %s", path, strerror(errno));
	return 0;
}

int hvt_lv_hooks_check(const char *hooks_dir, const char *libvirt_run, pid_t *daemon, struct hvt_err *e)
{
	char path[4200], hook[4200], buf[256], loaded[8] = "";
	unsigned long long start = 0, now;
	int pid = 0;

	qemu_hook_path(hooks_dir, hook, sizeof(hook));
	if (access(hook, X_OK))
		return hvt_err_set(e, -ENOENT,
				   "the hvmtrace hook %s is not installed (%s): make install-libvirt", hook,
				   strerror(errno));
	snprintf(path, sizeof(path), "%s/" HVT_LV_HOOKS_RECORD, libvirt_run);
	if (hvt_read_text(path, buf, sizeof(buf), e))
		return hvt_err_set(e, -ESRCH,
				   NOT_LOADED
				   "; no libvirt daemon has run hvmtrace's daemon hook since it was "
				   "installed (no %s)",
				   path);
	if (sscanf(buf, "daemon %d %llu qemu-hook %7s", &pid, &start, loaded) != 3)
		return hvt_err_set(e, -ESRCH, NOT_LOADED "; %s is not what the daemon hook writes", path);
	if (pid <= 0 || hvt_process_start_time(pid, &now) || now != start)
		return hvt_err_set(e, -ESRCH,
				   NOT_LOADED
				   "; the daemon that loaded the hooks (pid %d) has ended, and the one "
				   "that runs now (if any) has not run hvmtrace's daemon hook",
				   pid);
	if (strcmp(loaded, "yes"))
		return hvt_err_set(
		    e, -ESRCH, NOT_LOADED "; the daemon (pid %d) looked for hooks before %s was installed",
		    pid, hook);
	if (daemon)
		*daemon = pid;
	return 0;
}
