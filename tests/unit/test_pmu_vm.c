// SPDX-License-Identifier: MIT
/*
 * What `hvmtrace record` does for bandwidth, on the stand-in PMU tree (software events posing as IMC
 * channels; needs root here): the channels of a VM come from its layout's devmem extents, in order of first
 * appearance; each interval gets one entry per channel with bytes = 64 × counts; a layout without channel ids
 * records nothing; a channel the host has no counter for is refused by name.
 */
#include <errno.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hvmtrace/error.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/vm_bandwidth.h"

#define STANDIN "tests/fixtures/sysfs/standin/sys"

static struct hvt_extent ext[3] = {
    {.gpa = 0, .hpa = 1ull << 34, .size = 1ull << 30, .channel = "s1.mc0.ch1"},
    {.gpa = 1ull << 30, .hpa = 1ull << 35, .size = 1ull << 30, .channel = "s0.mc0.ch0"},
    {.gpa = 2ull << 30, .hpa = (1ull << 34) + (1ull << 30), .size = 1ull << 30, .channel = "s1.mc0.ch1"},
};

static void layout_with(struct hvt_layout *l, struct hvt_memslot *slot, uint32_t nextents)
{
	*slot = (struct hvt_memslot){.slot = 0,
				     .gpa = 0,
				     .size = 3ull << 30,
				     .backing = "devmem",
				     .nextents = nextents,
				     .extents = ext};
	*l = (struct hvt_layout){.generation = 1, .page_size = 4096, .nslots = 1, .slots = slot};
}

static void test_channels_of_layout(void **state)
{
	struct hvt_layout l;
	struct hvt_memslot slot;
	struct hvt_vm_bw *bw;
	struct hvt_err err = {{0}};
	struct hvt_vm_bw_opts o = {.sysfs_root = STANDIN};
	struct hvt_interval iv = {0};
	struct hvt_trace_meta meta = {0};

	(void)state;
	layout_with(&l, &slot, 3);
	if (hvt_vm_bw_open(&bw, &l, &o, &err)) {
		if (strstr(err.msg, "refused"))
			skip();
		fail_msg("%s", err.msg);
	}
	assert_string_equal(hvt_bw_source_name(hvt_vm_bw_source(bw)), "pmu-stand-in");
	assert_int_equal(hvt_vm_bw_describe(bw, &meta), 0);
	assert_true(meta.bandwidth_available);
	assert_int_equal(meta.channels.n, 2);
	assert_string_equal(meta.channels.v[0].id, "s1.mc0.ch1");
	assert_string_equal(meta.channels.v[1].id, "s0.mc0.ch0");
	assert_non_null(strstr(meta.channels.v[0].source, "stand-in"));
	hvt_trace_meta_fini(&meta);

	nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
	assert_int_equal(hvt_vm_bw_fill(bw, &iv, &err), 0);
	assert_true(iv.flags & HVT_IV_BANDWIDTH);
	assert_false(iv.flags & HVT_IV_BW_TOTAL); /* CAS counters split reads and writes */
	assert_int_equal(iv.nchannels, 2);
	for (uint32_t i = 0; i < 2; i++) {
		assert_int_equal(iv.channels[i].channel, i);
		/* cpu-clock: ≥ 20 ms of nanoseconds, × 64 bytes */
		assert_true(iv.channels[i].read_bytes >= 64ull * 19000000);
		assert_int_equal(iv.channels[i].read_bytes % 64, 0);
	}
	hvt_interval_fini(&iv);
	hvt_vm_bw_close(bw);
}

static void test_no_channels_and_unknown(void **state)
{
	struct hvt_layout l;
	struct hvt_memslot slot;
	struct hvt_vm_bw *bw = (void *)1;
	struct hvt_err err = {{0}};
	struct hvt_vm_bw_opts o = {.sysfs_root = STANDIN};
	struct hvt_interval iv = {0};

	(void)state;
	layout_with(&l, &slot, 0);
	assert_int_equal(hvt_vm_bw_open(&bw, &l, &o, &err), 0);
	assert_null(bw);
	assert_int_equal(hvt_vm_bw_fill(NULL, &iv, &err), 0);
	assert_false(iv.flags & HVT_IV_BANDWIDTH);

	snprintf(ext[1].channel, sizeof(ext[1].channel), "s0.mc2.ch1");
	layout_with(&l, &slot, 3);
	assert_int_equal(hvt_vm_bw_open(&bw, &l, &o, &err), -ENOENT);
	assert_null(bw);
	assert_non_null(strstr(err.msg, "channel s0.mc2.ch1 has no counter"));
	snprintf(ext[1].channel, sizeof(ext[1].channel), "s0.mc0.ch0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_channels_of_layout),
	    cmocka_unit_test(test_no_channels_and_unknown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
