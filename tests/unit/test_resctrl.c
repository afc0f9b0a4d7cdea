// SPDX-License-Identifier: MIT
/*
 * The resctrl fallback on a resctrl tree laid out as the kernel documents it (tests/fixtures/resctrl, see its
 * README; copied to a temporary directory because the group is written to): reusing a group, moving every
 * thread of a process into it, byte deltas per L3 domain, "Unavailable" windows, and the errors for a tree
 * that is not mounted or has no MBM.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/resctrl.h"
#include "hvmtrace/util.h"

static char root[256];

static int copy_fixture(void **state)
{
	char cmd[512];

	(void)state;
	snprintf(root, sizeof(root), "/tmp/hvt-resctrl-XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(cmd, sizeof(cmd), "cp -a tests/fixtures/resctrl/skx-2socket/. %s/", root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static int remove_copy(void **state)
{
	char cmd[512];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

static void put(const char *domain, const char *value)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/mon_groups/hvmtrace-test/mon_data/%s/mbm_total_bytes", root, domain);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "%s\n", value);
	fclose(f);
}

static void test_group_deltas(void **state)
{
	struct hvt_resctrl_group g;
	struct hvt_err err = {{0}};
	uint64_t bytes[HVT_RESCTRL_MAX_DOMAINS];
	bool avail[HVT_RESCTRL_MAX_DOMAINS];
	char path[512], *tasks, want[32];

	(void)state;
	if (hvt_resctrl_open(&g, root, "hvmtrace-test", getpid(), &err))
		fail_msg("%s", err.msg);
	assert_false(g.created); /* the group existed */
	assert_int_equal(g.ndomains, 2);
	assert_string_equal(g.domains[0], "mon_L3_00");
	assert_string_equal(g.domains[1], "mon_L3_01");
	/* our (only) thread was written to the group's tasks file */
	snprintf(path, sizeof(path), "%s/mon_groups/hvmtrace-test/tasks", root);
	assert_int_equal(hvt_read_file(path, NULL, 4096, &tasks, NULL, &err), 0);
	snprintf(want, sizeof(want), "%d\n", (int)getpid());
	assert_string_equal(tasks, want);
	free(tasks);

	/* domain 0 counted 1 MiB → 5 MiB; domain 1 was Unavailable at open and now has its first value */
	put("mon_L3_00", "5242880");
	put("mon_L3_01", "300");
	assert_int_equal(hvt_resctrl_read(&g, bytes, avail, &err), 0);
	assert_true(avail[0]);
	assert_int_equal(bytes[0], 4194304);
	assert_false(avail[1]); /* no baseline yet: not a window */
	put("mon_L3_00", "5242880");
	put("mon_L3_01", "1324");
	assert_int_equal(hvt_resctrl_read(&g, bytes, avail, &err), 0);
	assert_true(avail[0] && avail[1]);
	assert_int_equal(bytes[0], 0);
	assert_int_equal(bytes[1], 1024);
	put("mon_L3_00", "Error");
	assert_int_equal(hvt_resctrl_read(&g, bytes, avail, &err), 0);
	assert_false(avail[0]);
	assert_int_equal(bytes[0], 0);
	put("mon_L3_00", "junk");
	assert_int_equal(hvt_resctrl_read(&g, bytes, avail, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not a byte count"));
	hvt_resctrl_close(&g);
	snprintf(path, sizeof(path), "%s/mon_groups/hvmtrace-test", root);
	assert_int_equal(access(path, F_OK), 0); /* not ours: kept */
}

static void test_errors(void **state)
{
	struct hvt_resctrl_group g;
	struct hvt_err err = {{0}};
	char path[512];
	FILE *f;

	(void)state;
	/* A new group on a plain directory has no kernel-made mon_data: refused, and the directory removed.
	 */
	assert_int_equal(hvt_resctrl_open(&g, root, "fresh", getpid(), &err), -ENOENT);
	assert_non_null(strstr(err.msg, "not a resctrl monitoring group"));
	snprintf(path, sizeof(path), "%s/mon_groups/fresh", root);
	assert_int_not_equal(access(path, F_OK), 0);

	assert_int_equal(hvt_resctrl_open(&g, "/tmp/hvt-no-such-resctrl", "x", getpid(), &err), -ENODEV);
	assert_non_null(strstr(err.msg, "mount -t resctrl resctrl /tmp/hvt-no-such-resctrl"));

	snprintf(path, sizeof(path), "%s/info/L3_MON/mon_features", root);
	assert_non_null(f = fopen(path, "w"));
	fputs("llc_occupancy\n", f);
	fclose(f);
	assert_int_equal(hvt_resctrl_open(&g, root, "hvmtrace-test", getpid(), &err), -ENODEV);
	assert_non_null(strstr(err.msg, "no mbm_total_bytes"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_group_deltas, copy_fixture, remove_copy),
	    cmocka_unit_test_setup_teardown(test_errors, copy_fixture, remove_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
