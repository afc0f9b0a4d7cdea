// SPDX-License-Identifier: MIT
/*
 * The rest of the chain (docs/libvirt.md): the patched QEMU (its -object types memory-backend-devmem and
 * hvmtrace), libvirt and whether its daemon has found our hook, systemd and the cgroup version, and the
 * output directory the traces go to (the hook's own check).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libvirt/libvirt.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "doctor/doctor.h"
#include "hvmtrace/error.h"
#include "hvmtrace/util.h"
#include "libvirt/host_checks.h"

#define QEMU_TIMEOUT_MS 10000

extern char **environ;

/* Runs argv with stdout into out (at most len - 1 bytes); 0, or -errno / -ETIMEDOUT. */
static int capture(char *const argv[], char *out, size_t len)
{
	posix_spawn_file_actions_t fa;
	int p[2], status, rc = 0;
	size_t used = 0;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	rc = -posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (rc) {
		close(p[0]);
		return rc;
	}
	uint64_t until = hvt_now_ns() + QEMU_TIMEOUT_MS * 1000000ull;
	for (;;) {
		struct pollfd pf = {p[0], POLLIN, 0};
		uint64_t now = hvt_now_ns();
		ssize_t n;

		if (now >= until || poll(&pf, 1, (int)((until - now) / 1000000) + 1) <= 0) {
			kill(pid, SIGKILL);
			rc = -ETIMEDOUT;
			break;
		}
		n = read(p[0], out + used, len - 1 - used);
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used == len - 1)
			break;
	}
	out[used] = 0;
	close(p[0]);
	waitpid(pid, &status, 0);
	return rc;
}

/* qemu-system-x86_64 on PATH, into buf; false when there is none. */
static bool find_on_path(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	char *copy = strdup(path ? path : "/usr/bin:/bin"), *save = NULL;
	bool found = false;

	for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(buf, len, "%s/%s", d, name);
		found = !access(buf, X_OK);
	}
	free(copy);
	return found;
}

static void check_qemu(const struct doc_env *env, struct doc_report *r)
{
	char path[1024], version[512] = "", types[16384] = "";
	struct doc_check *c;

	if (env->qemu)
		snprintf(path, sizeof(path), "%s", env->qemu);
	else if (!find_on_path("qemu-system-x86_64", path, sizeof(path))) {
		c = doc_add(r, DOC_CHAIN, "qemu.patched", DOC_NO, "no qemu-system-x86_64 on PATH");
		doc_fix(
		    c,
		    "build the patched QEMU (make qemu; it prints its directory) and name it with --qemu or virt-xml --emulator");
		return;
	}
	char *vargv[] = {path, "-version", NULL}, *targv[] = {path, "-object", "help", NULL};
	int rc = capture(vargv, version, sizeof(version));

	if (!rc)
		rc = capture(targv, types, sizeof(types));
	version[strcspn(version, "\n")] = 0;
	if (rc) {
		c = doc_add(r, DOC_CHAIN, "qemu.patched", DOC_NO, "%s cannot be run: %s", path,
			    strerror(-rc));
		return;
	}
	bool devmem = doc_has_word(types, "memory-backend-devmem"), obj = doc_has_word(types, "hvmtrace");
	c = doc_add(r, DOC_CHAIN, "qemu.patched", devmem && obj ? DOC_YES : DOC_NO, "%s: %s, %s", path,
		    version[0] ? version : "version unknown",
		    devmem && obj ? "patched (memory-backend-devmem and the hvmtrace object)"
				  : "not patched: it has no hvmtrace object and no memory-backend-devmem");
	doc_evidence(c, "%s -object help", path);
	if (!(devmem && obj))
		doc_fix(
		    c,
		    "build the patched QEMU 10.0 (make qemu) and pass it with --qemu (virt-xml --emulator for libvirt)");
}

/* The running libvirt daemon (modular virtqemud or monolithic libvirtd): its pid and start (wall seconds). */
static pid_t find_daemon(const struct doc_env *env, char *name, size_t len, time_t *started)
{
	char path[512], comm[64], stat[64];
	unsigned long long ticks, btime = 0;
	DIR *d = opendir(env->proc_root);
	struct dirent *de;
	pid_t found = 0;
	FILE *f;

	doc_proc_path(env, "stat", path, sizeof(path));
	if ((f = fopen(path, "re"))) {
		while (fgets(stat, sizeof(stat), f))
			if (sscanf(stat, "btime %llu", &btime) == 1)
				break;
		fclose(f);
	}
	while (d && !found && (de = readdir(d))) {
		int pid = atoi(de->d_name);

		snprintf(path, sizeof(path), "%s/%d/comm", env->proc_root, pid);
		if (pid <= 0 || hvt_read_text(path, comm, sizeof(comm), NULL))
			continue;
		if (!strcmp(comm, "virtqemud") || !strcmp(comm, "libvirtd")) {
			found = pid;
			snprintf(name, len, "%s", comm);
			*started = !hvt_process_start_time(pid, &ticks)
				       ? (time_t)(btime + ticks / (unsigned long long)sysconf(_SC_CLK_TCK))
				       : 0;
		}
	}
	if (d)
		closedir(d);
	return found;
}

static void check_libvirt(const struct doc_env *env, struct doc_report *r)
{
	unsigned long lib = 0;
	char hook[512], daemon[64] = "";
	time_t started = 0;
	struct stat st;
	struct doc_check *c;
	pid_t pid;

	virGetVersion(&lib, NULL, NULL);
	pid = find_daemon(env, daemon, sizeof(daemon), &started);
	c = doc_add(r, DOC_CHAIN, "libvirt", DOC_INFO,
		    "libvirt %lu.%lu.%lu (the library hvmtrace uses); daemon: %s", lib / 1000000,
		    lib / 1000 % 1000, lib % 1000, pid ? daemon : "not running");
	doc_evidence(c, "virGetVersion(); %s/*/comm", env->proc_root);
	snprintf(hook, sizeof(hook), "%s/hvmtrace", env->hooks_dir);
	if (stat(hook, &st)) {
		c = doc_add(r, DOC_CHAIN, "libvirt.hook", DOC_NO, "the libvirt hook %s is not installed",
			    hook);
		doc_fix(c, "make install-libvirt");
		return;
	}
	if (!(st.st_mode & S_IXUSR)) {
		c = doc_add(r, DOC_CHAIN, "libvirt.hook", DOC_NO, "the libvirt hook %s is not executable",
			    hook);
		doc_fix(c, "chmod 0755 %s", hook);
		return;
	}
	if (pid && started && started < st.st_mtime) {
		c = doc_add(r, DOC_CHAIN, "libvirt.hook", DOC_WARN,
			    "the hook %s is newer than the running %s: the daemon may not have found it",
			    hook, daemon);
		doc_evidence(
		    c,
		    "libvirt looks for hooks when the daemon starts (virHookInitialize in src/util/virhook.c) and calls the qemu hooks only if it found some then");
		doc_fix(c, "restart the daemon: systemctl restart %s", daemon);
		return;
	}
	c = doc_add(r, DOC_CHAIN, "libvirt.hook", DOC_YES, "the hook %s is installed%s", hook,
		    pid ? " and older than the running daemon, which has found it" : " (no daemon running)");
}

static void check_host(const struct doc_env *env, struct doc_report *r)
{
	char path[512];
	struct statfs sf;
	struct hvt_err e;
	struct doc_check *c;
	const char *v = "unknown";

	doc_sys_path(env, "fs/cgroup", path, sizeof(path));
	if (!statfs(path, &sf))
		v = (unsigned long)sf.f_type == CGROUP2_SUPER_MAGIC ? "v2 (unified)"
		    : (unsigned long)sf.f_type == TMPFS_MAGIC
			? "v1 (a tmpfs of v1 controllers; hybrid where fs/cgroup/unified is cgroup2)"
			: "unknown";
	c = doc_add(r, DOC_CHAIN, "cgroup", DOC_INFO, "cgroup %s; %s", v,
		    hvt_lv_systemd_runs()
			? "systemd runs: the hook starts the tracer as hvmtrace@DOMAIN.service"
			: "no systemd as PID 1: the hook supervises the tracer itself (docs/libvirt.md §4)");
	doc_evidence(c, "statfs(%s); /run/systemd/system", path);
	if (hvt_lv_check_output(env->output_dir, &e)) {
		c = doc_add(r, DOC_CHAIN, "output", DOC_NO, "%s", e.msg);
		doc_fix(c,
			"mkdir -p %s, or name another with --output-dir (and in <hvmtrace:trace output=…>)",
			env->output_dir);
	} else {
		c = doc_add(r, DOC_CHAIN, "output", DOC_YES, "output directory %s is writable%s",
			    env->output_dir, hvt_lv_systemd_runs() ? ", by the tracer's unit too" : "");
	}
	doc_evidence(c, "a file created and removed there, as the hook's prepare check does");
}

void doc_check_chain(const struct doc_env *env, struct doc_report *r)
{
	check_qemu(env, r);
	check_libvirt(env, r);
	check_host(env, r);
}
