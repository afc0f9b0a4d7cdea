// SPDX-License-Identifier: MIT
/*
 * hvmtrace libvirt-hook: the tracer's lifecycle with a libvirt domain (docs/libvirt.md §4). libvirt runs
 * /etc/libvirt/hooks/qemu.d/hvmtrace as `hvmtrace DOMAIN OP SUBOP EXTRA` with the domain XML on stdin; the
 * hook never calls back into libvirt.
 *   prepare begin            validate the request against the host; refuse with one line
 *   start begin              QEMU's run directory, the claim on its memory, the devmem helper
 *   started begin            start the tracer (systemd unit hvmtrace@DOMAIN, or a detached supervisor)
 *                            and wait until it has attached: a domain that asks for a trace does not
 *                            go on untraced (libvirt stops a domain whose started hook fails)
 *   reconnect begin          start the tracer unless it runs (a failure here would kill the domain)
 *   stopped/release end      make sure the tracer has closed its trace; release the claim and remove
 *                            the domain's run directory
 * `--run DOMAIN` starts one tracer with a new trace file (the unit's ExecStart, and the supervisor's child).
 * `--daemon HOOKS_DIR` is the daemon hook: it records that the daemon has loaded the hooks (hooks_loaded.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "hvmtrace/error.h"
#include "hvmtrace/options.h"
#include "hvmtrace/util.h"
#include "libvirt/claims.h"
#include "libvirt/devmem_helper.h"
#include "libvirt/hooks_loaded.h"
#include "libvirt/host_checks.h"
#include "libvirt/libvirt_domain.h"

#define XML_MAX           (16u << 20)
#define HELPER_TIMEOUT_MS 120000 /* QEMU asks for its memory within seconds of "start" */
#define STOP_WAIT_MS      30000  /* the tracer's last interval and the trailer, after QEMU ended */
#define TERM_WAIT_MS      10000
#define MAX_RESTARTS      10
#define ATTACH_WAIT_MS    120000 /* a bound for a busy host: locking the memory budget takes a while */
#define QEMU_GONE_WAIT_MS 2000   /* a tracer that lost its VM: how long QEMU may take to exit */
/* Run directories: traversable, not listable. QEMU (libvirt-qemu) must reach its own sockets by name
 * under them; nobody else needs to see which domains are traced. */
#define RUN_DIR_MODE 0711

enum hook_exit { HOOK_OK = 0, HOOK_REFUSED = 1, HOOK_USAGE = 2 };

static const struct hvt_exit_status hook_exits[] = {
    {HOOK_OK, "done (or the domain asks for no tracing)"},
    {HOOK_REFUSED, "the request cannot be served: the domain must not start (the reason is one line)"},
    {HOOK_USAGE, "bad arguments"},
    {0, NULL},
};

static int read_stdin(char **xml, size_t *len, struct hvt_err *e)
{
	/* libvirt hands the XML over a pipe: read the fd itself, bounded, not a path that must be regular */
	return hvt_read_fd(STDIN_FILENO, "the domain XML on standard input", XML_MAX, xml, len, e);
}

static int mkdir_owned(const char *path, mode_t mode, long uid, long gid, struct hvt_err *e)
{
	if (mkdir(path, mode) && errno != EEXIST)
		return hvt_err_set(e, -errno, "%s: %s", path, strerror(errno));
	if (chmod(path, mode) || (uid >= 0 && chown(path, (uid_t)uid, (gid_t)gid)))
		return hvt_err_set(e, -errno, "%s: %s", path, strerror(errno));
	return 0;
}

static pid_t read_pid(const char *path)
{
	char buf[32];
	struct hvt_err e;

	if (hvt_read_text(path, buf, sizeof(buf), &e))
		return -1;
	return (pid_t)strtol(buf, NULL, 10);
}

static int write_pid(const char *path, pid_t pid)
{
	char tmp[4200];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(f = fopen(tmp, "w")))
		return -errno;
	fprintf(f, "%d\n", (int)pid);
	if (fclose(f) || rename(tmp, path))
		return -errno;
	return 0;
}

/* Detaches the calling (forked) process from the hook: new session, stdio to log (or /dev/null), no other
 * inherited fd but keep (moved to 3; -1: none). libvirt waits for the hook's pipes to close. */
static void detach(const char *log, int keep)
{
	int fd;

	setsid();
	if (fork() > 0)
		_exit(0);
	fd = open("/dev/null", O_RDONLY);
	dup2(fd, 0);
	fd = log ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0600) : open("/dev/null", O_WRONLY);
	dup2(fd, 1);
	dup2(fd, 2);
	if (keep >= 0 && keep != 3) {
		dup2(keep, 3);
		keep = 3;
	}
	for (int i = keep >= 0 ? 4 : 3; i < 1024; i++)
		close(i);
}

/* The domain's log, OUTPUT/DOMAIN.log beside its traces (the helper's, the supervisor's and the tracers'
 * lines, appended across starts): it outlives the run directory, which goes when the domain stops. */
static void domain_log(const struct hvt_lv_domain *d, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s.log", d->t.output, d->name);
}

/* ---- prepare and start: refuse, claim, hand out the memory ---- */

/* RUN, RUN/NAME (root's: pid files, claim, the saved XML) and RUN/NAME/qemu (QEMU's own: its hvmtrace
 * socket, and the guest agent's channel socket, which libvirt binds there before the start hook runs). */
static int make_run_dirs(const struct hvt_lv_domain *d, struct hvt_err *e)
{
	char dir[4096], qdir[4200];
	int rc;

	hvt_lv_path(d, NULL, dir, sizeof(dir));
	hvt_lv_path(d, "qemu", qdir, sizeof(qdir));
	if ((rc = mkdir_owned(d->t.run_dir, RUN_DIR_MODE, -1, -1, e)) ||
	    (rc = mkdir_owned(dir, RUN_DIR_MODE, -1, -1, e)) ||
	    (rc = mkdir_owned(qdir, 0700, d->uid, d->gid, e)))
		return rc;
	return 0;
}

static int hook_prepare(const struct hvt_lv_domain *d, struct hvt_err *e)
{
	char others[1024];
	int rc = hvt_lv_check(d, e);

	if (!rc && hvt_lv_cpu_sharers(d, others, sizeof(others)))
		fprintf(stderr,
			"hvmtrace: domain '%s': warning: tracer CPU %d is also the tracer CPU of running "
			"domain(s) %s: the tracers share it\n",
			d->name, d->t.cpu, others);
	/* libvirt opens a <channel>'s listening socket while it builds QEMU's command line, after prepare
	 * and before start: the guest agent's (virt-xml --owners) is in QEMU's directory, which must be
	 * there by then. A refused domain gets none; a start that fails later is released. */
	if (!rc && d->owners_port)
		rc = make_run_dirs(d, e);
	return rc;
}

static int hook_start(struct hvt_lv_domain *d, const char *xml, size_t len, struct hvt_err *e)
{
	char sock[4200], saved[4200];
	int rc, lsock;
	FILE *f;

	hvt_lv_path(d, "domain.xml", saved, sizeof(saved));
	if ((rc = make_run_dirs(d, e)))
		return rc;
	hvt_lv_path(d, "qemu/vm.sock", sock, sizeof(sock));
	unlink(sock);
	hvt_lv_path(d, "attached", sock, sizeof(sock));
	unlink(sock);
	if (!(f = fopen(saved, "w")) || fwrite(xml, 1, len, f) != len || fclose(f))
		return hvt_err_set(e, -errno, "%s: %s", saved, strerror(errno));
	rc =
	    hvt_lv_claim(d, getppid(), e); /* the libvirt daemon running this hook holds it until QEMU does */
	if (rc || d->t.ram == HVT_LV_RAM_NONE)
		return rc;
	hvt_lv_path(d, "devmem.sock", sock, sizeof(sock));
	lsock = devmem_helper_listen(d, sock, e);
	if (lsock < 0) {
		hvt_lv_unclaim(d);
		return lsock;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(lsock);
		hvt_lv_unclaim(d);
		return hvt_err_set(e, -errno, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		char log[4200];
		struct hvt_err he = {{0}};

		domain_log(d, log, sizeof(log));
		detach(log, lsock);
		rc = devmem_helper_serve(d, 3, HELPER_TIMEOUT_MS, &he);
		fprintf(stderr, "hvmtrace devmem helper for '%s': %s\n", d->name,
			rc ? he.msg : "fds handed over");
		unlink(sock);
		_exit(rc ? 1 : 0);
	}
	close(lsock);
	waitpid(pid, NULL, 0); /* the first fork exits at once; the helper lives on, detached */
	return 0;
}

/* ---- started: the tracer ---- */

/* DIR/DOMAIN-<UTC start time>.hvt, made here with O_EXCL so that no start overwrites an earlier trace. */
static int new_trace_file(const struct hvt_lv_domain *d, char *path, size_t len, struct hvt_err *e)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	for (int n = 1; n < 1000; n++) {
		int fd;

		if (n == 1)
			snprintf(path, len, "%s/%s-%s.hvt", d->t.output, d->name, stamp);
		else
			snprintf(path, len, "%s/%s-%s-%d.hvt", d->t.output, d->name, stamp, n);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (errno != EEXIST)
			return hvt_err_set(e, -errno, "%s: %s", path, strerror(errno));
	}
	return hvt_err_set(e, -EEXIST, "%s: too many traces started this second", path);
}

/* The CPU for QEMU's harvest thread: one the emulator threads may use (<cputune> keeps them off the
 * tracer's), the lowest. */
static int harvest_cpu(const struct hvt_lv_domain *d)
{
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (c != d->t.cpu && (!d->pinned || CPU_ISSET(c, &d->pin_set)))
			return c;
	return d->t.cpu;
}

/* Runs `hvmtrace record` for the domain into a new trace file (its pid in RUN/NAME/tracer.pid) and exits as
 * it did: its status, or 1 when a signal killed it (a failure, to restart after). A file it never wrote
 * to is removed. */
static int run_tracer(const char *name, const char *run_dir)
{
	char saved[4200], sock[4200], file[4200], jsonl[4200], uid[24], cpu[16], hcpu[16], tpid[4200],
	    attached[4200];
	struct hvt_lv_domain d;
	struct hvt_err e = {{0}};
	char *xml = NULL;
	size_t len;
	int rc;

	snprintf(saved, sizeof(saved), "%s/%s/domain.xml", run_dir, name);
	rc = hvt_read_file(saved, "domain XML", XML_MAX, &xml, &len, &e);
	if (!rc)
		rc = hvt_lv_parse(xml, len, &d, &e);
	free(xml);
	if (!rc && !d.traced)
		rc = hvt_err_set(&e, -EINVAL, "%s asks for no tracing", saved);
	if (!rc)
		rc = new_trace_file(&d, file, sizeof(file), &e);
	if (rc) {
		fprintf(stderr, "hvmtrace libvirt-hook: domain '%s': %s\n", name, e.msg);
		return HOOK_REFUSED;
	}
	hvt_lv_path(&d, "qemu/vm.sock", sock, sizeof(sock));
	snprintf(uid, sizeof(uid), "%ld", d.uid);
	snprintf(cpu, sizeof(cpu), "%d", d.t.cpu);
	snprintf(hcpu, sizeof(hcpu), "%d", harvest_cpu(&d));
	hvt_lv_path(&d, "attached", attached, sizeof(attached));
	const char *argv[26] = {
	    "hvmtrace", "record",     "--attach",   sock, "--cpu", cpu,  "--harvest-cpu",
	    hcpu,       "--interval", d.t.interval, "-o", file,    "-q", "--attached-file",
	    attached};
	int n = 15;
	if (d.uid >= 0) {
		argv[n++] = "--vmm-uid";
		argv[n++] = uid;
	}
	if (strcmp(d.t.mode, "auto")) {
		argv[n++] = "--mode";
		argv[n++] = d.t.mode;
	}
	if (!d.t.bandwidth)
		argv[n++] = "--no-bw";
	if (d.t.jsonl) { /* beside the trace: its name is as unique as the trace's */
		snprintf(jsonl, sizeof(jsonl), "%.*s.jsonl", (int)(strlen(file) - 4), file);
		argv[n++] = "--jsonl";
		argv[n++] = jsonl;
	}
	if (d.owners_port) { /* virt-xml --owners: the guest agent's port */
		argv[n++] = "--owners-port";
		argv[n++] = d.owners_port;
	}
	argv[n] = NULL;
	fprintf(stderr, "hvmtrace libvirt-hook: domain '%s': tracing to %s%s%s\n", name, file,
		d.owners_port ? " with the guest agent's snapshots from " : "",
		d.owners_port ? d.owners_port : "");
	fflush(stderr);
	hvt_lv_path(&d, "tracer.pid", tpid, sizeof(tpid));
	pid_t pid = fork();
	if (pid == 0) {
		execv("/proc/self/exe", (char **)argv);
		fprintf(stderr, "hvmtrace libvirt-hook: cannot run the tracer: %s\n", strerror(errno));
		_exit(HOOK_REFUSED);
	}
	hvt_lv_free(&d);
	if (pid < 0)
		return HOOK_REFUSED;
	write_pid(tpid, pid);
	int status;
	struct stat st;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	unlink(tpid);
	if (!stat(file, &st) && st.st_size == 0)
		unlink(file);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "hvmtrace libvirt-hook: domain '%s': the tracer was killed by signal %d\n",
			name, WTERMSIG(status));
		return 1;
	}
	return WEXITSTATUS(status);
}

/* QEMU's pid: libvirt's pid file for the domain (the system daemon's, as the hook runs in its mount
 * namespace), -1 when there is none. */
static pid_t qemu_pid(const struct hvt_lv_domain *d)
{
	char path[4200];

	snprintf(path, sizeof(path), HVT_LV_LIBVIRT_RUN "/qemu/%s.pid", d->name);
	return read_pid(path);
}

/* True when the domain's QEMU has gone, or goes within QEMU_GONE_WAIT_MS. */
static bool qemu_ends(const struct hvt_lv_domain *d)
{
	for (int t = 0; t <= QEMU_GONE_WAIT_MS; t += 50) {
		pid_t pid = qemu_pid(d);

		if (pid <= 0 || !hvt_process_alive(pid))
			return true;
		usleep(50000);
	}
	return false;
}

/* The detached supervisor where systemd does not run: restarts a tracer that died (a signal, or a failure
 * after it started) while the domain lives, each time with a new trace file; stops when the tracer ends
 * normally (the VM ended) or finds no VM (exit 2). */
static void supervise(const struct hvt_lv_domain *d)
{
	char spid[4200];

	hvt_lv_path(d, "supervisor.pid", spid, sizeof(spid));
	write_pid(spid, getpid());
	for (int restarts = 0;; restarts++) {
		int status;
		pid_t pid = fork();

		if (pid == 0) {
			char *argv[] = {"hvmtrace",  "libvirt-hook", "--run", d->name,
					"--run-dir", d->t.run_dir,   NULL};
			execv("/proc/self/exe", argv);
			_exit(HOOK_REFUSED);
		}
		if (pid < 0)
			break;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		bool died = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 1);
		fprintf(stderr, "hvmtrace libvirt-hook: domain '%s': the tracer ended with status %d\n",
			d->name, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		if (!died || restarts >= MAX_RESTARTS)
			break;
		/* A tracer whose VM went without its bye (destroyed while paused, say) fails too: the
		 * domain has ended, and there is nothing to restart for. */
		if (qemu_ends(d)) {
			fprintf(stderr,
				"hvmtrace libvirt-hook: domain '%s': QEMU has exited: the domain "
				"has ended, no tracer to restart\n",
				d->name);
			break;
		}
		fprintf(stderr,
			"hvmtrace libvirt-hook: domain '%s': restarting the tracer (new trace file)\n",
			d->name);
		usleep(200000);
	}
	unlink(spid);
}

/* Runs a command (no shell: a domain name is data) and returns its exit status, or -1. */
static int run(const char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		execvp(argv[0], (char **)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Why the tracer gave up, from the domain's log: its lines from offset from on (this start's). */
static void last_log_line(const struct hvt_lv_domain *d, long from, char *buf, size_t len)
{
	char log[4200], line[1024];
	FILE *f;

	domain_log(d, log, sizeof(log));
	snprintf(buf, len, "(see %.1000s)", log);
	if (!(f = fopen(log, "r")) || fseek(f, from, SEEK_SET)) {
		if (f)
			fclose(f);
		return;
	}
	/* the tracer's own last word, else the supervisor's or the hook's */
	bool from_record = false;
	while (fgets(line, sizeof(line), f)) {
		bool rec = strstr(line, "hvmtrace record:");

		if (rec || (!from_record && strstr(line, "domain '"))) {
			snprintf(buf, len, "%.*s", (int)strcspn(line, "\n"), line);
			from_record |= rec;
		}
	}
	fclose(f);
}

/* Waits until the tracer has attached (RUN/NAME/attached, record --attached-file) while it may still do
 * so: the supervisor lives, or the unit has not failed. libvirt has resumed the vCPUs before "started"
 * (qemuProcessFinishStartup), and stops the domain when this hook fails. */
static int wait_attached(const struct hvt_lv_domain *d, bool systemd, long log_from, struct hvt_err *e)
{
	char attached[4200], spid[4200], unit[512], why[1100];
	struct stat st;

	hvt_lv_path(d, "attached", attached, sizeof(attached));
	hvt_lv_path(d, "supervisor.pid", spid, sizeof(spid));
	snprintf(unit, sizeof(unit), "hvmtrace@%s.service", d->name);
	for (int t = 0; t < ATTACH_WAIT_MS; t += 50) {
		if (!stat(attached, &st))
			return 0;
		bool gone = systemd ? !run((const char *[]){"systemctl", "is-failed", "-q", unit, NULL})
				    : !hvt_process_alive(read_pid(spid));
		if (gone && stat(attached, &st)) {
			last_log_line(d, log_from, why, sizeof(why));
			return hvt_err_set(e, -EIO,
					   "the domain asks for a trace and no tracer could attach, so it "
					   "does not start: %s",
					   systemd ? "hvmtrace@NAME.service failed (journalctl -u it)" : why);
		}
		usleep(50000);
	}
	return hvt_err_set(e, -ETIMEDOUT,
			   "the domain asks for a trace and its tracer has not attached within %d s, so it "
			   "does not start",
			   ATTACH_WAIT_MS / 1000);
}

static int hook_started(const struct hvt_lv_domain *d, bool wait, struct hvt_err *e)
{
	char spid[4200], log[4200];
	pid_t pid;

	if (hvt_lv_systemd_runs()) {
		char dropin[4200], unit[512];
		FILE *f;

		/* The tracer's CPU is the domain's choice: a runtime drop-in gives the unit its affinity. */
		snprintf(unit, sizeof(unit), "hvmtrace@%s.service", d->name);
		snprintf(dropin, sizeof(dropin), "/run/systemd/system/%s.d", unit);
		mkdir(dropin, 0755);
		strncat(dropin, "/cpu.conf", sizeof(dropin) - strlen(dropin) - 1);
		if ((f = fopen(dropin, "w"))) {
			fprintf(f, "[Service]\nCPUAffinity=%d\nEnvironment=HVMTRACE_RUN_DIR=%s\n", d->t.cpu,
				d->t.run_dir);
			fclose(f);
		}
		if (run((const char *[]){"systemctl", "daemon-reload", NULL}) ||
		    run((const char *[]){"systemctl", "start", "--no-block", unit, NULL}))
			return hvt_err_set(e, -EIO, "systemctl start %s failed", unit);
		return wait ? wait_attached(d, true, 0, e) : 0;
	}
	hvt_lv_path(d, "supervisor.pid", spid, sizeof(spid));
	pid = read_pid(spid);
	if (pid > 0 && hvt_process_alive(pid))
		return 0; /* reconnect: it is still there */
	domain_log(d, log, sizeof(log));
	struct stat st;
	long log_from = stat(log, &st) ? 0 : (long)st.st_size;
	pid = fork();
	if (pid < 0)
		return hvt_err_set(e, -errno, "fork: %s", strerror(errno));
	if (pid == 0) {
		detach(log, -1);
		supervise(d);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	/* the supervisor writes its pid file first thing: wait for it, so that wait_attached sees it */
	for (int t = 0; t < 5000 && read_pid(spid) <= 0; t += 10)
		usleep(10000);
	return wait ? wait_attached(d, false, log_from, e) : 0;
}

/* RUN/NAME and what the hook and the tracer left in it (sockets, pid files, the saved XML). */
static void remove_run_dir(const struct hvt_lv_domain *d)
{
	char dir[4096], qdir[4200];
	const char *leaves[] = {"domain.xml", "attached",    "supervisor.pid",
				"tracer.pid", "devmem.sock", "claim"};

	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		char path[4200];

		hvt_lv_path(d, leaves[i], path, sizeof(path));
		unlink(path);
	}
	hvt_lv_path(d, NULL, dir, sizeof(dir));
	hvt_lv_path(d, "qemu", qdir, sizeof(qdir));
	rmdir(qdir);
	if (rmdir(dir) && errno != ENOENT)
		fprintf(stderr, "hvmtrace libvirt-hook: domain '%s': %s left behind: %s\n", d->name, dir,
			strerror(errno));
}

/* Waits up to ms for pid to go; true when it has. */
static bool wait_gone(pid_t pid, int ms)
{
	for (int t = 0; t < ms; t += 50) {
		if (!hvt_process_alive(pid))
			return true;
		usleep(50000);
	}
	return !hvt_process_alive(pid);
}

static int hook_stopped(const struct hvt_lv_domain *d, bool release, struct hvt_err *e)
{
	char spid[4200], tpid[4200], sock[4200];
	pid_t sup, tr;

	(void)e;
	if (hvt_lv_systemd_runs()) {
		char unit[512];
		int i = 0;

		snprintf(unit, sizeof(unit), "hvmtrace@%s.service", d->name);
		/* The tracer ends by itself once QEMU has gone (see below); stop the unit only if it hangs.
		 */
		while (i++ < STOP_WAIT_MS / 100 &&
		       !run((const char *[]){"systemctl", "is-active", "-q", unit, NULL}))
			usleep(100000);
		if (!run((const char *[]){"systemctl", "is-active", "-q", unit, NULL}) &&
		    run((const char *[]){"systemctl", "stop", unit, NULL}))
			fprintf(stderr,
				"hvmtrace libvirt-hook: domain '%s': stopping hvmtrace@%s.service failed\n",
				d->name, d->name);
	} else {
		hvt_lv_path(d, "supervisor.pid", spid, sizeof(spid));
		hvt_lv_path(d, "tracer.pid", tpid, sizeof(tpid));
		sup = read_pid(spid);
		/* The tracer ends by itself once QEMU has gone; only one that hangs is told to stop, and it
		 * still closes its trace on SIGTERM. */
		if (sup > 0 && !wait_gone(sup, STOP_WAIT_MS)) {
			tr = read_pid(tpid);
			if (tr > 0)
				kill(tr, SIGTERM);
			if (!wait_gone(sup, TERM_WAIT_MS)) {
				kill(sup, SIGKILL);
				if (tr > 0)
					kill(tr, SIGKILL);
			}
		}
	}
	if (release) {
		hvt_lv_path(d, "devmem.sock", sock, sizeof(sock));
		unlink(sock);
		hvt_lv_path(d, "qemu/vm.sock", sock, sizeof(sock));
		unlink(sock);
		hvt_lv_path(d, "qemu/owners.sock", sock, sizeof(sock));
		unlink(sock);
		hvt_lv_unclaim(d);
		remove_run_dir(d);
	}
	return 0;
}

int cmd_libvirt_hook(int argc, char **argv)
{
	const char *name = NULL, *op = NULL, *subop = NULL, *extra = NULL, *run = NULL, *daemon = NULL;
	const char *run_dir = getenv("HVMTRACE_RUN_DIR") ? getenv("HVMTRACE_RUN_DIR") : HVT_LV_RUN_DIR;
	const struct hvt_option opts[] = {
	    HVT_OPT_STRING(0, "run", &run, "DOMAIN",
			   "start one tracer for the running DOMAIN (the unit's command)"),
	    HVT_OPT_PATH(0, "run-dir", &run_dir, "DIR",
			 "with --run: the domain's run-dir (default /run/hvmtrace)"),
	    HVT_OPT_PATH(
		0, "daemon", &daemon, "HOOKS_DIR",
		"libvirt's daemon hook (/etc/libvirt/hooks/daemon.d/hvmtrace): record that the daemon\n"
		"has loaded the hooks in HOOKS_DIR"),
	    HVT_OPT_OPERAND(&name, "DOMAIN", "the domain (from libvirt)"),
	    HVT_OPT_OPERAND(&op, "OP", "prepare, start, started, reconnect, stopped, release, …"),
	    HVT_OPT_OPERAND(&subop, "SUBOP", "begin or end"),
	    HVT_OPT_OPERAND(&extra, "EXTRA", "libvirt's extra argument"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace libvirt-hook",
	    .synopsis = "DOMAIN OP SUBOP [EXTRA] < domain.xml   |   --run DOMAIN",
	    .about = "libvirt's qemu hook (/etc/libvirt/hooks/qemu.d/hvmtrace): validates a domain's\n"
		     "<hvmtrace:trace> request, hands QEMU its reserved memory, and starts and stops\n"
		     "the tracer with the domain. Never calls back into libvirt.",
	    .options = opts,
	    .exits = hook_exits,
	    .usage_status = HOOK_USAGE,
	};
	struct hvt_lv_domain d;
	struct hvt_err e = {{0}};
	char *xml = NULL;
	size_t len = 0;
	int rc = hvt_opts_parse(&cmd, argc, argv);

	if (rc != HVT_OPTS_RUN)
		return rc;
	if (run)
		return run_tracer(run, run_dir);
	if (daemon) {
		/* never fail the daemon: a hook that cannot record just leaves virt-xml --check-hook unsure
		 */
		if (op && hvt_lv_hooks_record(daemon, HVT_LV_LIBVIRT_RUN, op, getppid(), &e))
			fprintf(stderr, "hvmtrace libvirt-hook --daemon: %s\n", e.msg);
		return HOOK_OK;
	}
	if (!name || !op || !subop) {
		fprintf(stderr, "hvmtrace libvirt-hook: needs DOMAIN OP SUBOP (as libvirt passes them)\n");
		return HOOK_USAGE;
	}
	bool act = (!strcmp(op, "prepare") || !strcmp(op, "start") || !strcmp(op, "started") ||
		    !strcmp(op, "reconnect") || !strcmp(op, "stopped") || !strcmp(op, "release"));
	if (!act)
		return HOOK_OK;
	rc = read_stdin(&xml, &len, &e);
	if (!rc)
		rc = hvt_lv_parse(xml, len, &d, &e);
	if (rc) {
		fprintf(stderr, "hvmtrace: domain '%s': %s\n", name, e.msg);
		free(xml);
		return HOOK_REFUSED;
	}
	if (d.traced) {
		if (!strcmp(op, "prepare") && !strcmp(subop, "begin"))
			rc = hook_prepare(&d, &e);
		else if (!strcmp(op, "start") && !strcmp(subop, "begin"))
			rc = hook_start(&d, xml, len, &e);
		else if ((!strcmp(op, "started") || !strcmp(op, "reconnect")) && !strcmp(subop, "begin"))
			rc = hook_started(&d, !strcmp(op, "started"), &e);
		else if ((!strcmp(op, "stopped") || !strcmp(op, "release")) && !strcmp(subop, "end"))
			rc = hook_stopped(&d, !strcmp(op, "release"), &e);
	}
	if (rc)
		fprintf(stderr, "hvmtrace: domain '%s': %s\n", name, e.msg);
	hvt_lv_free(&d);
	free(xml);
	return rc ? HOOK_REFUSED : HOOK_OK;
}
