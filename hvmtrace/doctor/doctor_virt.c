// SPDX-License-Identifier: MIT
/*
 * Virtualisation: the CPU's VMX/SVM, /dev/kvm, the KVM modules and the parameters that decide which MMU
 * walker a harvest takes (docs/kvm-ad.md), whether KVM offers KVM_CAP_AD_HARVEST (our series,
 * docs/architecture.md §2.4), and so which mode `record --mode auto` would use (architecture §2.6).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "doctor/doctor_facts.h"
#include "hvmtrace/kvm_ad.h"
#include "hvmtrace/util.h"

/* The kernels qemu-patches/kvm/ carries a series for (one directory each). */
static const char *const series[] = {"6.1", "6.12"};

/* vendor_id, model name and flags of the first processor. */
static void read_cpuinfo(const struct doc_env *env, struct doc_virt_facts *f)
{
	char path[512], *line = NULL;
	size_t cap = 0;
	FILE *in;

	doc_proc_path(env, "cpuinfo", path, sizeof(path));
	if (!(in = fopen(path, "re")))
		return;
	while (hvt_read_line(in, 1 << 16, &line, &cap) == 1 && line[0]) {
		const char *v = strchr(line, ':');

		if (!v)
			continue;
		v += v[1] == ' ' ? 2 : 1;
		if (!strncmp(line, "vendor_id", 9))
			snprintf(f->vendor, sizeof(f->vendor), "%s", v);
		else if (!strncmp(line, "model name", 10))
			snprintf(f->model_name, sizeof(f->model_name), "%s", v);
		else if (!strncmp(line, "flags", 5)) {
			f->vmx = doc_has_word(v, "vmx");
			f->svm = doc_has_word(v, "svm");
			f->hypervisor = doc_has_word(v, "hypervisor");
		}
	}
	free(line);
	fclose(in);
}

static void read_module(const struct doc_env *env, const char *name, struct doc_kvm_module *m)
{
	char path[512], buf[64];
	struct stat st;

	snprintf(path, sizeof(path), "%s/module/%s", env->sysfs_root, name);
	m->present = !stat(path, &st);
	snprintf(path, sizeof(path), "%s/module/%s/initstate", env->sysfs_root, name);
	m->builtin = m->present && stat(path, &st) != 0;
	snprintf(path, sizeof(path), "%s/module/%s/taint", env->sysfs_root, name);
	m->out_of_tree = m->present && !hvt_read_text(path, buf, sizeof(buf), NULL) && strchr(buf, 'O');
}

static char read_param(const struct doc_env *env, const char *module, const char *param)
{
	char path[512], buf[16];

	snprintf(path, sizeof(path), "%s/module/%s/parameters/%s", env->sysfs_root, module, param);
	if (hvt_read_text(path, buf, sizeof(buf), NULL))
		return 0;
	/* bool parameters read Y or N (kernel/params.c param_get_bool); some older ones 1 or 0. */
	return buf[0] == 'Y' || buf[0] == '1' ? 'Y' : 'N';
}

static void ask_kvm(const struct doc_env *env, struct doc_virt_facts *f)
{
	struct stat st;
	int fd;

	f->cap_ad = -1;
	f->kvm_dev = !stat(env->kvm_path, &st);
	if (!f->kvm_dev)
		return;
	fd = open(env->kvm_path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		f->kvm_errno = errno;
		return;
	}
	f->api_version = ioctl(fd, KVM_GET_API_VERSION, 0);
	if (f->api_version < 0) {
		f->kvm_errno = errno;
	} else {
		int cap = ioctl(fd, KVM_CHECK_EXTENSION, KVM_CAP_AD_HARVEST);

		f->cap_ad = cap > 0 ? 1 : 0;
	}
	close(fd);
}

void doc_virt_gather(const struct doc_env *env, struct doc_virt_facts *f)
{
	char path[512];

	memset(f, 0, sizeof(*f));
	read_cpuinfo(env, f);
	doc_proc_path(env, "sys/kernel/osrelease", path, sizeof(path));
	if (hvt_read_text(path, f->release, sizeof(f->release), NULL))
		snprintf(f->release, sizeof(f->release), "unknown");
	read_module(env, "kvm", &f->kvm);
	read_module(env, "kvm_intel", &f->kvm_intel);
	read_module(env, "kvm_amd", &f->kvm_amd);
	read_module(env, "kvm_pvm", &f->kvm_pvm);
	f->ept = read_param(env, "kvm_intel", "ept");
	f->eptad = read_param(env, "kvm_intel", "eptad");
	f->pml = read_param(env, "kvm_intel", "pml");
	f->npt = read_param(env, "kvm_amd", "npt");
	f->tdp_mmu = read_param(env, "kvm", "tdp_mmu");
	ask_kvm(env, f);
}

/* "6.12" of "6.12.117+deb12-amd64" if a series exists for it, else NULL. */
static const char *series_for(const char *release)
{
	for (size_t i = 0; i < sizeof(series) / sizeof(series[0]); i++) {
		size_t n = strlen(series[i]);

		if (!strncmp(release, series[i], n) && (release[n] == '.' || release[n] == '-'))
			return series[i];
	}
	return NULL;
}

static void judge_cpu(const struct doc_virt_facts *f, struct doc_report *r)
{
	struct doc_check *c;

	if (f->vmx || f->svm) {
		c = doc_add(r, DOC_VIRT, "cpu.virt", DOC_YES, "%s CPU with %s",
			    f->vendor[0] ? f->vendor : "an x86", f->vmx ? "VMX (Intel VT-x)" : "SVM (AMD-V)");
	} else {
		c = doc_add(r, DOC_VIRT, "cpu.virt", DOC_NO,
			    "%s CPU without VMX or SVM: no hardware virtualisation is exposed to this kernel",
			    f->vendor[0] ? f->vendor : "this");
		doc_fix(
		    c, "%s",
		    f->hypervisor
			? "this host is itself a virtual machine: run on bare metal, or have the hypervisor below expose VMX/SVM (nested virtualisation)"
			: "enable VT-x or AMD-V (SVM) in the firmware setup");
	}
	char flags[64] = "";

	if (f->vmx)
		strcat(flags, " vmx");
	if (f->svm)
		strcat(flags, " svm");
	if (f->hypervisor)
		strcat(flags, " hypervisor");
	doc_evidence(c, "cpuinfo: vendor %s, model '%s', flags:%s", f->vendor[0] ? f->vendor : "?",
		     f->model_name, flags[0] ? flags : " (none of vmx, svm, hypervisor)");
}

static void judge_dev(const struct doc_virt_facts *f, struct doc_report *r)
{
	struct doc_check *c;

	if (!f->kvm_dev) {
		c = doc_add(r, DOC_VIRT, "kvm.dev", DOC_NO, "/dev/kvm does not exist: KVM is not loaded");
		doc_fix(c, "modprobe %s (and enable VT-x/AMD-V in the firmware)",
			f->vmx   ? "kvm_intel"
			: f->svm ? "kvm_amd"
				 : "kvm_intel or kvm_amd");
		return;
	}
	if (f->kvm_errno) {
		c = doc_add(r, DOC_VIRT, "kvm.dev", DOC_NO, "/dev/kvm cannot be used: %s",
			    strerror(f->kvm_errno));
		doc_fix(c, "%s",
			f->kvm_errno == EACCES || f->kvm_errno == EPERM
			    ? "run as root, or add the user to the kvm group"
			    : "check dmesg for KVM's own message");
		return;
	}
	c = doc_add(r, DOC_VIRT, "kvm.dev", DOC_YES, "/dev/kvm answers (KVM API version %d)", f->api_version);
	doc_evidence(c, "open and KVM_GET_API_VERSION on /dev/kvm");
}

static void describe_module(char *buf, size_t len, const char *name, const struct doc_kvm_module *m)
{
	size_t at = strlen(buf);

	if (m->present && at < len)
		snprintf(buf + at, len - at, "%s%s (%s)", at ? ", " : "", name,
			 m->builtin       ? "built into the kernel"
			 : m->out_of_tree ? "loaded, out of tree"
					  : "loaded");
}

static void judge_modules(const struct doc_virt_facts *f, struct doc_report *r)
{
	char mods[256] = "", params[160] = "";
	struct doc_check *c;

	describe_module(mods, sizeof(mods), "kvm", &f->kvm);
	describe_module(mods, sizeof(mods), "kvm_intel", &f->kvm_intel);
	describe_module(mods, sizeof(mods), "kvm_amd", &f->kvm_amd);
	describe_module(mods, sizeof(mods), "kvm_pvm", &f->kvm_pvm);
	if (f->kvm_intel.present)
		snprintf(params, sizeof(params), "kvm_intel ept=%c eptad=%c pml=%c", f->ept ? f->ept : '?',
			 f->eptad ? f->eptad : '?', f->pml ? f->pml : '?');
	else if (f->kvm_amd.present)
		snprintf(params, sizeof(params), "kvm_amd npt=%c", f->npt ? f->npt : '?');
	if (f->tdp_mmu) {
		size_t at = strlen(params);
		snprintf(params + at, sizeof(params) - at, "%skvm tdp_mmu=%c", at ? ", " : "", f->tdp_mmu);
	}
	c = doc_add(r, DOC_VIRT, "kvm.modules", mods[0] ? DOC_INFO : DOC_NO, "KVM modules: %s",
		    mods[0] ? mods : "none");
	doc_evidence(c, "/sys/module/*/initstate and taint; parameters: %s",
		     params[0] ? params : "none read");
	if (f->kvm_pvm.present)
		doc_add(
		    r, DOC_VIRT, "kvm.pvm", DOC_WARN,
		    "KVM here is PVM (kvm_pvm): software virtualisation on the shadow MMU, not VMX or SVM");
	if (f->kvm_intel.present && f->ept == 'Y' && f->eptad == 'N') {
		c = doc_add(
		    r, DOC_VIRT, "kvm.eptad", DOC_WARN,
		    "kvm_intel eptad=N: EPT has no A/D bits, so mode ad reports access tracking: written means mapped writable");
		doc_evidence(
		    c, "docs/hardware-notes.md §10.5 (age_gfn_range in arch/x86/kvm/mmu/tdp_mmu.c, 6.12)");
		doc_fix(c, "load kvm_intel with eptad=1 (the default where the CPU supports it)");
	}
	if ((f->kvm_intel.present && f->ept == 'N') || (f->kvm_amd.present && f->npt == 'N'))
		doc_add(
		    r, DOC_VIRT, "kvm.shadow", DOC_INFO,
		    "two-dimensional paging is off (%s): harvests walk the shadow MMU (patch 3 of the series)",
		    f->kvm_intel.present ? "ept=N" : "npt=N");
}

/* Why KVM_CAP_AD_HARVEST is missing, and what to do: depends on whether KVM can be replaced by modules. */
static void ad_missing(const struct doc_virt_facts *f, struct doc_check *c)
{
	const char *s = series_for(f->release);

	if (f->kvm.builtin)
		doc_fix(
		    c,
		    "kvm is built into this kernel (no /sys/module/kvm/initstate), so replacement modules cannot be loaded: boot %s with kvm as modules (CONFIG_KVM=m, as Debian builds it) and load the ones `make kvm-modules` builds for it",
		    s ? "a kernel of this series"
		      : "a Linux 6.1 or 6.12 kernel (the series qemu-patches/kvm/ carries)");
	else if (!s)
		doc_fix(
		    c,
		    "there is no series for Linux %s (qemu-patches/kvm/ has 6.1 and 6.12): boot one of those",
		    f->release);
	else
		doc_fix(
		    c,
		    "build the replacement modules for this kernel with `make kvm-modules KVER=%s` (series qemu-patches/kvm/%s) and load them as scripts/kvm-modules.sh prints",
		    f->release, s);
}

static void judge_ad(const struct doc_virt_facts *f, struct doc_report *r)
{
	struct doc_check *c;

	if (f->cap_ad < 0) {
		c = doc_add(r, DOC_VIRT, "kvm.ad_harvest", DOC_NO,
			    "KVM_CAP_AD_HARVEST cannot be asked for: /dev/kvm is not usable");
		doc_fix(c, "see /dev/kvm above");
	} else if (f->cap_ad == 0) {
		c = doc_add(
		    r, DOC_VIRT, "kvm.ad_harvest", DOC_NO,
		    "KVM does not offer KVM_CAP_AD_HARVEST: the running KVM (%s) is not built with hvmtrace's series",
		    f->kvm_pvm.present ? "kvm with kvm_pvm" : "kvm");
		ad_missing(f, c);
	} else {
		const char *s = series_for(f->release);

		c = doc_add(r, DOC_VIRT, "kvm.ad_harvest", DOC_YES,
			    "KVM offers KVM_CAP_AD_HARVEST: hvmtrace's series%s%s, running on %s",
			    s ? " for " : "", s ? s : "", f->release);
	}
	doc_evidence(c, "KVM_CHECK_EXTENSION(KVM_CAP_AD_HARVEST = 0x%x) on /dev/kvm%s; kvm %s%s%s",
		     KVM_CAP_AD_HARVEST,
		     f->cap_ad < 0 ? " not asked"
		     : f->cap_ad   ? " = 1"
				   : " = 0",
		     f->kvm.builtin       ? "built into the kernel"
		     : f->kvm.out_of_tree ? "a module from outside the kernel's tree (taint O)"
		     : f->kvm.present     ? "a module of the kernel's own tree"
					  : "absent",
		     f->kvm.present && !f->kvm.builtin
			 ? "; a module loads only into the kernel it was built for (vermagic): "
			 : "",
		     f->kvm.present && !f->kvm.builtin ? f->release : "");
}

static void judge_modes(const struct doc_virt_facts *f, struct doc_report *r)
{
	struct doc_check *c;
	bool kvm_ok = f->kvm_dev && !f->kvm_errno;

	if (kvm_ok && f->cap_ad == 1)
		c = doc_add(
		    r, DOC_VIRT, "record.modes", DOC_INFO,
		    "record --mode auto would use ad (accessed and written sets); dirty-log remains available");
	else if (kvm_ok)
		c = doc_add(
		    r, DOC_VIRT, "record.modes", DOC_INFO,
		    "record --mode auto would use dirty-log (written sets only): the VMM offers ad only where KVM has KVM_CAP_AD_HARVEST");
	else
		c = doc_add(
		    r, DOC_VIRT, "record.modes", DOC_INFO,
		    "record has no mode on KVM here: without a usable /dev/kvm only a TCG VMM (dirty-log, emulated) can be traced");
	doc_evidence(
	    c,
	    "modes in --mode auto's order: ad, dirty-ring, dirty-log (hvmtrace/record/harvest.c); the VMM offers ad when KVM_CHECK_EXTENSION says so, dirty-ring in place of dirty-log when its vCPUs run on KVM's dirty ring (hvmtrace-vmm --dirty-ring, patched QEMU with -accel kvm,dirty-ring-size=N)");
}

void doc_virt_judge(const struct doc_virt_facts *f, struct doc_report *r)
{
	judge_cpu(f, r);
	judge_dev(f, r);
	judge_modules(f, r);
	judge_ad(f, r);
	judge_modes(f, r);
}

void doc_check_virt(const struct doc_env *env, struct doc_report *r)
{
	struct doc_virt_facts f;

	doc_virt_gather(env, &f);
	doc_virt_judge(&f, r);
}
