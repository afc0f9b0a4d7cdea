// SPDX-License-Identifier: MIT
/*
 * PMU discovery on recorded sysfs trees (tests/fixtures/sysfs, built from the kernel's definitions: see its
 * README): every channel with the right socket, controller, channel, CPU, perf type and config, including
 * GNR's two summed sub-channels before and after the kernel's per-scheduler alias change; the encoder on
 * format/ strings; the libpfm4 cross-check (LIBPFM_ENCODE_INACTIVE=1 with explicit PMU prefixes, since no
 * such PMU exists here); and the errors for trees without a memory-controller PMU.
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
#include "hvmtrace/pmu.h"

#define FIX "tests/fixtures/sysfs/"

struct want_channel {
	const char *id, *pmu;
	int box, cpu, socket, controller, channel;
};

/* The expected channels, one row each, written out (not computed by the rule under test). */
static const struct want_channel want_skx[] = {
    {"s0.mc0.ch0", "uncore_imc_0", 0, 0, 0, 0, 0},  {"s0.mc0.ch1", "uncore_imc_1", 1, 0, 0, 0, 1},
    {"s0.mc0.ch2", "uncore_imc_2", 2, 0, 0, 0, 2},  {"s0.mc1.ch0", "uncore_imc_3", 3, 0, 0, 1, 0},
    {"s0.mc1.ch1", "uncore_imc_4", 4, 0, 0, 1, 1},  {"s0.mc1.ch2", "uncore_imc_5", 5, 0, 0, 1, 2},
    {"s1.mc0.ch0", "uncore_imc_0", 0, 28, 1, 0, 0}, {"s1.mc0.ch1", "uncore_imc_1", 1, 28, 1, 0, 1},
    {"s1.mc0.ch2", "uncore_imc_2", 2, 28, 1, 0, 2}, {"s1.mc1.ch0", "uncore_imc_3", 3, 28, 1, 1, 0},
    {"s1.mc1.ch1", "uncore_imc_4", 4, 28, 1, 1, 1}, {"s1.mc1.ch2", "uncore_imc_5", 5, 28, 1, 1, 2},
};
static const struct want_channel want_icx[] = {
    {"s0.mc0.ch0", "uncore_imc_0", 0, 0, 0, 0, 0},    {"s0.mc0.ch1", "uncore_imc_1", 1, 0, 0, 0, 1},
    {"s0.mc0.ch2", "uncore_imc_2", 2, 0, 0, 0, 2},    {"s0.mc1.ch0", "uncore_imc_3", 3, 0, 0, 1, 0},
    {"s0.mc1.ch1", "uncore_imc_4", 4, 0, 0, 1, 1},    {"s0.mc1.ch2", "uncore_imc_5", 5, 0, 0, 1, 2},
    {"s0.mc2.ch0", "uncore_imc_6", 6, 0, 0, 2, 0},    {"s0.mc2.ch1", "uncore_imc_7", 7, 0, 0, 2, 1},
    {"s0.mc2.ch2", "uncore_imc_8", 8, 0, 0, 2, 2},    {"s0.mc3.ch0", "uncore_imc_9", 9, 0, 0, 3, 0},
    {"s0.mc3.ch1", "uncore_imc_10", 10, 0, 0, 3, 1},  {"s0.mc3.ch2", "uncore_imc_11", 11, 0, 0, 3, 2},
    {"s1.mc0.ch0", "uncore_imc_0", 0, 40, 1, 0, 0},   {"s1.mc0.ch1", "uncore_imc_1", 1, 40, 1, 0, 1},
    {"s1.mc0.ch2", "uncore_imc_2", 2, 40, 1, 0, 2},   {"s1.mc1.ch0", "uncore_imc_3", 3, 40, 1, 1, 0},
    {"s1.mc1.ch1", "uncore_imc_4", 4, 40, 1, 1, 1},   {"s1.mc1.ch2", "uncore_imc_5", 5, 40, 1, 1, 2},
    {"s1.mc2.ch0", "uncore_imc_6", 6, 40, 1, 2, 0},   {"s1.mc2.ch1", "uncore_imc_7", 7, 40, 1, 2, 1},
    {"s1.mc2.ch2", "uncore_imc_8", 8, 40, 1, 2, 2},   {"s1.mc3.ch0", "uncore_imc_9", 9, 40, 1, 3, 0},
    {"s1.mc3.ch1", "uncore_imc_10", 10, 40, 1, 3, 1}, {"s1.mc3.ch2", "uncore_imc_11", 11, 40, 1, 3, 2},
};
static const struct want_channel want_spr[] = {
    {"s0.mc0.ch0", "uncore_imc_0", 0, 0, 0, 0, 0},  {"s0.mc0.ch1", "uncore_imc_1", 1, 0, 0, 0, 1},
    {"s0.mc1.ch0", "uncore_imc_2", 2, 0, 0, 1, 0},  {"s0.mc1.ch1", "uncore_imc_3", 3, 0, 0, 1, 1},
    {"s0.mc2.ch0", "uncore_imc_4", 4, 0, 0, 2, 0},  {"s0.mc2.ch1", "uncore_imc_5", 5, 0, 0, 2, 1},
    {"s0.mc3.ch0", "uncore_imc_6", 6, 0, 0, 3, 0},  {"s0.mc3.ch1", "uncore_imc_7", 7, 0, 0, 3, 1},
    {"s1.mc0.ch0", "uncore_imc_0", 0, 56, 1, 0, 0}, {"s1.mc0.ch1", "uncore_imc_1", 1, 56, 1, 0, 1},
    {"s1.mc1.ch0", "uncore_imc_2", 2, 56, 1, 1, 0}, {"s1.mc1.ch1", "uncore_imc_3", 3, 56, 1, 1, 1},
    {"s1.mc2.ch0", "uncore_imc_4", 4, 56, 1, 2, 0}, {"s1.mc2.ch1", "uncore_imc_5", 5, 56, 1, 2, 1},
    {"s1.mc3.ch0", "uncore_imc_6", 6, 56, 1, 3, 0}, {"s1.mc3.ch1", "uncore_imc_7", 7, 56, 1, 3, 1},
};
static const struct want_channel want_gnr[] = {
    {"s0.mc0.ch0", "uncore_imc_0", 0, 0, 0, 0, 0},      {"s0.mc1.ch0", "uncore_imc_1", 1, 0, 0, 1, 0},
    {"s0.mc2.ch0", "uncore_imc_2", 2, 0, 0, 2, 0},      {"s0.mc3.ch0", "uncore_imc_3", 3, 0, 0, 3, 0},
    {"s0.mc4.ch0", "uncore_imc_4", 4, 0, 0, 4, 0},      {"s0.mc5.ch0", "uncore_imc_5", 5, 0, 0, 5, 0},
    {"s0.mc6.ch0", "uncore_imc_6", 6, 0, 0, 6, 0},      {"s0.mc7.ch0", "uncore_imc_7", 7, 0, 0, 7, 0},
    {"s0.mc8.ch0", "uncore_imc_8", 8, 0, 0, 8, 0},      {"s0.mc9.ch0", "uncore_imc_9", 9, 0, 0, 9, 0},
    {"s0.mc10.ch0", "uncore_imc_10", 10, 0, 0, 10, 0},  {"s0.mc11.ch0", "uncore_imc_11", 11, 0, 0, 11, 0},
    {"s1.mc0.ch0", "uncore_imc_0", 0, 96, 1, 0, 0},     {"s1.mc1.ch0", "uncore_imc_1", 1, 96, 1, 1, 0},
    {"s1.mc2.ch0", "uncore_imc_2", 2, 96, 1, 2, 0},     {"s1.mc3.ch0", "uncore_imc_3", 3, 96, 1, 3, 0},
    {"s1.mc4.ch0", "uncore_imc_4", 4, 96, 1, 4, 0},     {"s1.mc5.ch0", "uncore_imc_5", 5, 96, 1, 5, 0},
    {"s1.mc6.ch0", "uncore_imc_6", 6, 96, 1, 6, 0},     {"s1.mc7.ch0", "uncore_imc_7", 7, 96, 1, 7, 0},
    {"s1.mc8.ch0", "uncore_imc_8", 8, 96, 1, 8, 0},     {"s1.mc9.ch0", "uncore_imc_9", 9, 96, 1, 9, 0},
    {"s1.mc10.ch0", "uncore_imc_10", 10, 96, 1, 10, 0}, {"s1.mc11.ch0", "uncore_imc_11", 11, 96, 1, 11, 0},
};
static const struct want_channel want_amd[] = {
    {"s0.mc0.ch0", "amd_umc_0", 0, 0, 0, 0, 0},      {"s0.mc1.ch0", "amd_umc_1", 1, 0, 0, 1, 0},
    {"s0.mc2.ch0", "amd_umc_2", 2, 0, 0, 2, 0},      {"s0.mc3.ch0", "amd_umc_3", 3, 0, 0, 3, 0},
    {"s0.mc4.ch0", "amd_umc_4", 4, 0, 0, 4, 0},      {"s0.mc5.ch0", "amd_umc_5", 5, 0, 0, 5, 0},
    {"s0.mc6.ch0", "amd_umc_6", 6, 0, 0, 6, 0},      {"s0.mc7.ch0", "amd_umc_7", 7, 0, 0, 7, 0},
    {"s0.mc8.ch0", "amd_umc_8", 8, 0, 0, 8, 0},      {"s0.mc9.ch0", "amd_umc_9", 9, 0, 0, 9, 0},
    {"s0.mc10.ch0", "amd_umc_10", 10, 0, 0, 10, 0},  {"s0.mc11.ch0", "amd_umc_11", 11, 0, 0, 11, 0},
    {"s1.mc0.ch0", "amd_umc_12", 12, 96, 1, 0, 0},   {"s1.mc1.ch0", "amd_umc_13", 13, 96, 1, 1, 0},
    {"s1.mc2.ch0", "amd_umc_14", 14, 96, 1, 2, 0},   {"s1.mc3.ch0", "amd_umc_15", 15, 96, 1, 3, 0},
    {"s1.mc4.ch0", "amd_umc_16", 16, 96, 1, 4, 0},   {"s1.mc5.ch0", "amd_umc_17", 17, 96, 1, 5, 0},
    {"s1.mc6.ch0", "amd_umc_18", 18, 96, 1, 6, 0},   {"s1.mc7.ch0", "amd_umc_19", 19, 96, 1, 7, 0},
    {"s1.mc8.ch0", "amd_umc_20", 20, 96, 1, 8, 0},   {"s1.mc9.ch0", "amd_umc_21", 21, 96, 1, 9, 0},
    {"s1.mc10.ch0", "amd_umc_22", 22, 96, 1, 10, 0}, {"s1.mc11.ch0", "amd_umc_23", 23, 96, 1, 11, 0},
};

struct want_gen {
	const char *tree;
	enum hvt_pmu_gen gen;
	const struct want_channel *rows;
	unsigned nrows, nsockets, nsub;
	int type_base;                                     /* the fixture's perf type of box 0 */
	uint64_t rd[HVT_PMU_MAX_SUB], wr[HVT_PMU_MAX_SUB]; /* configs, per sub-channel */
	const char *rd_alias[HVT_PMU_MAX_SUB];             /* the events/ file used, "" = the table's terms */
	bool inferred;
};

#define ROWS(a) a, sizeof(a) / sizeof(a[0])

static const struct want_gen gens[] = {
    {"skx", HVT_GEN_SKX, ROWS(want_skx), 2, 1, 20, {0x304}, {0xc04}, {"cas_count_read"}, false},
    {"icx", HVT_GEN_ICX, ROWS(want_icx), 2, 1, 20, {0xf04}, {0x3004}, {"cas_count_read"}, false},
    {"spr", HVT_GEN_SPR, ROWS(want_spr), 2, 1, 20, {0xcf05}, {0xf005}, {"cas_count_read"}, true},
    /* Before commit 6a8a48644c4b: cas_count_read is SCH0 only; SCH1 comes from the table. */
    {"gnr-legacy",
     HVT_GEN_GNR,
     ROWS(want_gnr),
     2,
     2,
     20,
     {0xcf05, 0xcf06},
     {0xf005, 0xf006},
     {"cas_count_read", ""},
     true},
    {"gnr-sch",
     HVT_GEN_GNR,
     ROWS(want_gnr),
     2,
     2,
     20,
     {0xcf05, 0xcf06},
     {0xf005, 0xf006},
     {"cas_count_read_sch0", "cas_count_read_sch1"},
     true},
    {"amd-zen4", HVT_GEN_AMD_UMC, ROWS(want_amd), 2, 1, 30, {0x10a}, {0x20a}, {""}, true},
};

static void discover_tree(const char *tree, struct hvt_pmu_host *h)
{
	char root[256];
	struct hvt_err err = {{0}};
	struct hvt_pmu_source src = {.sysfs_root = root};
	int rc;

	snprintf(root, sizeof(root), FIX "%s/sys", tree);
	rc = hvt_pmu_discover(h, &src, &err);
	if (rc)
		fail_msg("%s: %s", tree, err.msg);
}

static void test_generations(void **state)
{
	(void)state;
	for (size_t g = 0; g < sizeof(gens) / sizeof(gens[0]); g++) {
		const struct want_gen *w = &gens[g];
		struct hvt_pmu_host h;

		discover_tree(w->tree, &h);
		assert_int_equal(h.gen, w->gen);
		assert_int_equal(h.nchannels, w->nrows);
		assert_int_equal(h.nsockets, w->nsockets);
		assert_false(h.stand_in);
		for (unsigned i = 0; i < w->nrows; i++) {
			const struct want_channel *r = &w->rows[i];
			const struct hvt_pmu_channel *c = &h.channels[i];

			assert_string_equal(c->id, r->id);
			assert_string_equal(c->pmu, r->pmu);
			assert_int_equal(c->box, r->box);
			assert_int_equal(c->cpu, r->cpu);
			assert_int_equal(c->socket, r->socket);
			assert_int_equal(c->controller, r->controller);
			assert_int_equal(c->channel, r->channel);
			assert_int_equal(c->type, w->type_base + r->box);
			assert_int_equal(c->nsub, w->nsub);
			assert_int_equal(c->inferred, w->inferred);
			assert_false(c->stand_in);
			for (unsigned s = 0; s < w->nsub; s++) {
				assert_int_equal(c->read[s].config, w->rd[s]);
				assert_int_equal(c->write[s].config, w->wr[s]);
				assert_int_equal(c->read[s].config1, 0);
				assert_string_equal(c->read[s].alias, w->rd_alias[s]);
			}
			assert_ptr_equal(hvt_pmu_find_channel(&h, r->id), c);
		}
		assert_null(hvt_pmu_find_channel(&h, "s9.mc0.ch0"));
		hvt_pmu_host_fini(&h);
	}
}

/* The free-running PMUs sit next to the channel PMUs on ICX/SPR and must never be taken for channels. */
static void test_free_running_excluded(void **state)
{
	struct hvt_pmu_host h;

	(void)state;
	assert_int_equal(access(FIX "icx/sys/bus/event_source/devices/uncore_imc_free_running_0/type", R_OK),
			 0);
	discover_tree("icx", &h);
	for (unsigned i = 0; i < h.nchannels; i++)
		assert_null(strstr(h.channels[i].pmu, "free_running"));
	assert_non_null(strstr(h.note, "channel 2"));
	hvt_pmu_host_fini(&h);
}

static void test_encode_terms(void **state)
{
	struct hvt_pmu_event ev;
	struct hvt_err err = {{0}};
	const char *spr = FIX "spr/sys/devices/uncore_imc_0", *amd = FIX "amd-zen4/sys/devices/amd_umc_0";

	(void)state;
	/* umask_ext4 "config:8-15,32-55": bits beyond 8 of umask continue at config bit 32. */
	assert_int_equal(hvt_pmu_encode_terms(spr, "event=0x05,umask=0x1cf", &ev, &err), 0);
	assert_int_equal(ev.config, 0x1ull << 32 | 0xcf05);
	assert_int_equal(hvt_pmu_encode_terms(spr, "event=0xff,edge,inv", &ev, &err), 0);
	assert_int_equal(ev.config, 0xff | 1ull << 18 | 1ull << 23);
	assert_int_equal(hvt_pmu_encode_terms(amd, "event=0x0a,rdwrmask=0x3", &ev, &err), 0);
	assert_int_equal(ev.config, 0x30a);
	assert_int_equal(hvt_pmu_encode_terms(amd, "config=0x1234", &ev, &err), 0);
	assert_int_equal(ev.config, 0x1234);
	/* rdwrmask is 2 bits wide; event is 8 */
	assert_int_equal(hvt_pmu_encode_terms(amd, "event=0x0a,rdwrmask=0x4", &ev, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "does not fit"));
	assert_int_equal(hvt_pmu_encode_terms(amd, "event=0x100", &ev, &err), -EINVAL);
	assert_int_equal(hvt_pmu_encode_terms(amd, "umask=0x1", &ev, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "umask"));
	assert_int_equal(hvt_pmu_encode_terms(amd, "event=zz", &ev, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "not a number"));
}

/*
 * libpfm4's own event tables agree with ours. Its IMC PMUs are absent here, so encoding needs
 * LIBPFM_ENCODE_INACTIVE and an explicit PMU ("skx_unc_imc3::UNC_M_CAS_COUNT:RD"). Debian bookworm's 4.13
 * knows SNB-EP … SKX; newer ones also ICX and SPR, which are then checked too.
 */
static void test_libpfm_cross_check(void **state)
{
	static const struct {
		enum hvt_pmu_gen gen;
		int boxes;
		uint64_t rd, wr;
	} classic[] = {{HVT_GEN_SNBEP, 4, 0x304, 0xc04},
		       {HVT_GEN_IVT, 8, 0x304, 0xc04},
		       {HVT_GEN_HSX, 8, 0x304, 0xc04},
		       {HVT_GEN_BDX, 8, 0x304, 0xc04},
		       {HVT_GEN_SKX, 6, 0x304, 0xc04}};
	unsigned checked = 0;
	uint64_t code;
	char name[128];

	(void)state;
	setenv("LIBPFM_ENCODE_INACTIVE", "1", 1);
	for (size_t g = 0; g < sizeof(classic) / sizeof(classic[0]); g++)
		for (int b = 0; b < classic[g].boxes; b++) {
			assert_int_equal(
			    hvt_pmu_libpfm_code(classic[g].gen, b, false, 0, &code, name, sizeof(name)), 0);
			assert_int_equal(code, classic[g].rd);
			assert_int_equal(hvt_pmu_libpfm_code(classic[g].gen, b, true, 0, &code, NULL, 0), 0);
			assert_int_equal(code, classic[g].wr);
			checked++;
		}
	/* Every fixture channel libpfm4 has a model for: its code equals what discovery encoded from sysfs.
	 */
	for (size_t g = 0; g < sizeof(gens) / sizeof(gens[0]); g++) {
		struct hvt_pmu_host h;

		discover_tree(gens[g].tree, &h);
		for (unsigned i = 0; i < h.nchannels; i++) {
			const struct hvt_pmu_channel *c = &h.channels[i];

			if (hvt_pmu_libpfm_code(h.gen, c->box, false, 0, &code, name, sizeof(name)))
				continue;
			assert_int_equal(code, c->read[0].config);
			assert_int_equal(hvt_pmu_libpfm_code(h.gen, c->box, true, 0, &code, NULL, 0), 0);
			assert_int_equal(code, c->write[0].config);
			checked++;
		}
		hvt_pmu_host_fini(&h);
	}
	assert_true(checked >= 34 + 12); /* the classic boxes and at least every SKX channel */
	/* libpfm4 has no GNR uncore model and no second scheduler anywhere. */
	assert_int_equal(hvt_pmu_libpfm_code(HVT_GEN_GNR, 0, false, 0, &code, NULL, 0), -ENOENT);
	assert_int_equal(hvt_pmu_libpfm_code(HVT_GEN_AMD_UMC, 0, false, 0, &code, NULL, 0), -ENOENT);
	print_message("libpfm4 cross-checked %u boxes/channels\n", checked);
}

static void expect_error(const char *root, const char *cpuinfo, int want, const char *text)
{
	struct hvt_pmu_host h;
	struct hvt_err err = {{0}};
	struct hvt_pmu_source src = {.sysfs_root = root, .cpuinfo = cpuinfo};

	assert_int_equal(hvt_pmu_discover(&h, &src, &err), want);
	if (!strstr(err.msg, text))
		fail_msg("error '%s' does not say '%s'", err.msg, text);
	assert_null(h.channels);
}

static void test_errors(void **state)
{
	(void)state;
	/* This host's own /sys (a VM: software, breakpoint, msr … but no memory controller). */
	if (access("/sys/bus/event_source/devices/uncore_imc_0", F_OK) &&
	    access("/sys/bus/event_source/devices/amd_umc_0", F_OK))
		expect_error(NULL, NULL, -ENODEV, "modprobe intel_uncore");
	expect_error(FIX "standin/sys/no-such", NULL, -ENODEV, "not a sysfs tree");
	/* A tree whose CPU is not in the table. */
	expect_error(FIX "skx/sys", FIX "amd-zen4/proc/cpuinfo", -EINVAL, "not in hvmtrace's table");
	expect_error(FIX "skx/sys", FIX "skx/nothing", -ENOENT, "CPU model");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_generations),  cmocka_unit_test(test_free_running_excluded),
	    cmocka_unit_test(test_encode_terms), cmocka_unit_test(test_libpfm_cross_check),
	    cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
