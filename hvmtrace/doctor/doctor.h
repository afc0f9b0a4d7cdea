/* SPDX-License-Identifier: MIT */
/*
 * `hvmtrace doctor` (docs/doctor.md): what this host can trace, each finding with its evidence and its fix.
 * The checks fill one small typed table (struct doc_report); the text and --json views only render it, and
 * the verdict is computed from it by check id. One file per group of checks:
 *   doctor_virt.c       virtualisation: CPU, /dev/kvm, KVM modules and parameters, KVM_CAP_AD_HARVEST
 *   doctor_placement.c  memory placement: /dev/mem, memmap= reservations, the chanmap, huge pages, locks
 *   doctor_counters.c   counters: PMU discovery, perf_event_paranoid, the bandwidth self-tests
 *   doctor_chain.c      the rest of the chain: QEMU, libvirt and its hook, the unit, cgroups, output
 *   doctor_verdict.c    the closing verdict and the exit status
 */
#ifndef HVT_DOCTOR_DOCTOR_H
#define HVT_DOCTOR_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum doc_group { DOC_VIRT, DOC_PLACEMENT, DOC_COUNTERS, DOC_CHAIN, DOC_NGROUPS };

/* What a check found. NO is what the verdict counts against a capability. */
enum doc_status {
	DOC_YES,  /* present and usable */
	DOC_NO,   /* missing or broken: the fix says what to do */
	DOC_WARN, /* usable, with a caveat */
	DOC_INFO, /* a fact worth knowing, no judgement */
	DOC_SKIP, /* not checked, and why (nothing to check it on) */
};

/* A measured figure some checks carry (the self-tests): counted / moved bytes and the band it must fall in.
 */
struct doc_figure {
	bool set;
	uint64_t moved, counted;
	double ratio, lo, hi;
};

struct doc_check {
	enum doc_group group;
	char id[64]; /* stable key, e.g. "kvm.ad_harvest", "selftest.pmu.s0.mc1.ch0.read" */
	enum doc_status status;
	char what[768];     /* the finding, one sentence */
	char evidence[768]; /* where it was read or measured */
	char fix[512];      /* what to do about a NO or WARN; "" when nothing */
	struct doc_figure fig;
};

/* The capabilities of the verdict (docs/doctor.md "The verdict"). */
enum doc_cap { DOC_CAP_DIRTY_LOG, DOC_CAP_AD, DOC_CAP_BANDWIDTH, DOC_NCAPS };

struct doc_verdict {
	bool yes[DOC_NCAPS];
	char because[DOC_NCAPS][1400];
};

struct doc_report {
	struct doc_check *c;
	size_t n, cap;
	bool oom; /* a check could not be recorded: the report says so */
	struct doc_verdict v;
	double seconds; /* how long the doctor took */
};

/* Where the doctor looks: the running host by default; tests point these at recorded trees. */
struct doc_env {
	const char *sysfs_root;    /* "/sys" */
	const char *proc_root;     /* "/proc" */
	const char *iomem;         /* NULL: PROC/iomem */
	const char *cmdline;       /* NULL: PROC/cmdline */
	const char *kernel_config; /* NULL: /boot/config-RELEASE, else PROC/config.gz */
	const char *mem_path;      /* "/dev/mem" */
	const char *kvm_path;      /* "/dev/kvm" */
	const char *chanmap;       /* NULL: /etc/hvmtrace/chanmap.json when it exists */
	const char *resctrl_root;  /* "/sys/fs/resctrl" */
	const char *qemu;          /* NULL: qemu-system-x86_64 on PATH */
	const char *output_dir;    /* "/var/lib/hvmtrace" */
	const char *hooks_dir;     /* "/etc/libvirt/hooks/qemu.d" */
	const char *units_dir;     /* "/etc/systemd/system" */
	bool selftest;             /* run the bandwidth self-tests where counters exist */
	uint64_t selftest_bytes;   /* 0: sized from the LLC */
};

void doc_env_defaults(struct doc_env *env);
/* PROC/leaf (or SYSFS/leaf) into buf. */
void doc_proc_path(const struct doc_env *env, const char *leaf, char *buf, size_t len);
void doc_sys_path(const struct doc_env *env, const char *leaf, char *buf, size_t len);

/* Whether word stands in text as a whole word (between blanks, newlines or the text's ends). */
bool doc_has_word(const char *text, const char *word);

/* ---- the table (doctor_report.c) ---- */

/* Adds a check; never NULL (on ENOMEM a scratch entry, and r->oom is set). */
struct doc_check *doc_add(struct doc_report *r, enum doc_group g, const char *id, enum doc_status s,
			  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void doc_evidence(struct doc_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void doc_fix(struct doc_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The check with this id, or NULL. */
const struct doc_check *doc_find(const struct doc_report *r, const char *id);
void doc_report_free(struct doc_report *r);

const char *doc_status_name(enum doc_status s); /* "yes", "no", "warn", "info", "skip" */
const char *doc_group_name(enum doc_group g);   /* "virtualisation", … */
const char *doc_cap_name(enum doc_cap c);       /* "dirty-log", "ad", "bandwidth" */

/* The two views. needed: the capabilities the user asked for (bit per enum doc_cap). */
void doc_print_text(const struct doc_report *r, unsigned needed, FILE *f);
int doc_print_json(const struct doc_report *r, unsigned needed, int exit_status, FILE *f);

/* ---- the groups ---- */

void doc_check_virt(const struct doc_env *env, struct doc_report *r);
void doc_check_placement(const struct doc_env *env, struct doc_report *r);
void doc_check_counters(const struct doc_env *env, struct doc_report *r);
void doc_check_chain(const struct doc_env *env, struct doc_report *r);
/* Fills r->v from the checks; returns the exit status for the capabilities in needed (0 or 1). */
int doc_verdict(struct doc_report *r, unsigned needed);

#endif
