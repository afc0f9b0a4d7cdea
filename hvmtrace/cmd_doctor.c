// SPDX-License-Identifier: MIT
/*
 * hvmtrace doctor: what this host can trace, in one minute — every check with its evidence and its fix, the
 * bandwidth self-tests where counters exist, and a closing verdict (docs/doctor.md). The checks are the
 * engine hvmtrace/doctor/; this file is the command line and the exit status.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "doctor/doctor.h"
#include "hvmtrace/options.h"
#include "hvmtrace/util.h"

/* hvmtrace doctor's exit statuses, as its --help lists them. */
enum doctor_exit {
	DOCTOR_OK = 0,      /* everything asked for (--need) works here */
	DOCTOR_MISSING = 1, /* something asked for does not: the verdict says what and why */
	DOCTOR_USAGE = 2,   /* bad arguments */
};

struct doctor_opts {
	struct doc_env env;
	bool json, no_selftest;
	unsigned needed;
};

/* --need dirty-log,ad,bandwidth */
static int need_arg(const struct hvt_option *opt, const char *v, char *problem, size_t len)
{
	struct doctor_opts *o = opt->value;
	char copy[128], *save = NULL;

	snprintf(copy, sizeof(copy), "%s", v);
	o->needed = 0;
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int k = 0;

		while (k < DOC_NCAPS && strcmp(w, doc_cap_name((enum doc_cap)k)))
			k++;
		if (k == DOC_NCAPS) {
			snprintf(problem, len, "'%s' is not one of dirty-log, ad, bandwidth", w);
			return -1;
		}
		o->needed |= 1u << k;
	}
	if (!o->needed) {
		snprintf(problem, len, "name at least one of dirty-log, ad, bandwidth");
		return -1;
	}
	return 0;
}

static int parse(int argc, char **argv, struct doctor_opts *o)
{
	static const struct hvt_exit_status exits[] = {
	    {DOCTOR_OK, "everything asked for (--need) works on this host"},
	    {DOCTOR_MISSING, "something asked for does not; the verdict says what and why"},
	    {DOCTOR_USAGE, "bad arguments"},
	    {0, NULL},
	};
	struct doc_env *e = &o->env;
	const struct hvt_option opts[] = {
	    HVT_OPT_FLAG(0, "json", &o->json, "one JSON document on standard output instead of the text"),
	    HVT_OPT_CALLBACK(0, "need", o, need_arg, "LIST",
			     "what the exit status is about: dirty-log, ad, bandwidth, comma\n"
			     "separated (default: all three)"),
	    HVT_OPT_FLAG(0, "no-selftest", &o->no_selftest, "do not run the bandwidth self-tests"),
	    HVT_OPT_SIZE(0, "selftest-size", &e->selftest_bytes, 1ull << 20, 0, 4096, "SIZE",
			 "bytes each self-test window moves (default: 8 × the LLC, 256M to 1G)"),
	    HVT_OPT_PATH(0, "chanmap", &e->chanmap, "FILE",
			 "the channel map (default /etc/hvmtrace/chanmap.json)"),
	    HVT_OPT_PATH(0, "qemu", &e->qemu, "FILE",
			 "the QEMU to check (default: qemu-system-x86_64 on PATH)"),
	    HVT_OPT_PATH(0, "output-dir", &e->output_dir, "DIR",
			 "where traces go (default /var/lib/hvmtrace)"),
	    HVT_OPT_HEADING("Other roots (tests):"),
	    HVT_OPT_PATH(0, "sysfs-root", &e->sysfs_root, "DIR",
			 "sysfs to read (default /sys; PMUs: its CPU is DIR/../proc/cpuinfo\n"
			 "unless --proc-root is given)"),
	    HVT_OPT_PATH(0, "proc-root", &e->proc_root, "DIR", "procfs to read (default /proc)"),
	    HVT_OPT_PATH(0, "iomem", &e->iomem, "FILE",
			 "resource map (default PROC/iomem; only with a --mem-path that is\n"
			 "not a character device, as chanmap verify)"),
	    HVT_OPT_PATH(0, "cmdline", &e->cmdline, "FILE", "kernel command line (default PROC/cmdline)"),
	    HVT_OPT_PATH(0, "kernel-config", &e->kernel_config, "FILE",
			 "kernel config, plain or gzip (default /boot/config-RELEASE, else\n"
			 "PROC/config.gz)"),
	    HVT_OPT_PATH(0, "mem-path", &e->mem_path, "FILE",
			 "the physical memory device (default /dev/mem)"),
	    HVT_OPT_PATH(0, "kvm", &e->kvm_path, "FILE", "the KVM device (default /dev/kvm)"),
	    HVT_OPT_PATH(0, "resctrl-root", &e->resctrl_root, "DIR",
			 "resctrl mount (default /sys/fs/resctrl)"),
	    HVT_OPT_PATH(0, "hooks-dir", &e->hooks_dir, "DIR",
			 "libvirt's qemu hooks (default /etc/libvirt/hooks/qemu.d)"),
	    HVT_OPT_PATH(0, "units-dir", &e->units_dir, "DIR", "systemd units (default /etc/systemd/system)"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace doctor",
	    .synopsis = "[options]",
	    .about =
		"Checks what this host can trace: virtualisation, memory placement, the memory-controller\n"
		"counters (proven by a bandwidth self-test) and the rest of the chain, each finding with\n"
		"its evidence and its fix, then a verdict. Run it as root to see what record will see.",
	    .options = opts,
	    .exits = exits,
	    .usage_status = DOCTOR_USAGE,
	};

	doc_env_defaults(e);
	o->needed = (1u << DOC_NCAPS) - 1;
	int rc = hvt_opts_parse(&cmd, argc, argv);
	e->selftest = !o->no_selftest;
	return rc;
}

int cmd_doctor(int argc, char **argv)
{
	struct doctor_opts o = {0};
	struct doc_report r = {0};
	uint64_t t0 = hvt_now_ns();
	int rc = parse(argc, argv, &o), status;

	if (rc != HVT_OPTS_RUN)
		return rc;
	doc_check_virt(&o.env, &r);
	doc_check_placement(&o.env, &r);
	doc_check_counters(&o.env, &r);
	doc_check_chain(&o.env, &r);
	status = doc_verdict(&r, o.needed);
	r.seconds = (double)(hvt_now_ns() - t0) / 1e9;
	if (o.json) {
		if (doc_print_json(&r, o.needed, status, stdout))
			status = DOCTOR_MISSING;
	} else {
		doc_print_text(&r, o.needed, stdout);
	}
	doc_report_free(&r);
	return status;
}
