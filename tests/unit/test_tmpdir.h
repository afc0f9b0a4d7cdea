/* SPDX-License-Identifier: MIT */
/*
 * A unit test's own temporary directory: made fresh in a cmocka group set-up, removed with whatever the
 * tests left in it in the group tear-down. Include once per test file, after defining TEST_TMPDIR_NAME
 * (the directory is /tmp/hvt-test-NAME-XXXXXX); the tests use `dir`.
 */
#ifndef HVMTRACE_TEST_TMPDIR_H
#define HVMTRACE_TEST_TMPDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static char dir[64];

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/hvt-test-%s-XXXXXX", TEST_TMPDIR_NAME);
	return mkdtemp(dir) ? 0 : -1;
}

/* Depth first and without following links: removes the tests' files, then the directory. */
static int teardown(void **state)
{
	(void)state;
	return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
