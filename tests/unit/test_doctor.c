// SPDX-License-Identifier: MIT
/*
 * hvmtrace doctor's checks on recorded inputs: KVM module trees (tests/fixtures/kvm), kernel configs, a
 * kernel command line with memmap= reservations against a recorded /proc/iomem and a MODEL chanmap
 * (tests/fixtures/doctor, tests/fixtures/iomem), PMU trees (tests/fixtures/sysfs); the verdict from a
 * table, and the JSON view.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../hvmtrace/doctor/doctor_facts.h"
#include "../../hvmtrace/doctor/doctor_placement.h"

#define KVM "tests/fixtures/kvm/"
#define DOC "tests/fixtures/doctor/"

static void kvm_env(struct doc_env *env, const char *tree, char *sys, char *proc, size_t len)
{
	doc_env_defaults(env);
	snprintf(sys, len, KVM "%s/sys", tree);
	snprintf(proc, len, KVM "%s/proc", tree);
	env->sysfs_root = sys;
	env->proc_root = proc;
	env->kvm_path = "/nonexistent/kvm"; /* the ioctl answers are set by hand below */
}

static const struct doc_check *must(const struct doc_report *r, const char *id, enum doc_status s)
{
	const struct doc_check *c = doc_find(r, id);

	if (!c)
		fail_msg("no check %s", id);
	if (c->status != s)
		fail_msg("check %s is %s, not %s: %s", id, doc_status_name(c->status), doc_status_name(s),
			 c->what);
	return c;
}

static void test_virt_intel(void **state)
{
	char sys[256], proc[256];
	struct doc_env env;
	struct doc_virt_facts f;
	struct doc_report r = {0};

	(void)state;
	kvm_env(&env, "intel-ept", sys, proc, sizeof(sys));
	doc_virt_gather(&env, &f);
	assert_string_equal(f.vendor, "GenuineIntel");
	assert_true(f.vmx);
	assert_false(f.svm);
	assert_true(f.kvm.present && !f.kvm.builtin && !f.kvm.out_of_tree);
	assert_true(f.kvm_intel.present);
	assert_false(f.kvm_amd.present);
	assert_int_equal(f.ept, 'Y');
	assert_int_equal(f.eptad, 'Y');
	assert_int_equal(f.pml, 'Y');
	assert_int_equal(f.npt, 0);
	assert_string_equal(f.release, "6.12.117+deb12-amd64");
	assert_false(f.kvm_dev);
	assert_int_equal(f.cap_ad, -1);

	/* Debian's own KVM answering without the capability: build the modules of the 6.12 series. */
	f.kvm_dev = true;
	f.api_version = 12;
	f.cap_ad = 0;
	doc_virt_judge(&f, &r);
	must(&r, "cpu.virt", DOC_YES);
	must(&r, "kvm.dev", DOC_YES);
	const struct doc_check *c = must(&r, "kvm.ad_harvest", DOC_NO);
	assert_non_null(strstr(c->fix, "make kvm-modules KVER=6.12.117+deb12-amd64"));
	assert_non_null(strstr(c->fix, "qemu-patches/kvm/6.12"));
	assert_null(doc_find(&r, "kvm.eptad"));
	c = must(&r, "record.modes", DOC_INFO);
	assert_non_null(strstr(c->what, "would use dirty-log"));
	doc_report_free(&r);
}

static void test_virt_eptad_off(void **state)
{
	char sys[256], proc[256];
	struct doc_env env;
	struct doc_virt_facts f;
	struct doc_report r = {0};

	(void)state;
	kvm_env(&env, "intel-eptad-off", sys, proc, sizeof(sys));
	doc_virt_gather(&env, &f);
	assert_int_equal(f.eptad, 'N');
	f.kvm_dev = true;
	f.cap_ad = 1;
	doc_virt_judge(&f, &r);
	must(&r, "kvm.ad_harvest", DOC_YES);
	const struct doc_check *c = must(&r, "kvm.eptad", DOC_WARN);
	assert_non_null(strstr(c->what, "written means mapped writable"));
	doc_report_free(&r);
}

/* The AMD lab's L1: our modules, loaded out of tree, with the capability: mode ad. */
static void test_virt_amd_lab(void **state)
{
	char sys[256], proc[256];
	struct doc_env env;
	struct doc_virt_facts f;
	struct doc_report r = {0};

	(void)state;
	kvm_env(&env, "amd-lab", sys, proc, sizeof(sys));
	doc_virt_gather(&env, &f);
	assert_true(f.svm);
	assert_true(f.hypervisor);
	assert_true(f.kvm.out_of_tree && f.kvm_amd.out_of_tree);
	assert_int_equal(f.npt, 'Y');
	f.kvm_dev = true;
	f.cap_ad = 1;
	doc_virt_judge(&f, &r);
	must(&r, "cpu.virt", DOC_YES);
	const struct doc_check *c = must(&r, "kvm.ad_harvest", DOC_YES);
	assert_non_null(strstr(c->what, "series for 6.12"));
	assert_non_null(strstr(c->evidence, "outside the kernel's tree (taint O)"));
	assert_non_null(strstr(c->evidence, "vermagic): 6.12.117+deb12-amd64"));
	c = must(&r, "record.modes", DOC_INFO);
	assert_non_null(strstr(c->what, "would use ad"));
	c = must(&r, "kvm.modules", DOC_INFO);
	assert_non_null(strstr(c->what, "kvm_amd (loaded, out of tree)"));
	assert_non_null(strstr(c->evidence, "kvm_amd npt=Y"));
	doc_report_free(&r);
}

/* The Intel lab's L1 (Bochs): our modules out of tree, EPT with A/D bits and PML, no hypervisor flag. The
 * parameters are read as sysfs prints them, and the CPU's evidence names exactly the flags it has. */
static void test_virt_intel_lab(void **state)
{
	char sys[256], proc[256];
	struct doc_env env;
	struct doc_virt_facts f;
	struct doc_report r = {0};

	(void)state;
	kvm_env(&env, "intel-lab", sys, proc, sizeof(sys));
	doc_virt_gather(&env, &f);
	assert_true(f.vmx);
	assert_false(f.svm || f.hypervisor);
	assert_true(f.kvm.out_of_tree && f.kvm_intel.out_of_tree);
	assert_int_equal(f.ept, 'Y');
	assert_int_equal(f.eptad, 'Y');
	assert_int_equal(f.pml, 'Y');
	assert_int_equal(f.tdp_mmu, 'Y');
	f.kvm_dev = true;
	f.api_version = 12;
	f.cap_ad = 1;
	doc_virt_judge(&f, &r);
	const struct doc_check *c = must(&r, "cpu.virt", DOC_YES);
	assert_string_equal(c->what, "GenuineIntel CPU with VMX (Intel VT-x)");
	assert_string_equal(c->evidence,
			    "cpuinfo: vendor GenuineIntel, model 'Intel(R) Core(TM) i7-7800X CPU @ "
			    "3.50GHz', flags: vmx");
	c = must(&r, "kvm.modules", DOC_INFO);
	assert_string_equal(c->what,
			    "KVM modules: kvm (loaded, out of tree), kvm_intel (loaded, out of tree)");
	assert_non_null(strstr(c->evidence, "parameters: kvm_intel ept=Y eptad=Y pml=Y, kvm tdp_mmu=Y"));
	assert_null(doc_find(&r, "kvm.eptad"));
	assert_null(doc_find(&r, "kvm.shadow"));
	c = must(&r, "kvm.ad_harvest", DOC_YES);
	assert_non_null(strstr(c->what, "series for 6.12, running on 6.12.117+deb12-amd64"));
	c = must(&r, "record.modes", DOC_INFO);
	assert_non_null(strstr(c->what, "would use ad"));
	doc_report_free(&r);
}

/* This development host: PVM, kvm built in, no VMX/SVM, KVM without the capability. */
static void test_virt_pvm(void **state)
{
	char sys[256], proc[256];
	struct doc_env env;
	struct doc_virt_facts f;
	struct doc_report r = {0};

	(void)state;
	kvm_env(&env, "pvm", sys, proc, sizeof(sys));
	doc_virt_gather(&env, &f);
	assert_true(f.kvm.builtin && f.kvm_pvm.builtin);
	assert_int_equal(f.tdp_mmu, 'N');
	f.kvm_dev = true;
	f.cap_ad = 0;
	doc_virt_judge(&f, &r);
	const struct doc_check *c = must(&r, "cpu.virt", DOC_NO);
	assert_non_null(strstr(c->fix, "itself a virtual machine"));
	must(&r, "kvm.pvm", DOC_WARN);
	c = must(&r, "kvm.ad_harvest", DOC_NO);
	assert_non_null(strstr(c->fix, "kvm is built into this kernel"));
	assert_non_null(strstr(c->fix, "6.1 or 6.12")); /* no series for 6.18 */
	doc_report_free(&r);
}

static void test_virt_no_kvm(void **state)
{
	struct doc_virt_facts f = {.vendor = "GenuineIntel", .vmx = true, .cap_ad = -1};
	struct doc_report r = {0};

	(void)state;
	doc_virt_judge(&f, &r);
	const struct doc_check *c = must(&r, "kvm.dev", DOC_NO);
	assert_non_null(strstr(c->fix, "modprobe kvm_intel"));
	must(&r, "kvm.ad_harvest", DOC_NO);
	assert_non_null(strstr(must(&r, "record.modes", DOC_INFO)->what, "no mode on KVM"));
	doc_report_free(&r);
}

/* A sparse regular file standing in for /dev/mem, long enough for the reservations' offsets. */
static void sparse_mem(char *path, size_t len)
{
	snprintf(path, len, "/tmp/test_doctor_mem.XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 0xb00000000ll), 0);
	close(fd);
}

static void placement_env(struct doc_env *env, const char *mem)
{
	doc_env_defaults(env);
	env->cmdline = DOC "cmdline-reserved";
	env->iomem = "tests/fixtures/iomem/booted-8g.iomem";
	env->kernel_config = DOC "config-debian";
	env->chanmap = DOC "chanmap-2s6c-hole.json";
	env->mem_path = mem;
	env->units_dir = "hvmtrace/libvirt"; /* the unit this tree ships */
}

static void test_placement_reserved(void **state)
{
	char mem[64];
	struct doc_env env;
	struct doc_placement_facts *f = calloc(1, sizeof(*f));
	struct doc_report r = {0};

	(void)state;
	sparse_mem(mem, sizeof(mem));
	placement_env(&env, mem);
	doc_placement_gather(&env, f);
	assert_int_equal(f->devmem_cfg, 'y');
	assert_int_equal(f->strict_devmem, 'y');
	assert_int_equal(f->io_strict_devmem, 'y');
	assert_false(f->iomem_relaxed);
	assert_true(f->mem_exists);
	assert_int_equal(f->mem_errno, 0);
	assert_int_equal(f->nres, 2);
	assert_int_equal(f->res[0].start, 0x7b4000000);
	assert_int_equal(f->res[0].size, 8ull << 30);
	assert_string_equal(f->res[0].iomem_problem, "");
	assert_string_equal(f->res[0].channel, "s0.mc1.ch0");
	assert_true(f->res[0].mappable);
	assert_true(doc_reservation_usable(&f->res[0]));
	assert_non_null(strstr(f->res[1].iomem_problem, "pmem0")); /* busy: claimed by a driver */
	assert_false(doc_reservation_usable(&f->res[1]));
	assert_true(f->unit_installed);
	assert_non_null(strstr(f->unit_caps, "CAP_PERFMON"));
	assert_string_equal(f->unit_memlock, "infinity");

	doc_placement_judge(&env, f, &r);
	must(&r, "devmem", DOC_YES);
	must(&r, "devmem.strict", DOC_INFO);
	must(&r, "memmap.0x7b4000000", DOC_YES);
	must(&r, "memmap.0xa40000000", DOC_NO);
	const struct doc_check *c = must(&r, "chanmap.0x7b4000000", DOC_YES);
	assert_non_null(strstr(c->what, "channel s0.mc1.ch0"));
	c = must(&r, "chanmap", DOC_WARN); /* a MODEL map, not measured on this host */
	assert_non_null(strstr(c->fix, "not measured on hardware"));
	must(&r, "unit.installed", DOC_YES);
	doc_report_free(&r);
	unlink(mem);
	free(f);
}

/* This host's kernel: no /dev/mem at all, the config says why; no reservation, no map. */
static void test_placement_no_devmem(void **state)
{
	struct doc_env env;
	struct doc_placement_facts *f = calloc(1, sizeof(*f));
	struct doc_report r = {0};

	(void)state;
	placement_env(&env, "/nonexistent/mem");
	env.kernel_config = DOC "config-nodevmem.gz";
	env.cmdline = "tests/fixtures/doctor/README.md"; /* any text without memmap= */
	env.chanmap = NULL;
	env.units_dir = "/nonexistent";
	doc_placement_gather(&env, f);
	assert_int_equal(f->devmem_cfg, 'n');
	assert_int_equal(f->strict_devmem, 'n');
	assert_int_equal(f->nres, 0);
	doc_placement_judge(&env, f, &r);
	const struct doc_check *c = must(&r, "devmem", DOC_NO);
	assert_non_null(strstr(c->what, "CONFIG_DEVMEM is not set"));
	must(&r, "memmap", DOC_NO);
	must(&r, "unit.installed", DOC_NO);
	assert_null(doc_find(&r, "devmem.strict"));
	doc_report_free(&r);
	free(f);
}

/* A chanmap that places the reservation across channels: the reservation is not on one channel. */
static void test_placement_chanmap_disagrees(void **state)
{
	char mem[64], cmd[] = "/tmp/test_doctor_cmd.XXXXXX";
	struct doc_env env;
	struct doc_placement_facts *f = calloc(1, sizeof(*f));
	struct doc_report r = {0};
	int fd = mkstemp(cmd);

	(void)state;
	assert_true(fd >= 0);
	/* 0x7b4000000 + 12 GiB runs past s0.mc1.ch0's 10 GiB into s0.mc1.ch1 */
	assert_true(write(fd, "memmap=12G$0x7b4000000\n", 23) == 23);
	close(fd);
	sparse_mem(mem, sizeof(mem));
	placement_env(&env, mem);
	env.cmdline = cmd;
	doc_placement_gather(&env, f);
	doc_placement_judge(&env, f, &r);
	const struct doc_check *c = must(&r, "chanmap.0x7b4000000", DOC_NO);
	assert_non_null(strstr(c->what, "does not lie in one channel"));
	doc_report_free(&r);
	unlink(mem);
	unlink(cmd);
	free(f);
}

/* With the real device, a recorded iomem is not believed: the self-test would write where it says. */
static void test_placement_recorded_iomem_needs_a_file(void **state)
{
	struct doc_env env;
	struct doc_placement_facts *f = calloc(1, sizeof(*f));

	(void)state;
	placement_env(&env, "/dev/null"); /* a character device, as /dev/mem is */
	doc_placement_gather(&env, f);
	assert_int_equal(f->nres, 2);
	/* checked against this host's own /proc/iomem, where 0x7b4000000 is no reservation */
	assert_string_not_equal(f->res[0].iomem_problem, "");
	assert_false(doc_reservation_usable(&f->res[0]));
	free(f);
}

static void add(struct doc_report *r, const char *id, enum doc_status s)
{
	doc_add(r, DOC_VIRT, id, s, "%s is %s", id, doc_status_name(s));
}

static void test_verdict(void **state)
{
	struct doc_report r = {0};
	unsigned all = (1u << DOC_NCAPS) - 1;

	(void)state;
	add(&r, "kvm.dev", DOC_YES);
	add(&r, "kvm.ad_harvest", DOC_NO);
	add(&r, "qemu.patched", DOC_YES);
	add(&r, "pmu.discovery", DOC_NO);
	assert_int_equal(doc_verdict(&r, all), 1);
	assert_true(r.v.yes[DOC_CAP_DIRTY_LOG]);
	assert_false(r.v.yes[DOC_CAP_AD]);
	assert_non_null(strstr(r.v.because[DOC_CAP_AD], "kvm.ad_harvest is no"));
	assert_false(r.v.yes[DOC_CAP_BANDWIDTH]);
	assert_non_null(strstr(r.v.because[DOC_CAP_BANDWIDTH], "pmu.discovery is no"));
	assert_int_equal(doc_verdict(&r, 1u << DOC_CAP_DIRTY_LOG), 0); /* only dirty-log asked for */

	/* Everything for bandwidth, but a self-test that counted half: no. */
	doc_report_free(&r);
	add(&r, "kvm.dev", DOC_YES);
	add(&r, "kvm.ad_harvest", DOC_YES);
	add(&r, "qemu.patched", DOC_YES);
	add(&r, "pmu.discovery", DOC_YES);
	add(&r, "devmem", DOC_YES);
	add(&r, "memmap.0x900000000", DOC_NO);
	add(&r, "memmap.0xa00000000", DOC_YES); /* one usable reservation is enough */
	add(&r, "chanmap", DOC_YES);
	add(&r, "chanmap.0xa00000000", DOC_YES);
	assert_int_equal(doc_verdict(&r, all), 0);
	assert_true(r.v.yes[DOC_CAP_BANDWIDTH]);
	add(&r, "selftest.pmu.s0.mc1.ch0.read", DOC_NO);
	assert_int_equal(doc_verdict(&r, all), 1);
	assert_false(r.v.yes[DOC_CAP_BANDWIDTH]);
	assert_non_null(strstr(r.v.because[DOC_CAP_BANDWIDTH], "selftest.pmu.s0.mc1.ch0.read"));
	assert_int_equal(doc_verdict(&r, 1u << DOC_CAP_AD), 0);
	doc_report_free(&r);

	/* A check that was never made is not a yes. */
	add(&r, "kvm.dev", DOC_YES);
	assert_int_equal(doc_verdict(&r, 1u << DOC_CAP_DIRTY_LOG), 1);
	assert_non_null(strstr(r.v.because[DOC_CAP_DIRTY_LOG], "qemu.patched was not checked"));
	doc_report_free(&r);
}

static void test_json_view(void **state)
{
	struct doc_report r = {0};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_object *o, *v;

	(void)state;
	struct doc_check *c = doc_add(&r, DOC_COUNTERS, "selftest.pmu.s0.mc1.ch0.read", DOC_NO, "half");
	c->fig = (struct doc_figure){true, 1000, 500, 0.5, 0.9, 1.3};
	doc_fix(c, "the fix");
	add(&r, "kvm.dev", DOC_YES);
	int status = doc_verdict(&r, 1u << DOC_CAP_AD);
	assert_int_equal(doc_print_json(&r, 1u << DOC_CAP_AD, status, f), 0);
	fclose(f);
	o = json_tokener_parse(buf);
	assert_non_null(o);
	assert_true(json_object_object_get_ex(o, "schema", &v));
	assert_string_equal(json_object_get_string(v), "hvmtrace-doctor");
	assert_true(json_object_object_get_ex(o, "checks", &v));
	assert_int_equal(json_object_array_length(v), 2);
	json_object *c0 = json_object_array_get_idx(v, 0), *x;
	assert_true(json_object_object_get_ex(c0, "status", &x));
	assert_string_equal(json_object_get_string(x), "no");
	assert_true(json_object_object_get_ex(c0, "group", &x));
	assert_string_equal(json_object_get_string(x), "counters");
	assert_true(json_object_object_get_ex(c0, "ratio", &x));
	assert_true(json_object_get_double(x) == 0.5);
	assert_true(json_object_object_get_ex(o, "verdict", &v));
	assert_true(json_object_object_get_ex(v, "ad", &x));
	json_object *avail, *asked;
	assert_true(json_object_object_get_ex(x, "available", &avail));
	assert_false(json_object_get_boolean(avail));
	assert_true(json_object_object_get_ex(x, "asked", &asked));
	assert_true(json_object_get_boolean(asked));
	assert_true(json_object_object_get_ex(o, "exit", &v));
	assert_int_equal(json_object_get_int(v), 1);
	json_object_put(o);
	free(buf);
	doc_report_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_virt_intel),
	    cmocka_unit_test(test_virt_eptad_off),
	    cmocka_unit_test(test_virt_amd_lab),
	    cmocka_unit_test(test_virt_intel_lab),
	    cmocka_unit_test(test_virt_pvm),
	    cmocka_unit_test(test_virt_no_kvm),
	    cmocka_unit_test(test_placement_reserved),
	    cmocka_unit_test(test_placement_no_devmem),
	    cmocka_unit_test(test_placement_chanmap_disagrees),
	    cmocka_unit_test(test_placement_recorded_iomem_needs_a_file),
	    cmocka_unit_test(test_verdict),
	    cmocka_unit_test(test_json_view),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
