// SPDX-License-Identifier: MIT
/* hvmtrace record: attach to a VMM, harvest page sets on an absolute-deadline schedule, write the trace. */
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "commands.h"
#include "harvest.h"
#include "host.h"
#include "hvmtrace/interval_json.h"
#include "hvmtrace/options.h"
#include "hvmtrace/util.h"
#include "hvmtrace/version.h"
#include "hvmtrace/vm_bandwidth.h"
#include "session.h"
#include "sink.h"

#define MAX_SINKS 3

struct record_opts {
	const char *attach;
	const char *output;
	const char *jsonl;
	int cpu;         /* -1: pick one the VM does not use */
	int harvest_cpu; /* -1: same as cpu */
	enum hvt_mode mode;
	uint64_t interval_ns;
	uint64_t duration_ns; /* 0: until stopped */
	bool quiet;
	bool bw_resctrl;          /* --bw-fallback resctrl */
	const char *sysfs_root;   /* PMU tree, for tests */
	const char *resctrl_root; /* resctrl mount, for tests */
	int argc;
	char **argv;
};

struct recorder {
	struct record_opts *o;
	struct session s;
	struct hvt_vm_bw *bw; /* NULL: no bandwidth for this VM */
	struct sink *sinks[MAX_SINKS];
	int nsinks;
	uint64_t layout_written; /* generation last given to the sinks */
	uint64_t intervals;
	uint64_t missed_total;
	bool warned_written_not_accessed;
	int sigfd;
};

/* hvmtrace record's exit statuses, as its --help lists them. */
enum record_exit {
	RECORD_OK = 0,
	RECORD_FAILED = 1, /* the run failed after it started; the trace is closed with what it holds */
	RECORD_USAGE = 2,  /* bad arguments, or the peer is not a usable VMM: nothing was recorded */
};

static const struct hvt_exit_status record_exits[] = {
    {RECORD_OK, "normal end (the duration, a signal, or the VM ended)"},
    {RECORD_FAILED, "the run failed after it started (the trace keeps every interval recorded before)"},
    {RECORD_USAGE, "bad arguments, or the socket is not a usable VMM (nothing recorded)"},
    {0, NULL},
};

static const struct hvt_opt_choice bw_fallbacks[] = {{"resctrl", true}, {NULL, 0}};

/* HVT_OPTS_RUN to record; otherwise the status to exit with (0 after --help). */
static int parse_args(int argc, char **argv, struct record_opts *o)
{
	char modes[64], mode_help[96];

	harvester_list_modes(modes, sizeof(modes));
	snprintf(mode_help, sizeof(mode_help), "auto (default), or one of: %s", modes);
	const struct hvt_option opts[] = {
	    HVT_OPT_PATH(0, "attach", &o->attach, "SOCK", "the VMM's hvmtrace socket", .required = true),
	    HVT_OPT_PATH('o', "output", &o->output, "FILE",
			 "trace file (default hvmtrace.hvt unless only --jsonl is given)"),
	    HVT_OPT_PATH(0, "jsonl", &o->jsonl, "FILE|-",
			 "also write one JSON object per interval (- for standard output)"),
	    HVT_OPT_DURATION(0, "interval", &o->interval_ns, 1000000, "DUR",
			     "harvest interval (default 1s; e.g. 10ms, 100ms, 1s)"),
	    HVT_OPT_DURATION(0, "duration", &o->duration_ns, 1, "DUR",
			     "stop after this long (default: until SIGINT/SIGTERM or the VM ends)"),
	    HVT_OPT_CPU(0, "cpu", &o->cpu, "N",
			"host CPU for the tracer (default: the highest CPU no vCPU may run on)"),
	    HVT_OPT_CPU(0, "harvest-cpu", &o->harvest_cpu, "N",
			"host CPU for the VMM's harvest thread (default: the tracer's CPU)"),
	    HVT_OPT_CHOICE(0, "mode", &o->mode, harvester_mode_choices(), "MODE", mode_help),
	    HVT_OPT_FLAG('q', "quiet", &o->quiet, "no per-interval line on a terminal"),
	    HVT_OPT_CHOICE(0, "bw-fallback", &o->bw_resctrl, bw_fallbacks, "resctrl",
			   "for a VM on no reserved channel, record resctrl's total DRAM bytes of\n"
			   "the VMM's threads (not split into reads and writes; labelled so)"),
	    HVT_OPT_PATH(0, "sysfs-root", &o->sysfs_root, "DIR",
			 "read memory-controller PMUs from another sysfs tree (tests only)"),
	    HVT_OPT_PATH(0, "resctrl-root", &o->resctrl_root, "DIR",
			 "resctrl mount to use (tests only; default /sys/fs/resctrl)"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace record",
	    .synopsis = "--attach SOCK [options]",
	    .about = "Attaches to a VMM (patched QEMU or hvmtrace-vmm) and records, per interval,\n"
		     "the guest pages written (and accessed, in mode ad).",
	    .options = opts,
	    .notes = "DRAM bandwidth is recorded per interval for the channels the VM's devmem\n"
		     "extents live on (docs/bandwidth.md); other VMs record none (null) unless\n"
		     "--bw-fallback resctrl is given.",
	    .exits = record_exits,
	    .usage_status = RECORD_USAGE,
	};
	int rc;

	*o = (struct record_opts){
	    .cpu = -1, .harvest_cpu = -1, .interval_ns = HVT_NSEC_PER_SEC, .argc = argc, .argv = argv};
	rc = hvt_opts_parse(&cmd, argc, argv);
	if (rc == HVT_OPTS_RUN && !o->output && !o->jsonl)
		o->output = "hvmtrace.hvt";
	return rc;
}

/* The trace's metadata (trace_meta.h); -ENOMEM. */
static int build_meta(const struct recorder *r, int tracer_cpu, struct hvt_trace_meta *m)
{
	const struct session *s = &r->s;
	char hostname[256] = "", wall[64];
	struct utsname u;
	bool uname_ok = !uname(&u);

	*m = (struct hvt_trace_meta){
	    .vm_pid = s->vmm_pid,
	    .tracer_cpu = tracer_cpu,
	    .harvest_cpu = s->harvest_cpu,
	    .mode = s->mode,
	    .interval_ns = r->o->interval_ns,
	    .page_size = s->layout.page_size,
	    .written_available = true,
	    .accessed_available = (s->harvester->sets & HVT_IV_ACCESSED) != 0,
	    .t_armed_ns = s->t_armed_ns,
	};
	gethostname(hostname, sizeof(hostname) - 1);
	hvt_format_wall(hvt_wall_now_ns(), wall, sizeof(wall));
	if (uname_ok) {
		hvt_trace_meta_set_present(m, HVT_META_HOST_KERNEL);
		hvt_trace_meta_set_present(m, HVT_META_HOST_MACHINE);
	}
	if (!(m->command.v = calloc(r->o->argc ? r->o->argc : 1, sizeof(char *))))
		return -ENOMEM;
	for (; m->command.n < (uint32_t)r->o->argc; m->command.n++)
		if (hvt_meta_set_str(&m->command.v[m->command.n], r->o->argv[m->command.n]))
			return -ENOMEM;
	if (hvt_meta_set_str(&m->tool, "hvmtrace " HVT_VERSION) || hvt_meta_set_str(&m->created, wall) ||
	    hvt_meta_set_str(&m->host_name, hostname) ||
	    hvt_meta_set_str(&m->host_kernel, uname_ok ? u.release : NULL) ||
	    hvt_meta_set_str(&m->host_machine, uname_ok ? u.machine : NULL) ||
	    hvt_meta_set_str(&m->vm_name, s->hello.vm_name) ||
	    hvt_meta_set_str(&m->vm_uuid, s->hello.vm_uuid) || hvt_meta_set_str(&m->vm_vmm, s->hello.vmm) ||
	    hvt_meta_set_str(&m->vm_accel, s->hello.accel) ||
	    hvt_meta_set_str(&m->tracer_version, HVT_VERSION))
		return -ENOMEM;
	return hvt_vm_bw_describe(r->bw, m);
}

/* Chooses the tracer's CPU and warns when a vCPU thread may share it. */
static int choose_cpu(struct recorder *r, struct hvt_err *err)
{
	cpu_set_t vcpus;
	int cpu = r->o->cpu;

	if (vcpu_allowed_cpus(r->s.vmm_pid, r->s.hello.vcpu_tids, r->s.hello.nvcpu_tids, &vcpus, err)) {
		fprintf(stderr, "hvmtrace record: warning: cannot check the vCPUs' CPUs: %s\n", err->msg);
		CPU_ZERO(&vcpus);
	}
	if (cpu < 0) {
		cpu = pick_tracer_cpu(&vcpus);
		if (cpu < 0) {
			cpu = pick_tracer_cpu(&(cpu_set_t){0});
			fprintf(
			    stderr,
			    "hvmtrace record: warning: every CPU we may use is one the VM's vCPU threads may run on; using CPU %d (pin the vCPUs elsewhere, or give --cpu)\n",
			    cpu);
			return cpu;
		}
	} else if (CPU_ISSET(cpu, &vcpus)) {
		fprintf(
		    stderr,
		    "hvmtrace record: warning: CPU %d is one the VM's vCPU threads may run on: the tracer and the guest will compete for it; pin the vCPUs elsewhere or choose another --cpu\n",
		    cpu);
	}
	return cpu;
}

static int emit(struct recorder *r, struct hvt_interval *iv, struct hvt_err *err)
{
	int rc;

	if (iv->generation != r->layout_written) {
		for (int i = 0; i < r->nsinks; i++) {
			rc = r->sinks[i]->layout(r->sinks[i], &r->s.layout, err);
			if (rc)
				return hvt_err_prefix(err, rc, "%s output: ", r->sinks[i]->name);
		}
		r->layout_written = iv->generation;
	}
	/* The trace first: a kill between the two leaves the trace at least as complete as the JSONL. */
	for (int i = 0; i < r->nsinks; i++) {
		rc = r->sinks[i]->interval(r->sinks[i], iv, &r->s.layout, err);
		if (rc)
			return hvt_err_prefix(err, rc, "%s output: ", r->sinks[i]->name);
	}
	r->intervals++;
	r->missed_total += iv->missed_deadlines;
	return 0;
}

enum wake { WAKE_DEADLINE, WAKE_SIGNAL, WAKE_SOCKET };

static enum wake wait_until(struct recorder *r, uint64_t deadline)
{
	for (;;) {
		struct pollfd p[2] = {{.fd = r->sigfd, .events = POLLIN},
				      {.fd = r->s.sock, .events = POLLIN}};
		uint64_t now = hvt_now_ns();
		struct timespec ts;

		if (now >= deadline)
			return WAKE_DEADLINE;
		ts.tv_sec = (time_t)((deadline - now) / HVT_NSEC_PER_SEC);
		ts.tv_nsec = (long)((deadline - now) % HVT_NSEC_PER_SEC);
		if (ppoll(p, 2, &ts, NULL) < 0 && errno != EINTR)
			return WAKE_SIGNAL;
		if (p[0].revents & POLLIN)
			return WAKE_SIGNAL;
		if (p[1].revents)
			return WAKE_SOCKET;
	}
}

static int harvest_timeout_ms(const struct record_opts *o)
{
	uint64_t ms = o->interval_ns / 1000000 * 20;

	return ms < 5000 ? 5000 : ms > 600000 ? 600000 : (int)ms;
}

/*
 * A written page is an accessed page: pages the kernel reported written only are recorded as accessed too,
 * and counted in the interval (a no-op without accessed sets). The first interval with any is reported.
 */
static int keep_written_in_accessed(struct recorder *r, struct hvt_interval *iv, struct hvt_err *err)
{
	if (hvt_interval_close_written_in_accessed(iv))
		return hvt_err_set(err, -EINVAL, "interval %llu: written and accessed sets differ in size",
				   (unsigned long long)iv->seq);
	if ((iv->flags & HVT_IV_WNA_COUNTED) && iv->written_not_accessed && !r->warned_written_not_accessed) {
		r->warned_written_not_accessed = true;
		fprintf(
		    stderr,
		    "hvmtrace record: warning: interval %llu: the kernel reported %llu page%s written but not accessed. A written page is an accessed page, so such pages are recorded as accessed and counted in each interval's written_not_accessed (see docs/kvm-ad.md); later intervals are not reported here.\n",
		    (unsigned long long)iv->seq, (unsigned long long)iv->written_not_accessed,
		    iv->written_not_accessed == 1 ? "" : "s");
	}
	return 0;
}

/*
 * Every interval the harvester produced, whatever brought it, ends here: its bandwidth, written ⊆ accessed,
 * then the outputs. Takes iv.
 */
static int emit_harvested(struct recorder *r, struct hvt_interval *iv, uint32_t missed, bool final,
			  struct hvt_err *err)
{
	int rc = hvt_vm_bw_fill(r->bw, iv, err); /* the counters' window ends right after the harvest's */

	if (!rc)
		rc = keep_written_in_accessed(r, iv, err);
	if (!rc) {
		iv->missed_deadlines = missed;
		if (final)
			iv->flags |= HVT_IV_FINAL;
		rc = emit(r, iv, err);
	}
	hvt_interval_fini(iv);
	return rc;
}

/*
 * Harvests for *deadline. The interval ends when the harvest takes its snapshot (t_end), which a busy CPU or
 * a stopped tracer can push past later deadlines (before end): the interval spans those, so it counts them as
 * missed and *deadline moves on to the last of them. (Counting from the tracer's clock before the request
 * would leave them to the next interval, and this one merged silently.)
 */
static int harvest_and_emit(struct recorder *r, uint32_t missed, bool final, uint64_t *deadline, uint64_t end,
			    struct hvt_err *err)
{
	const uint64_t iv_ns = r->o->interval_ns;
	struct hvt_interval iv = {0};
	int rc = r->s.harvester->harvest(&r->s, &iv, harvest_timeout_ms(r->o), err);

	if (rc) {
		hvt_interval_fini(&iv);
		return rc;
	}
	if (*deadline < end && iv.t_end_ns >= *deadline + iv_ns) {
		uint64_t late = (iv.t_end_ns - *deadline) / iv_ns;

		if (end != UINT64_MAX && late > (end - 1 - *deadline) / iv_ns)
			late = (end - 1 - *deadline) / iv_ns; /* the deadlines before end, not end itself */
		missed += (uint32_t)late;
		*deadline += late * iv_ns;
	}
	return emit_harvested(r, &iv, missed, final, err);
}

/* The VMM ended the conversation: the guest's last interval, if the harvester can still take it. */
static void emit_after_end(struct recorder *r)
{
	const struct harvester *h = r->s.harvester;
	struct hvt_interval iv = {0};
	struct hvt_err e = {{0}};
	int rc = h->after_end ? h->after_end(&r->s, &iv, &e) : 0;

	if (rc > 0)
		rc = emit_harvested(r, &iv, 0, true, &e);
	else
		hvt_interval_fini(&iv);
	if (rc)
		fprintf(stderr, "hvmtrace record: warning: the last interval is lost: %s\n", e.msg);
}

/*
 * The VMM spoke between deadlines: a layout change (applied by session_recv), an interval it sent unasked
 * (its final one), or the end of the conversation. Returns 1 when recording should stop.
 */
static int handle_vmm_message(struct recorder *r, struct hvt_err *err, int *status)
{
	const struct harvester *h = r->s.harvester;
	struct hvt_interval iv = {0};
	struct hvt_msg m;
	/* The socket is readable: a frame has begun, and the rest follows at once. (A timeout of 0 would
	 * give up before reading anything.) */
	int rc = session_recv(&r->s, &m, 1000, err);

	if (rc == -ETIMEDOUT || rc == -EINTR)
		return 0;
	if (rc) {
		*status = r->s.said_bye ? 0 : RECORD_FAILED;
		emit_after_end(r);
		return 1;
	}
	if (m.type == HVT_MSG_LAYOUT)
		return 0;
	rc = h->vmm_message ? h->vmm_message(&r->s, &m, &iv, err) : 0;
	if (!rc)
		rc = hvt_err_set(err, -EPROTO, "%s: unexpected %s between harvests", r->s.path,
				 hvt_msg_type_name(m.type));
	hvt_msg_fini(&m);
	if (rc < 0) {
		hvt_interval_fini(&iv);
		*status = RECORD_FAILED;
		return 1;
	}
	bool final = iv.flags & HVT_IV_FINAL;
	if (emit_harvested(r, &iv, 0, false, err)) {
		*status = RECORD_FAILED;
		return 1;
	}
	if (!final)
		return 0;
	/* Its bye follows; wait for it briefly so the trace records why the VM ended. */
	rc = session_recv(&r->s, &m, 2000, err);
	if (!rc)
		hvt_msg_fini(&m);
	*status = 0;
	return 1;
}

/* The interval loop. Returns the exit status; err holds the reason for a non-zero one. */
static int run(struct recorder *r, struct hvt_err *err)
{
	const uint64_t iv_ns = r->o->interval_ns;
	const uint64_t t0 = r->s.t_armed_ns;
	const uint64_t end = r->o->duration_ns ? t0 + r->o->duration_ns : UINT64_MAX;
	uint64_t deadline = t0 + iv_ns < end ? t0 + iv_ns : end;
	uint32_t missed = 0;
	int status = 0;

	for (;;) {
		switch (wait_until(r, deadline)) {
		case WAKE_SIGNAL:
			/* Stop now, keeping the partial interval. */
			if (harvest_and_emit(r, missed, true, &deadline, end, err))
				return r->s.said_bye ? 0 : RECORD_FAILED;
			snprintf(r->s.end_reason, sizeof(r->s.end_reason), "stopped by a signal");
			return 0;
		case WAKE_SOCKET:
			if (handle_vmm_message(r, err, &status))
				return status;
			continue;
		case WAKE_DEADLINE:
			break;
		}
		/* Overslept past later deadlines: this interval covers them, and says so. */
		uint64_t now = hvt_now_ns();
		if (deadline < end && now - deadline >= iv_ns) {
			uint64_t late = (now - deadline) / iv_ns;

			missed += (uint32_t)late;
			deadline = deadline + late * iv_ns < end ? deadline + late * iv_ns : end;
		}
		bool last = deadline >= end;
		bool cut_short = last && r->o->duration_ns % iv_ns;
		if (harvest_and_emit(r, missed, cut_short, &deadline, end, err))
			return r->s.said_bye ? 0 : RECORD_FAILED;
		if (last) {
			snprintf(r->s.end_reason, sizeof(r->s.end_reason), "duration reached");
			return 0;
		}
		/* Absolute deadlines: work that overran later deadlines skips them, and the next interval,
		 * which then spans them, counts them. */
		uint64_t next = deadline + iv_ns;
		now = hvt_now_ns();
		missed = 0;
		if (now >= next) {
			uint64_t skip = (now - deadline) / iv_ns;

			missed = (uint32_t)skip;
			next = deadline + (skip + 1) * iv_ns;
		}
		deadline = next < end ? next : end;
	}
}

static int open_sinks(struct recorder *r, struct hvt_err *err, int tracer_cpu)
{
	if (r->o->output) {
		struct hvt_trace_meta meta;

		if (build_meta(r, tracer_cpu, &meta)) {
			hvt_trace_meta_fini(&meta);
			return hvt_err_set(err, -ENOMEM, "out of memory");
		}
		r->sinks[r->nsinks] = sink_trace_open(r->o->output, &meta, err);
		hvt_trace_meta_fini(&meta);
		if (!r->sinks[r->nsinks])
			return -1;
		r->nsinks++;
	}
	if (r->o->jsonl) {
		r->sinks[r->nsinks] = sink_jsonl_open(r->o->jsonl, err);
		if (!r->sinks[r->nsinks])
			return -1;
		r->nsinks++;
	}
	if (!r->o->quiet && isatty(STDERR_FILENO)) {
		r->sinks[r->nsinks] = sink_summary_open(stderr);
		if (r->sinks[r->nsinks])
			r->nsinks++;
	}
	return 0;
}

/*
 * Opens the VM's bandwidth counters while we still hold the privileges they need. A VM on reserved channels
 * whose counters cannot be opened is recorded without bandwidth (a warning says why); a fallback that was
 * asked for and cannot work is an error.
 */
static int open_bandwidth(struct recorder *r, struct hvt_err *err)
{
	char group[96];
	struct hvt_vm_bw_opts bo = {.sysfs_root = r->o->sysfs_root,
				    .resctrl_fallback = r->o->bw_resctrl,
				    .resctrl_root = r->o->resctrl_root,
				    .vmm_pid = r->s.vmm_pid,
				    .group_name = group};
	int rc;

	snprintf(group, sizeof(group), "hvmtrace-%.40s-%d", r->s.hello.vm_name, (int)r->s.vmm_pid);
	for (char *p = group; *p; p++)
		if (*p == '/' || *p == ' ')
			*p = '_';
	rc = hvt_vm_bw_open(&r->bw, &r->s.layout, &bo, err);
	if (rc && !r->o->bw_resctrl) {
		fprintf(stderr, "hvmtrace record: warning: recording without bandwidth: %s\n", err->msg);
		return 0;
	}
	if (r->bw)
		fprintf(stderr, "hvmtrace record: bandwidth from %s%s\n",
			hvt_bw_source_name(hvt_vm_bw_source(r->bw)),
			hvt_vm_bw_source(r->bw) == HVT_BW_SOURCE_RESCTRL_TOTAL
			    ? " (TOTAL bytes of the VMM's threads, not split into reads and writes)"
			: hvt_vm_bw_source(r->bw) == HVT_BW_SOURCE_PMU_STAND_IN
			    ? " (STAND-IN: not DRAM traffic)"
			    : "");
	return rc;
}

static int close_sinks(struct recorder *r, struct hvt_err *err)
{
	int rc = 0;

	for (int i = 0; i < r->nsinks; i++) {
		struct hvt_err e;

		if (r->sinks[i]->close(r->sinks[i], &e) && !rc) {
			rc = -1;
			*err = e;
		}
	}
	r->nsinks = 0;
	return rc;
}

/* The mode asked for (or chosen by auto) is one the VMM does not offer, or this hvmtrace does not
 * implement. */
static void report_mode_unavailable(const struct session *s, enum hvt_mode mode)
{
	char offered[128] = "", implemented[128];
	size_t at = 0;

	for (unsigned m = 0; m < 32; m++)
		if (s->hello.modes & HVT_MODE_BIT(m) && at < sizeof(offered))
			at += (size_t)snprintf(offered + at, sizeof(offered) - at, " %s",
					       hvt_mode_name((enum hvt_mode)m));
	harvester_list_modes(implemented, sizeof(implemented));
	fprintf(
	    stderr,
	    "hvmtrace record: %s: mode %s is not available (the VMM offers:%s; this hvmtrace implements %s)\n",
	    s->path, hvt_mode_name(mode), offered, implemented);
}

static int block_stop_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC);
}

int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	struct recorder r = {.o = &o, .sigfd = -1};
	struct hvt_err err = {{0}};
	const struct harvester *h;
	char ivs[32];
	int rc, status, cpu;

	rc = parse_args(argc, argv, &o);
	if (rc != HVT_OPTS_RUN)
		return rc;
	r.sigfd = block_stop_signals();
	if (r.sigfd < 0) {
		perror("hvmtrace record: signalfd");
		return RECORD_FAILED;
	}

	rc = session_connect(&r.s, o.attach, &err);
	if (rc) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		session_close(&r.s, "error");
		return RECORD_USAGE;
	}
	if (o.mode == HVT_MODE_NONE)
		o.mode = harvester_auto_mode(r.s.hello.modes);
	h = harvester_for_mode(o.mode);
	if (!(r.s.hello.modes & HVT_MODE_BIT(o.mode)) || !h) {
		report_mode_unavailable(&r.s, o.mode);
		session_close(&r.s, "mode not available");
		return RECORD_USAGE;
	}

	cpu = choose_cpu(&r, &err);
	if (pin_to_cpu(cpu, &err)) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		session_close(&r.s, "bad cpu");
		return RECORD_USAGE;
	}
	if (lock_memory(&err))
		fprintf(stderr, "hvmtrace record: warning: %s\n", err.msg);

	rc = session_attach(&r.s, h, o.harvest_cpu >= 0 ? o.harvest_cpu : cpu, &err);
	if (!rc && h->start)
		rc = h->start(&r.s, &err);
	if (rc) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		session_close(&r.s, "attach failed");
		return rc == -EPIPE ? RECORD_FAILED : RECORD_USAGE;
	}
	if (open_bandwidth(&r, &err)) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		session_close(&r.s, "bandwidth fallback not available");
		return RECORD_USAGE;
	}
	if (open_sinks(&r, &err, cpu)) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		close_sinks(&r, &err);
		session_close(&r.s, "cannot write output");
		return RECORD_USAGE;
	}
	/* Everything that needed privilege (the socket, outputs, memory locking) is done. */
	if (drop_all_capabilities(&err)) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		close_sinks(&r, &err);
		session_close(&r.s, "cannot drop privileges");
		return RECORD_FAILED;
	}

	hvt_format_duration(o.interval_ns, ivs, sizeof(ivs));
	char harvester[64];
	h->describe(&r.s, harvester, sizeof(harvester));
	fprintf(
	    stderr,
	    "hvmtrace record: attached to VM '%s' (pid %d, %s) in %s mode; interval %s; tracer on CPU %d, %s\n",
	    r.s.hello.vm_name, (int)r.s.vmm_pid, r.s.hello.vmm, hvt_mode_name(r.s.mode), ivs, cpu, harvester);

	status = run(&r, &err);
	if (status)
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
	session_close(&r.s, status ? "tracer error" : "tracer stopped");
	if (close_sinks(&r, &err)) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		status = RECORD_FAILED;
	}
	hvt_vm_bw_close(r.bw);
	fprintf(stderr, "hvmtrace record: %llu intervals recorded (%llu deadlines missed)%s%s; %s\n",
		(unsigned long long)r.intervals, (unsigned long long)r.missed_total, o.output ? " to " : "",
		o.output ? o.output : "",
		r.s.end_reason[0] ? r.s.end_reason
		: status          ? "stopped by the error above"
				  : "stopped");
	close(r.sigfd);
	return status;
}
