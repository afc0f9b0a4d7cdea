// SPDX-License-Identifier: MIT
/* Whether the libvirt daemon has loaded hvmtrace's hooks (hvmtrace/libvirt/hooks_loaded.c, docs/libvirt.md
 * §4.1): the daemon hook's record at start, reload and shutdown, and what --check-hook makes of it: a live
 * daemon that looked while the qemu hook was there; one that looked before; one that has ended; no record;
 * a record that is not the hook's; no qemu hook at all. This process stands in for the daemon. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "../../hvmtrace/libvirt/hooks_loaded.h"

static char dir[64], hooks[128], run[128], hook[192], record[192];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_libvirt_hooks.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(hooks, sizeof(hooks), "%s/hooks", dir);
	snprintf(run, sizeof(run), "%s/run", dir);
	snprintf(hook, sizeof(hook), "%s/qemu.d/hvmtrace", hooks);
	snprintf(record, sizeof(record), "%s/" HVT_LV_HOOKS_RECORD, run);
	char qd[160];
	snprintf(qd, sizeof(qd), "%s/qemu.d", hooks);
	return mkdir(hooks, 0755) || mkdir(qd, 0755) || mkdir(run, 0755);
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

static void install_hook(void)
{
	FILE *f = fopen(hook, "w");

	assert_non_null(f);
	fputs("#!/bin/sh\n", f);
	fclose(f);
	assert_int_equal(chmod(hook, 0755), 0);
}

static void write_record(const char *text)
{
	FILE *f = fopen(record, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_loaded_and_not(void **state)
{
	struct hvt_err e = {{0}};
	pid_t daemon = 0;

	(void)state;
	/* no qemu hook: not installed, whatever the record says */
	assert_int_equal(hvt_lv_hooks_check(hooks, run, &daemon, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "is not installed"));
	assert_non_null(strstr(e.msg, "make install-libvirt"));

	/* installed, but no daemon has run the daemon hook */
	install_hook();
	assert_int_equal(hvt_lv_hooks_check(hooks, run, &daemon, &e), -ESRCH);
	assert_non_null(
	    strstr(e.msg, "libvirtd has not loaded the hvmtrace hook: restart libvirtd (or virtqemud)"));

	/* a daemon (this process) that looked while the hook was there */
	assert_int_equal(hvt_lv_hooks_record(hooks, run, "start", getpid(), &e), 0);
	assert_int_equal(hvt_lv_hooks_check(hooks, run, &daemon, &e), 0);
	assert_int_equal(daemon, getpid());

	/* ops that are not start, reload or shutdown change nothing; shutdown removes the record */
	assert_int_equal(hvt_lv_hooks_record(hooks, run, "something", getpid(), &e), 0);
	assert_int_equal(hvt_lv_hooks_check(hooks, run, NULL, &e), 0);
	assert_int_equal(hvt_lv_hooks_record(hooks, run, "shutdown", getpid(), &e), 0);
	assert_int_equal(access(record, F_OK), -1);

	/* the daemon looked before the qemu hook was installed: a reload after the install fixes it */
	unlink(hook);
	assert_int_equal(hvt_lv_hooks_record(hooks, run, "start", getpid(), &e), 0);
	install_hook();
	assert_int_equal(hvt_lv_hooks_check(hooks, run, NULL, &e), -ESRCH);
	assert_non_null(strstr(e.msg, "looked for hooks before"));
	assert_int_equal(hvt_lv_hooks_record(hooks, run, "reload", getpid(), &e), 0);
	assert_int_equal(hvt_lv_hooks_check(hooks, run, NULL, &e), 0);
}

static void test_daemon_gone_and_bad_record(void **state)
{
	struct hvt_err e = {{0}};
	pid_t child;

	(void)state;
	install_hook();
	/* the daemon that looked has ended */
	child = fork();
	if (child == 0)
		_exit(0);
	assert_true(child > 0);
	waitpid(child, NULL, 0);
	char buf[128];
	snprintf(buf, sizeof(buf), "daemon %d 12345\nqemu-hook yes\n", (int)child);
	write_record(buf);
	assert_int_equal(hvt_lv_hooks_check(hooks, run, NULL, &e), -ESRCH);
	assert_non_null(strstr(e.msg, "has ended"));

	/* this process's pid with another start time: a later process that got the pid, not the daemon */
	snprintf(buf, sizeof(buf), "daemon %d 1\nqemu-hook yes\n", (int)getpid());
	write_record(buf);
	assert_int_equal(hvt_lv_hooks_check(hooks, run, NULL, &e), -ESRCH);
	assert_non_null(strstr(e.msg, "has ended"));

	write_record("not the hook's\n");
	assert_int_equal(hvt_lv_hooks_check(hooks, run, NULL, &e), -ESRCH);
	assert_non_null(strstr(e.msg, "is not what the daemon hook writes"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_loaded_and_not, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_daemon_gone_and_bad_record, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
