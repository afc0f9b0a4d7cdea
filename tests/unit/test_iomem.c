// SPDX-License-Identifier: MIT
/* /proc/iomem, /sys/firmware/memmap and memmap=: fixtures, and this host's real files. */
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
#include <unistd.h>

#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/iomem.h"

#define FIX "tests/fixtures/iomem/"
#define G   (1ull << 30)

static void test_parse_fixture(void **state)
{
	struct hvt_iomem io;
	struct hvt_err e;

	(void)state;
	assert_int_equal(hvt_iomem_read(FIX "booted-8g.iomem", &io, &e), 0);
	assert_false(io.hidden);
	assert_int_equal(io.n, 26);
	int k = hvt_iomem_find(&io, 0x01000000);
	assert_true(k >= 0);
	assert_string_equal(io.entries[k].name, "Kernel code");
	assert_int_equal(io.entries[k].depth, 1);
	assert_string_equal(io.entries[io.entries[k].parent].name, "System RAM");
	k = hvt_iomem_find(&io, 0xa40000000);
	assert_string_equal(io.entries[k].name, "pmem0");
	assert_int_equal(io.entries[k].end, 0xa7fffffff);
	hvt_iomem_free(&io);

	assert_int_equal(hvt_iomem_read(FIX "hidden.iomem", &io, &e), 0);
	assert_true(io.hidden);
	assert_int_equal(hvt_iomem_check_extent(&io, 0x7b4000000, 8 * G, &e), -EPERM);
	assert_non_null(strstr(e.msg, "CAP_SYS_ADMIN"));
	hvt_iomem_free(&io);

	assert_int_equal(hvt_iomem_read(FIX "bad-indent.iomem", &io, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "line 2"));
	assert_int_equal(hvt_iomem_read(FIX "none.iomem", &io, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "none.iomem"));
}

/* The extent rules, each broken once. */
static void test_extent_rules(void **state)
{
	static const struct {
		uint64_t start, size;
		int rc;
		const char *says;
	} cases[] = {
	    {0x7b4000000, 8 * G, 0, ""},          /* the whole memmap=8G$0x7b4000000 */
	    {0x7b4000000 + G, G, 0, ""},          /* a part of it */
	    {0x7b4000800, G, -EINVAL, "aligned"}, /* not page aligned */
	    {0x7b4000000, 0, -EINVAL, "empty"},
	    {0x7b4000000, 8 * G + 4096, -ERANGE, "System RAM"}, /* one page too far */
	    {0x100000000, G, -ERANGE, "System RAM"},
	    {0xa40000000, G, -EBUSY, "pmem0"},      /* Reserved but claimed by a driver */
	    {0xc0000000, 4096, -ERANGE, "PCI Bus"}, /* MMIO, not Reserved */
	    {0xfec00000, 4096, -ERANGE, "IOAPIC"},
	};
	struct hvt_iomem io;
	struct hvt_err e;

	(void)state;
	assert_int_equal(hvt_iomem_read(FIX "booted-8g.iomem", &io, &e), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		e.msg[0] = '\0';
		int rc = hvt_iomem_check_extent(&io, cases[i].start, cases[i].size, &e);
		if (rc != cases[i].rc || !strstr(e.msg, cases[i].says))
			fail_msg("case %zu: rc %d (want %d), message '%s' (want '%s')", i, rc, cases[i].rc,
				 e.msg, cases[i].says);
	}
	hvt_iomem_free(&io);
}

static void test_fwmap_and_user_reserved(void **state)
{
	struct hvt_iomem io;
	struct hvt_fwmap fw;
	struct hvt_range *r;
	struct hvt_err e;
	size_t n;

	(void)state;
	assert_int_equal(hvt_fwmap_read(FIX "fwmap", &fw, &e), 0);
	assert_int_equal(fw.n, 8);
	assert_int_equal(fw.entries[5].start, 0x100000000);
	assert_int_equal(hvt_fwmap_check_ram(&fw, 0x100000000, 8 * G, &e), 0);
	assert_int_equal(hvt_fwmap_check_ram(&fw, 0x1430000000, G, &e),
			 -ERANGE); /* over the firmware Reserved */
	assert_non_null(strstr(e.msg, "'Reserved'"));
	assert_int_equal(hvt_fwmap_check_ram(&fw, 0xbff00000, 0x40200000, &e), -ERANGE); /* into the hole */
	assert_int_equal(hvt_fwmap_check_ram(&fw, 0x1db0000000, 2 * G, &e), -ERANGE);    /* past the end */
	assert_non_null(strstr(e.msg, "hole"));
	assert_int_equal(hvt_fwmap_check_ram(&fw, 0x0, 0x9f000, &e), 0);

	/* What memmap=$ took from RAM: the 8 GiB, not the firmware's own Reserved, not the busy one. */
	assert_int_equal(hvt_iomem_read(FIX "booted-8g.iomem", &io, &e), 0);
	assert_int_equal(hvt_iomem_user_reserved(&io, &fw, &r, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(r[0].start, 0x7b4000000);
	assert_int_equal(r[0].size, 8 * G);
	free(r);
	hvt_iomem_free(&io);
	hvt_fwmap_free(&fw);
	assert_int_equal(hvt_fwmap_read(FIX "none", &fw, &e), -ENOENT);
}

static void test_memmap_argument(void **state)
{
	struct hvt_range *r;
	struct hvt_err e;
	size_t n;
	char buf[64];

	(void)state;
	hvt_memmap_format(0x900000000, 16 * G, buf, sizeof(buf));
	assert_string_equal(buf, "16G$0x900000000");
	hvt_memmap_format(0x80000000, 256ull << 20, buf, sizeof(buf));
	assert_string_equal(buf, "256M$0x80000000");
	hvt_memmap_format(0x7b4000000, 0x1000 * 3, buf, sizeof(buf));
	assert_string_equal(buf, "12K$0x7b4000000");
	hvt_memmap_format(0x10000, 0x1200, buf, sizeof(buf));
	assert_string_equal(buf, "0x1200$0x10000");

	assert_int_equal(
	    hvt_memmap_parse_cmdline(
		"BOOT_IMAGE=/vmlinuz root=/dev/sda1 memmap=16G$0x900000000 memmap=64K$0x18690000,4G@8G,1G$36G quiet memmap=2G!8G",
		&r, &n, &e),
	    0);
	assert_int_equal(n, 3);
	assert_int_equal(r[0].start, 0x900000000);
	assert_int_equal(r[0].size, 16 * G);
	assert_int_equal(r[1].start, 0x18690000);
	assert_int_equal(r[1].size, 64 << 10);
	assert_int_equal(r[2].start, 36 * G);
	free(r);
	/* Every size formatted reads back. */
	for (uint64_t size = 4096; size < 64 * G; size = size * 3 + 4096) {
		char arg[80];
		hvt_memmap_format(0x100000000, size, buf, sizeof(buf));
		snprintf(arg, sizeof(arg), "memmap=%s", buf);
		assert_int_equal(hvt_memmap_parse_cmdline(arg, &r, &n, &e), 0);
		assert_int_equal(n, 1);
		assert_int_equal(r[0].size, size);
		free(r);
	}
	assert_int_equal(hvt_memmap_parse_cmdline("quiet", &r, &n, &e), 0);
	assert_int_equal(n, 0);
	free(r);
	assert_int_equal(hvt_memmap_parse_cmdline("memmap=16G$zz", &r, &n, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "16G$zz"));
	assert_int_equal(hvt_memmap_parse_cmdline("memmap=lots$0x1000", &r, &n, &e), -EINVAL);
}

/* This host's real /proc/iomem and firmware map: they parse, agree where they must, and the rules refuse
 * RAM the kernel uses. */
static void test_this_host(void **state)
{
	struct hvt_iomem io;
	struct hvt_fwmap fw;
	struct hvt_err e;
	size_t ram = 0;

	(void)state;
	if (access(HVT_IOMEM_PATH, R_OK))
		skip();
	assert_int_equal(hvt_iomem_read(NULL, &io, &e), 0);
	assert_int_equal(io.hidden, geteuid() != 0);
	for (size_t i = 0; i < io.n; i++) {
		const struct hvt_iomem_entry *x = &io.entries[i];
		if (x->parent >= 0) {
			const struct hvt_iomem_entry *p = &io.entries[x->parent];
			assert_true(p->depth + 1 == x->depth);
			if (!io.hidden)
				assert_true(p->start <= x->start && x->end <= p->end); /* children nest */
		}
		if (x->depth || strcmp(x->name, "System RAM") || io.hidden)
			continue;
		ram++;
		uint64_t s = (x->start + 4095) & ~4095ull;
		if (x->end > s + 4096)
			assert_int_equal(hvt_iomem_check_extent(&io, s, 4096, &e), -ERANGE);
	}
	if (io.hidden) {
		hvt_iomem_free(&io);
		skip();
	}
	assert_true(ram > 0);
	int k = hvt_iomem_find(&io, io.entries[0].start);
	assert_true(k >= 0);
	/* Without memmap=, every top-level System RAM range is RAM in the firmware map too. */
	if (!hvt_fwmap_read(NULL, &fw, &e)) {
		for (size_t i = 0; i < io.n; i++) {
			const struct hvt_iomem_entry *x = &io.entries[i];
			if (!x->depth && !strcmp(x->name, "System RAM"))
				if (hvt_fwmap_check_ram(&fw, x->start & ~4095ull,
							(x->end + 1 - (x->start & ~4095ull)) & ~4095ull, &e))
					fail_msg("iomem RAM %jx-%jx: %s", (uintmax_t)x->start,
						 (uintmax_t)x->end, e.msg);
		}
		hvt_fwmap_free(&fw);
	}
	hvt_iomem_free(&io);
}

/* A firmware map of more entries than any machine has is refused at the limit, with the limit named. */
static void test_fwmap_bounded(void **state)
{
	char dir[] = "/tmp/test_iomem.XXXXXX", path[96], cmd[128];
	struct hvt_err e = {{0}};
	struct hvt_fwmap fw;

	(void)state;
	assert_non_null(mkdtemp(dir));
	for (int i = 0; i <= HVT_FWMAP_MAX_ENTRIES; i++) {
		static const char *const files[] = {"start", "end", "type"};
		static const char *const text[] = {"0x0\n", "0xfff\n", "System RAM\n"};

		snprintf(path, sizeof(path), "%s/%d", dir, i);
		assert_int_equal(mkdir(path, 0700), 0);
		for (int f = 0; f < 3; f++) {
			FILE *o;

			snprintf(path, sizeof(path), "%s/%d/%s", dir, i, files[f]);
			assert_non_null(o = fopen(path, "w"));
			fputs(text[f], o);
			fclose(o);
		}
	}
	assert_int_equal(hvt_fwmap_read(dir, &fw, &e), -EFBIG);
	assert_non_null(strstr(e.msg, "has more than 4096 entries, the most read"));
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_fixture),           cmocka_unit_test(test_extent_rules),
	    cmocka_unit_test(test_fwmap_and_user_reserved), cmocka_unit_test(test_fwmap_bounded),
	    cmocka_unit_test(test_memmap_argument),         cmocka_unit_test(test_this_host),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
