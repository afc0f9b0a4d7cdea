// SPDX-License-Identifier: MIT
/*
 * The tracer's footing: huge pages (the probe's --hugetlb alternative; /dev/mem guest RAM is always mapped
 * with 4 KiB pages, docs/hardware-notes.md §11.5), the locked memory `record` needs (hvmtrace/record/
 * mem_budget.c, docs/performance.md "Memory") and the capabilities it holds until it drops them
 * (docs/architecture.md §2.5): as this process holds them, and as the systemd unit grants them.
 */
#include <cap-ng.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "doctor/doctor_placement.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/util.h"
#include "record/mem_budget.h"

#define EXAMPLE_GUEST (64ull << 30) /* the guest size the locked-memory figure is given for */

/* What record needs before it drops every capability (hvmtrace/libvirt/hvmtrace@.service says why). */
static const struct {
	const char *name;
	int cap;
	const char *why;
} needed[] = {
    {"CAP_DAC_OVERRIDE", CAP_DAC_OVERRIDE, "reach QEMU's socket in its 0700 directory"},
    {"CAP_SYS_ADMIN", CAP_SYS_ADMIN,
     "perf counters at perf_event_paranoid 3, physical addresses in /proc/iomem"},
    {"CAP_PERFMON", CAP_PERFMON, "perf counters at perf_event_paranoid 1-2"},
    {"CAP_IPC_LOCK", CAP_IPC_LOCK, "lock the run's memory beyond RLIMIT_MEMLOCK"},
    {"CAP_SETPCAP", CAP_SETPCAP, "clear the bounding set when it drops its capabilities"},
};

static uint64_t meminfo(const struct doc_env *env, const char *key)
{
	char path[512], line[256];
	unsigned long long v = 0;
	size_t n = strlen(key);
	FILE *f;

	doc_proc_path(env, "meminfo", path, sizeof(path));
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':' && sscanf(line + n + 1, "%llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

static void read_unit(const struct doc_env *env, struct doc_placement_facts *f)
{
	char path[512], line[512];
	FILE *u;

	snprintf(path, sizeof(path), "%s/hvmtrace@.service", env->units_dir);
	if (!(u = fopen(path, "re")))
		return;
	f->unit_installed = true;
	while (fgets(line, sizeof(line), u)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "CapabilityBoundingSet=", 22))
			snprintf(f->unit_caps, sizeof(f->unit_caps), "%.255s", line + 22);
		else if (!strncmp(line, "LimitMEMLOCK=", 13))
			snprintf(f->unit_memlock, sizeof(f->unit_memlock), "%.31s", line + 13);
	}
	fclose(u);
}

void doc_limits_gather(const struct doc_env *env, struct doc_placement_facts *f)
{
	char path[512];
	struct rlimit rl;

	f->huge_total = meminfo(env, "HugePages_Total");
	f->huge_free = meminfo(env, "HugePages_Free");
	f->huge_size = meminfo(env, "Hugepagesize") << 10;
	doc_sys_path(env, "kernel/mm/transparent_hugepage/enabled", path, sizeof(path));
	(void)hvt_read_text(path, f->thp, sizeof(f->thp), NULL);
	if (!getrlimit(RLIMIT_MEMLOCK, &rl)) {
		f->memlock_cur = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
		f->memlock_max = rl.rlim_max == RLIM_INFINITY ? UINT64_MAX : rl.rlim_max;
	}
	capng_get_caps_process();
	f->cap_sys_admin = capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_ADMIN);
	f->cap_perfmon = capng_have_capability(CAPNG_EFFECTIVE, CAP_PERFMON);
	f->cap_ipc_lock = capng_have_capability(CAPNG_EFFECTIVE, CAP_IPC_LOCK);
	f->cap_sys_rawio = capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_RAWIO);
	f->cap_dac_override = capng_have_capability(CAPNG_EFFECTIVE, CAP_DAC_OVERRIDE);
	read_unit(env, f);
}

static void limit_text(uint64_t v, char *buf, size_t len)
{
	if (v == UINT64_MAX)
		snprintf(buf, len, "unlimited");
	else
		hvt_format_size(v, buf, (unsigned)len);
}

static void judge_memlock(const struct doc_placement_facts *f, struct doc_report *r)
{
	struct mem_budget_in in = {.max_guest_bytes = EXAMPLE_GUEST,
				   .page_size = 4096,
				   .max_slots = HVT_LAYOUT_MAX_SLOTS,
				   .nsets = 2,
				   .retry_copy = true,
				   .max_intervals = 4096};
	uint64_t need = mem_budget_working(&in);
	char need_s[32], cur_s[32], max_s[32];
	struct doc_check *c;
	bool fits = f->cap_ipc_lock || f->memlock_cur >= need || f->memlock_max >= need;

	hvt_format_size(need, need_s, sizeof(need_s));
	limit_text(f->memlock_cur, cur_s, sizeof(cur_s));
	limit_text(f->memlock_max, max_s, sizeof(max_s));
	c = doc_add(
	    r, DOC_PLACEMENT, "memlock", fits ? DOC_YES : DOC_WARN,
	    "record can lock its memory: a 64 GiB guest in mode ad needs about %s of working memory locked%s",
	    need_s,
	    f->cap_ipc_lock ? " (CAP_IPC_LOCK held)"
	    : fits          ? " (within RLIMIT_MEMLOCK)"
			    : ", more than RLIMIT_MEMLOCK allows this process");
	doc_evidence(c, "RLIMIT_MEMLOCK %s (hard %s); the unit sets LimitMEMLOCK=%s; mem_budget_working()",
		     cur_s, max_s, f->unit_memlock[0] ? f->unit_memlock : "(unit not installed)");
	if (!fits)
		doc_fix(c, "run record as root, or raise the limit (ulimit -l, LimitMEMLOCK= in a unit)");
}

static void judge_caps(const struct doc_placement_facts *f, struct doc_report *r)
{
	const bool held[] = {f->cap_dac_override, f->cap_sys_admin, f->cap_perfmon, f->cap_ipc_lock, true};
	char missing[256] = "", unit_missing[256] = "";
	size_t at = 0, uat = 0;
	struct doc_check *c;

	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		if (!held[i] && !(needed[i].cap == CAP_PERFMON && f->cap_sys_admin))
			at += (size_t)snprintf(missing + at, sizeof(missing) - at, "%s%s (%s)",
					       at ? ", " : "", needed[i].name, needed[i].why);
		if (f->unit_installed && !strstr(f->unit_caps, needed[i].name) && uat < sizeof(unit_missing))
			uat += (size_t)snprintf(unit_missing + uat, sizeof(unit_missing) - uat, "%s%s",
						uat ? ", " : "", needed[i].name);
	}
	c = doc_add(r, DOC_PLACEMENT, "caps", missing[0] ? DOC_WARN : DOC_YES,
		    "as this user, record holds %s",
		    missing[0] ? "too few capabilities" : "every capability it needs until it drops them");
	doc_evidence(
	    c,
	    "effective capabilities of this process (libcap-ng); CAP_SYS_RAWIO for /dev/mem is the devmem helper's and QEMU's, not record's");
	if (missing[0])
		doc_fix(c, "run record as root; missing: %s", missing);
	if (!f->unit_installed) {
		c = doc_add(r, DOC_CHAIN, "unit.installed", DOC_NO,
			    "the tracer's systemd unit hvmtrace@.service is not installed");
		doc_fix(
		    c,
		    "make install-libvirt (needed where systemd runs; elsewhere the hook supervises the tracer)");
		return;
	}
	c = doc_add(r, DOC_CHAIN, "unit.installed", unit_missing[0] ? DOC_NO : DOC_YES,
		    "hvmtrace@.service is installed%s%s",
		    unit_missing[0] ? "; its CapabilityBoundingSet lacks "
				    : " and grants record what it needs",
		    unit_missing);
	doc_evidence(c, "CapabilityBoundingSet=%s", f->unit_caps);
	if (unit_missing[0])
		doc_fix(c, "install the unit this hvmtrace ships (make install-libvirt)");
}

void doc_limits_judge(const struct doc_placement_facts *f, struct doc_report *r)
{
	struct doc_check *c;
	char size[32];

	hvt_format_size(f->huge_size, size, sizeof(size));
	c = doc_add(r, DOC_PLACEMENT, "hugepages", DOC_INFO,
		    "%" PRIu64 " hugetlb pages of %s reserved (%" PRIu64 " free); transparent huge pages: %s",
		    f->huge_total, size, f->huge_free, f->thp[0] ? f->thp : "unknown");
	doc_evidence(
	    c,
	    "/proc/meminfo; guest RAM on /dev/mem is mapped with 4 KiB pages whatever these say; chanmap probe --hugetlb can use hugetlb pages instead of a reservation");
	judge_memlock(f, r);
	judge_caps(f, r);
}
