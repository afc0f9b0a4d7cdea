// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/files.h"

static char dir[] = "/tmp/test_files.XXXXXX";

static const char *at(const char *name)
{
	static char paths[4][128];
	static int next;
	char *p = paths[next++ % 4];

	snprintf(p, sizeof(paths[0]), "%s/%s", dir, name);
	return p;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static char *get(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Files left in dir besides the ones the test made: a temporary file that was not removed. */
static int entries(void)
{
	char cmd[160];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "ls -A %s", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(cmd, sizeof(cmd), p))
		n++;
	pclose(p);
	return n;
}

static void test_same_file(void **state)
{
	char rel[160];

	(void)state;
	put(at("a"), "a");
	assert_int_equal(link(at("a"), at("hard")), 0);
	assert_int_equal(symlink("a", at("soft")), 0);
	snprintf(rel, sizeof(rel), "%s/../%s/./a", dir, strrchr(dir, '/') + 1);
	assert_true(hvt_same_file(at("a"), at("a")));
	assert_true(hvt_same_file(at("a"), rel));
	assert_true(hvt_same_file(at("a"), at("hard")));
	assert_true(hvt_same_file(at("soft"), at("a")));
	assert_false(hvt_same_file(at("a"), at("b")));
	/* not there yet: the same directory and name are one output, another name is not */
	assert_true(hvt_same_file(at("new"), at("./new")));
	assert_false(hvt_same_file(at("new"), at("new2")));
	assert_false(hvt_same_file(at("new"), at("a")));
	assert_false(hvt_same_file(at("no/such"), at("no/such"))); /* cannot be resolved: not called equal */
}

static void test_outfile_replaces_whole(void **state)
{
	struct hvt_outfile o;
	struct hvt_err e = {{0}};
	struct stat sb;
	int before;

	(void)state;
	put(at("out"), "good\n");
	chmod(at("out"), 0644);
	before = entries();
	/* while written, the target keeps its old content; an abort leaves it so */
	assert_int_equal(hvt_outfile_open(&o, at("out"), &e), 0);
	fputs("half", o.f);
	fflush(o.f);
	assert_string_equal(get(at("out")), "good\n");
	assert_int_equal(entries(), before + 1);
	hvt_outfile_abort(&o);
	assert_string_equal(get(at("out")), "good\n");
	assert_int_equal(entries(), before);
	/* a commit replaces it, 0600 */
	assert_int_equal(hvt_outfile_open(&o, at("out"), &e), 0);
	fputs("new\n", o.f);
	assert_int_equal(hvt_outfile_commit(&o, &e), 0);
	assert_string_equal(get(at("out")), "new\n");
	assert_int_equal(stat(at("out"), &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_int_equal(entries(), before);
	/* through a symlink: the target is replaced, the link stays */
	assert_int_equal(symlink("out", at("link")), 0);
	assert_int_equal(hvt_outfile_open(&o, at("link"), &e), 0);
	fputs("linked\n", o.f);
	assert_int_equal(hvt_outfile_commit(&o, &e), 0);
	assert_string_equal(get(at("out")), "linked\n");
	assert_int_equal(lstat(at("link"), &sb), 0);
	assert_true(S_ISLNK(sb.st_mode));
	/* a non-regular file is written in place, never renamed over */
	assert_int_equal(hvt_outfile_open(&o, "/dev/null", &e), 0);
	assert_null(o.tmp);
	fputs("x", o.f);
	assert_int_equal(hvt_outfile_commit(&o, &e), 0);
	assert_int_equal(stat("/dev/null", &sb), 0);
	assert_true(S_ISCHR(sb.st_mode));
	/* a directory that does not exist: the message names the path */
	assert_int_equal(hvt_outfile_open(&o, at("no/x"), &e), -ENOENT);
	assert_non_null(strstr(e.msg, "cannot create "));
	assert_non_null(strstr(e.msg, "/no/x: No such file or directory"));
}

/* publish: the target is replaced at once, and a descriptor of the file goes on writing at the target */
static void test_outfile_publish(void **state)
{
	struct hvt_outfile o;
	struct hvt_err e = {{0}};
	int before, fd;

	(void)state;
	put(at("pub"), "old\n");
	before = entries();
	assert_int_equal(hvt_outfile_open(&o, at("pub"), &e), 0);
	fputs("head\n", o.f);
	fflush(o.f);
	fd = dup(fileno(o.f));
	assert_true(fd >= 0);
	assert_string_equal(get(at("pub")), "old\n");
	assert_int_equal(hvt_outfile_publish(&o, &e), 0);
	assert_null(o.f);
	assert_string_equal(get(at("pub")), "head\n");
	assert_int_equal(write(fd, "more\n", 5), 5);
	assert_int_equal(close(fd), 0);
	assert_string_equal(get(at("pub")), "head\nmore\n");
	assert_int_equal(entries(), before);
}

static void test_open_regular(void **state)
{
	mode_t mode = 0;
	int fd;

	(void)state;
	put(at("r"), "r");
	fd = hvt_open_regular(at("r"), &mode);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mkfifo(at("fifo"), 0600), 0);
	alarm(10); /* open() of a FIFO without a writer would wait for ever */
	assert_int_equal(hvt_open_regular(at("fifo"), &mode), -EINVAL);
	alarm(0);
	assert_string_equal(hvt_file_type_name(mode), "a FIFO");
	assert_int_equal(hvt_open_regular("/dev/zero", &mode), -EINVAL);
	assert_string_equal(hvt_file_type_name(mode), "a character device");
	assert_int_equal(hvt_open_regular(dir, &mode), -EINVAL);
	assert_string_equal(hvt_file_type_name(mode), "a directory");
	assert_int_equal(hvt_open_regular(at("none"), &mode), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_file),
	    cmocka_unit_test(test_outfile_replaces_whole),
	    cmocka_unit_test(test_outfile_publish),
	    cmocka_unit_test(test_open_regular),
	};
	char cmd[64];
	int rc;

	if (!mkdtemp(dir))
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return rc;
}
