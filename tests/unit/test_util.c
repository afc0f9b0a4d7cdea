// SPDX-License-Identifier: MIT
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/util.h"

static void test_durations(void **state)
{
	static const struct {
		const char *s;
		uint64_t ns;
	} good[] = {
	    {"10ms", 10000000},      {"1s", 1000000000},       {"1.5s", 1500000000},
	    {"5m", 300000000000ull}, {"2h", 7200000000000ull}, {"250us", 250000},
	    {"100ns", 100},          {"3", 3000000000ull},     {"0.01", 10000000},
	};
	static const char *const bad[] = {"",  "0",  "0s",   "-1s",   "+1s", "5x",  "1 s",  " 1s",
					  "s", "ms", "1.s5", "0.1ns", "nan", "inf", "1e30h"};
	uint64_t ns;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ns = 0;
		assert_int_equal(hvt_parse_duration(good[i].s, &ns), 0);
		assert_int_equal(ns, good[i].ns);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_not_equal(hvt_parse_duration(bad[i], &ns), 0);
}

static void test_sizes(void **state)
{
	uint64_t b;

	(void)state;
	assert_int_equal(hvt_parse_size("1G", &b), 0);
	assert_int_equal(b, 1ull << 30);
	assert_int_equal(hvt_parse_size("512M", &b), 0);
	assert_int_equal(b, 512ull << 20);
	assert_int_equal(hvt_parse_size("4K", &b), 0);
	assert_int_equal(b, 4096);
	assert_int_equal(hvt_parse_size("1.5GiB", &b), 0);
	assert_int_equal(b, 3ull << 29);
	assert_int_equal(hvt_parse_size("4096", &b), 0);
	assert_int_equal(b, 4096);
	assert_int_not_equal(hvt_parse_size("1.1K", &b), 0); /* not a whole number of bytes */
	assert_int_not_equal(hvt_parse_size("1Q", &b), 0);
	assert_int_not_equal(hvt_parse_size("-1G", &b), 0);
	assert_int_not_equal(hvt_parse_size("", &b), 0);
	assert_int_not_equal(hvt_parse_size("9999999T", &b), 0);
}

static void test_format_round_trip(void **state)
{
	static const uint64_t values[] = {1,        999,        1000,       250000,
					  10000000, 1000000000, 1500000000, 300000000000ull};
	char buf[32];
	uint64_t back;

	(void)state;
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		hvt_format_duration(values[i], buf, sizeof(buf));
		assert_int_equal(hvt_parse_duration(buf, &back), 0);
		assert_int_equal(back, values[i]);
	}
	hvt_format_duration(10000000, buf, sizeof(buf));
	assert_string_equal(buf, "10ms");
}

static void test_clocks(void **state)
{
	uint64_t a = hvt_now_ns(), b = hvt_now_ns();

	(void)state;
	assert_true(b >= a);
	assert_true(hvt_wall_now_ns() > 1600000000ll * 1000000000ll); /* after 2020 */
}

static void test_cpulists(void **state)
{
	static const struct {
		const char *s;
		int n;
	} good[] = {
	    {"0", 1},  {"0-3,8\n", 5}, {"0,28", 2}, {"", 0},
	    {"\n", 0}, {"1023", 1},    {"2-2", 1},  {"0-1023", 1024},
	};
	static const char *const bad[] = {
	    "3,1",
	    "0-3,2",
	    "1,1",
	    "3-1",
	    "0,",
	    ",0",
	    "0,,1",
	    "a",
	    "-1",
	    "+1",
	    " 1",
	    "0 -3",
	    "0- 3",
	    "0-",
	    "1024",
	    "0-1024",
	    "0\n\n",
	    "0\n1",
	    "99999999999999999999",
	    "0;1",
	};
	cpu_set_t set;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(hvt_parse_cpulist(good[i].s, &set), good[i].n);
		assert_int_equal(CPU_COUNT(&set), good[i].n);
	}
	assert_int_equal(hvt_parse_cpulist("0-3,8\n", &set), 5);
	assert_true(CPU_ISSET(3, &set) && CPU_ISSET(8, &set));
	assert_false(CPU_ISSET(4, &set) || CPU_ISSET(7, &set) || CPU_ISSET(9, &set));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (hvt_parse_cpulist(bad[i], &set) != -EINVAL)
			fail_msg("cpulist '%s' was not refused", bad[i]);
}

/* A temporary file holding len bytes of text; its path in path. */
static void temp_file(char *path, const char *text, size_t len)
{
	int fd;

	strcpy(path, "/tmp/test_util.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static void test_read_file(void **state)
{
	struct hvt_err e = {{0}};
	char path[32], *text;
	size_t len;

	(void)state;
	temp_file(path, "a\0b\n", 4); /* binary: the length counts past the NUL */
	assert_int_equal(hvt_read_file(path, NULL, 4, &text, &len, &e), 0);
	assert_int_equal(len, 4);
	assert_memory_equal(text, "a\0b\n", 5);
	free(text);
	/* one byte over the limit is refused, naming the file and the limit */
	assert_int_equal(hvt_read_file(path, "channel map", 3, &text, &len, &e), -EFBIG);
	assert_null(text);
	assert_non_null(strstr(e.msg, path));
	assert_non_null(strstr(e.msg, "channel map"));
	assert_non_null(strstr(e.msg, "larger than 3 bytes"));
	unlink(path);

	temp_file(path, "", 0);
	assert_int_equal(hvt_read_file(path, NULL, 0, &text, &len, &e), 0);
	assert_int_equal(len, 0);
	assert_string_equal(text, "");
	free(text);
	unlink(path);

	/* a file larger than the limit stops there, whatever its size says (a sparse 1 TiB file) */
	temp_file(path, "", 0);
	assert_int_equal(truncate(path, (off_t)1 << 40), 0);
	assert_int_equal(hvt_read_file(path, NULL, 1u << 20, &text, &len, &e), -EFBIG);
	unlink(path);
	assert_int_equal(hvt_read_file(path, "channel map", 100, &text, NULL, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "cannot open channel map /tmp/test_util."));
	/* what is not a regular file is refused before it is read: a device that never ends, a directory */
	assert_int_equal(hvt_read_file("/dev/zero", NULL, 1u << 20, &text, &len, &e), -EINVAL);
	assert_string_equal(e.msg, "cannot read /dev/zero: it is a character device, not a regular file");
	assert_int_equal(hvt_read_file("/tmp", "channel map", 100, &text, NULL, &e), -EINVAL);
	assert_string_equal(e.msg, "cannot read channel map /tmp: it is a directory, not a regular file");
}

/* A FIFO without a writer: open() would wait for one forever. It is refused at once. */
static void test_read_fifo(void **state)
{
	char dir[] = "/tmp/test_util.XXXXXX", fifo[64], buf[8], *text;
	struct hvt_err e = {{0}};

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(10); /* before the fix this blocked in open(): end the test rather than hang */
	assert_int_equal(hvt_read_file(fifo, "channel map", 100, &text, NULL, &e), -EINVAL);
	assert_non_null(strstr(e.msg, ": it is a FIFO, not a regular file"));
	assert_int_equal(hvt_read_text(fifo, buf, sizeof(buf), &e), -EINVAL);
	assert_non_null(strstr(e.msg, "fifo: a FIFO, not a regular file"));
	alarm(0);
	unlink(fifo);
	rmdir(dir);
}

static void test_read_text(void **state)
{
	struct hvt_err e = {{0}};
	char path[32], buf[8] = "x";

	(void)state;
	temp_file(path, " 0-3 \n\n", 7);
	assert_int_equal(hvt_read_text(path, buf, sizeof(buf), &e), 0);
	assert_string_equal(buf, " 0-3"); /* trailing whitespace goes, leading stays */
	assert_int_equal(hvt_read_text(path, buf, 7, &e), -EFBIG);
	assert_non_null(strstr(e.msg, "longer than 6 bytes"));
	unlink(path);
	assert_int_equal(hvt_read_text(path, buf, sizeof(buf), &e), -ENOENT);
	assert_true(!strncmp(e.msg, path, strlen(path)) && strstr(e.msg, ": No such file"));
	assert_int_equal(hvt_read_text("/dev/zero", buf, sizeof(buf), NULL), -EINVAL);
}

static void test_read_line(void **state)
{
	char path[32], *buf = NULL;
	size_t cap = 0;
	FILE *f;

	(void)state;
	temp_file(path, "a\n\n0123456789\n01234567890\nend", 29);
	assert_non_null(f = fopen(path, "r"));
	assert_int_equal(hvt_read_line(f, 10, &buf, &cap), 1);
	assert_string_equal(buf, "a");
	assert_int_equal(hvt_read_line(f, 10, &buf, &cap), 1);
	assert_string_equal(buf, "");
	assert_int_equal(hvt_read_line(f, 10, &buf, &cap), 1); /* exactly the limit */
	assert_string_equal(buf, "0123456789");
	assert_int_equal(hvt_read_line(f, 10, &buf, &cap), -EFBIG);
	fclose(f);
	unlink(path);
	temp_file(path, "end", 3); /* a last line without a newline still counts */
	assert_non_null(f = fopen(path, "r"));
	assert_int_equal(hvt_read_line(f, 10, &buf, &cap), 1);
	assert_string_equal(buf, "end");
	assert_int_equal(hvt_read_line(f, 10, &buf, &cap), 0);
	fclose(f);
	unlink(path);
	assert_non_null(f = fopen("/dev/zero", "r")); /* NULs count: no newline ever comes */
	assert_int_equal(hvt_read_line(f, 1u << 16, &buf, &cap), -EFBIG);
	fclose(f);
	free(buf);
}

static void test_format_size(void **state)
{
	static const struct {
		uint64_t bytes;
		const char *s;
	} cases[] = {
	    {0, "0 KiB"},
	    {1023, "0 KiB"},
	    {4096, "4 KiB"},
	    {(1ull << 20) - 1024, "1023 KiB"},
	    {1ull << 20, "1.0 MiB"},
	    {1536ull << 10, "1.5 MiB"},
	    {1ull << 30, "1.00 GiB"},
	    {12ull << 30, "12.00 GiB"},
	    {(1ull << 40) + (1ull << 29), "1024.50 GiB"},
	};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		hvt_format_size(cases[i].bytes, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].s);
	}
}

static void test_format_wall(void **state)
{
	char buf[40];

	(void)state;
	hvt_format_wall(0, buf, sizeof(buf));
	assert_string_equal(buf, "1970-01-01T00:00:00.000000Z");
	hvt_format_wall(1234567890123456789ll, buf, sizeof(buf));
	assert_string_equal(buf, "2009-02-13T23:31:30.123456Z");
	hvt_format_wall(-1, buf, sizeof(buf)); /* before 1970 the fraction still counts forwards */
	assert_string_equal(buf, "1969-12-31T23:59:59.999999Z");
	hvt_format_wall_seconds(1234567890999999999ll, buf, sizeof(buf)); /* cut, not rounded */
	assert_string_equal(buf, "2009-02-13T23:31:30Z");
	hvt_format_wall_seconds(-1, buf, sizeof(buf));
	assert_string_equal(buf, "1969-12-31T23:59:59Z");
}

static void test_channel_json(void **state)
{
	struct json_object *o = json_object_new_object();

	(void)state;
	hvt_channel_json_add(o, "s1.mc2.ch0", 1, 2, 0, "uncore_imc_6");
	assert_string_equal(
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
	    "{\"id\":\"s1.mc2.ch0\",\"socket\":1,\"controller\":2,\"channel\":0,\"pmu\":\"uncore_imc_6\"}");
	json_object_put(o);
}

/* A running process is alive; a child that exited is not, whether still a zombie or reaped. */
static void test_process_alive(void **state)
{
	pid_t child;

	(void)state;
	assert_true(hvt_process_alive(getpid()));
	child = fork();
	assert_true(child >= 0);
	if (!child)
		_exit(0);
	while (hvt_process_alive(child)) /* exits at once; then a zombie until reaped */
		usleep(1000);
	assert_int_equal(waitpid(child, NULL, WNOHANG), child); /* it was a zombie, not gone */
	assert_false(hvt_process_alive(child));
}

/* A live process has a start time after boot (field 21 next to it, itrealvalue, is always 0), no earlier
 * than its parent's and no later than its child's, the same when read again; a zombie or reaped child has
 * none. */
static void test_process_start_time(void **state)
{
	unsigned long long me, again, parent, t;
	pid_t child;
	int pipefd[2];
	char c;

	(void)state;
	assert_int_equal(hvt_process_start_time(getpid(), &me), 0);
	assert_int_equal(hvt_process_start_time(getpid(), &again), 0);
	assert_true(me > 0);
	assert_true(me == again);
	assert_int_equal(hvt_process_start_time(getppid(), &parent), 0);
	assert_true(parent <= me);
	assert_int_equal(pipe(pipefd), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		(void)!read(pipefd[0], &c, 1); /* lives until told */
		_exit(0);
	}
	assert_int_equal(hvt_process_start_time(child, &t), 0);
	assert_true(t >= me);
	assert_int_equal(write(pipefd[1], "x", 1), 1);
	close(pipefd[0]);
	close(pipefd[1]);
	while (hvt_process_start_time(child, &t) == 0) /* a zombie has none */
		usleep(1000);
	assert_int_equal(hvt_process_start_time(child, &t), -ESRCH);
	assert_int_equal(waitpid(child, NULL, 0), child);
	assert_int_equal(hvt_process_start_time(child, &t), -ESRCH);
}

/* The reference values of SplitMix64 from seed 0 (the generator of Java's SplittableRandom and of Vigna's
 * splitmix64.c); a changed constant or shift changes them. */
static void test_splitmix64(void **state)
{
	uint64_t s = 0;

	(void)state;
	assert_int_equal(hvt_splitmix64(&s), 0xe220a8397b1dcdafull);
	assert_int_equal(hvt_splitmix64(&s), 0x6e789e6aa1b965f4ull);
	assert_int_equal(hvt_splitmix64(&s), 0x06c45d188009454full);
	assert_int_equal(s, 3 * 0x9e3779b97f4a7c15ull);
}

/* hvt_array_room: room for one more, doubling from 256; a size that would overflow is -ENOMEM, unchanged. */
static void test_array_room(void **state)
{
	uint32_t *v = NULL;
	size_t cap = 0, n;

	(void)state;
	for (n = 0; n < 1000; n++) {
		assert_int_equal(hvt_array_room((void **)&v, &cap, n, sizeof(*v)), 0);
		v[n] = (uint32_t)n;
	}
	assert_int_equal(cap, 1024);
	for (n = 0; n < 1000; n++)
		assert_int_equal(v[n], n);
	assert_int_equal(hvt_array_room((void **)&v, &cap, cap, SIZE_MAX / 1024), -ENOMEM);
	assert_int_equal(cap, 1024);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_durations),          cmocka_unit_test(test_sizes),
	    cmocka_unit_test(test_format_round_trip),  cmocka_unit_test(test_clocks),
	    cmocka_unit_test(test_cpulists),           cmocka_unit_test(test_read_file),
	    cmocka_unit_test(test_read_text),          cmocka_unit_test(test_read_fifo),
	    cmocka_unit_test(test_read_line),          cmocka_unit_test(test_format_size),
	    cmocka_unit_test(test_format_wall),        cmocka_unit_test(test_channel_json),
	    cmocka_unit_test(test_splitmix64),         cmocka_unit_test(test_process_alive),
	    cmocka_unit_test(test_process_start_time), cmocka_unit_test(test_array_room),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
