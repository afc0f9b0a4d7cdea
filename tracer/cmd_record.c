// SPDX-License-Identifier: MIT
/*
 * hvmtrace record: attach to a VMM, harvest page sets on an absolute-deadline schedule, write the trace.
 * Exit codes: 0 the run ended normally (duration, signal, or the VMM said bye); 1 the run failed after it
 * started (the trace is closed and holds every interval before the failure); 2 bad arguments or a peer
 * that is not a usable VMM (nothing recorded).
 */
#include <errno.h>
#include <getopt.h>
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

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: hvmtrace record --attach SOCK [options]\n"
	    "\n"
	    "Attaches to a VMM (patched QEMU or hvmtrace-vmm) and records, per interval, the guest pages\n"
	    "written (and accessed, in mode ad).\n"
	    "\n"
	    "  --attach SOCK        the VMM's hvmtrace socket\n"
	    "  -o, --output FILE    trace file (default hvmtrace.hvt unless only --jsonl is given)\n"
	    "  --jsonl FILE|-       also write one JSON object per interval (- for standard output)\n"
	    "  --interval DUR       harvest interval (default 1s; e.g. 10ms, 100ms, 1s)\n"
	    "  --duration DUR       stop after this long (default: until SIGINT/SIGTERM or the VM ends)\n"
	    "  --cpu N              host CPU for the tracer (default: the highest CPU no vCPU may run on)\n"
	    "  --harvest-cpu N      host CPU for the VMM's harvest thread (default: the tracer's CPU)\n"
	    "  --mode MODE          auto (default), dirty-log or ad\n"
	    "  -q, --quiet          no per-interval line on a terminal\n"
	    "  --bw-fallback resctrl  for a VM on no reserved channel, record resctrl's total DRAM bytes of\n"
	    "                       the VMM's threads (not split into reads and writes; labelled so)\n"
	    "  --sysfs-root DIR     read memory-controller PMUs from another sysfs tree (tests only)\n"
	    "  --resctrl-root DIR   resctrl mount to use (tests only; default /sys/fs/resctrl)\n"
	    "\n"
	    "DRAM bandwidth is recorded per interval for the channels the VM's devmem extents live on\n"
	    "(docs/bandwidth.md); other VMs record none (null) unless --bw-fallback resctrl is given.\n"
	    "\n"
	    "Exit status: 0 normal end; 1 the run failed after it started (the trace keeps every\n"
	    "interval recorded before); 2 bad arguments or the socket is not a usable VMM.\n");
}

static int parse_cpu(const char *opt, const char *v, int *cpu)
{
	char *end;
	long n = strtol(v, &end, 10);

	if (!*v || *end || n < 0 || n >= CPU_SETSIZE) {
		fprintf(stderr, "hvmtrace record: %s '%s': not a CPU number\n", opt, v);
		return -1;
	}
	*cpu = (int)n;
	return 0;
}

static int parse_args(int argc, char **argv, struct record_opts *o)
{
	enum {
		OPT_ATTACH = 256,
		OPT_JSONL,
		OPT_INTERVAL,
		OPT_DURATION,
		OPT_CPU,
		OPT_HCPU,
		OPT_MODE,
		OPT_BWFB,
		OPT_SYSFS,
		OPT_RESCTRL
	};
	static const struct option longopts[] = {
	    {"attach", required_argument, NULL, OPT_ATTACH},
	    {"output", required_argument, NULL, 'o'},
	    {"jsonl", required_argument, NULL, OPT_JSONL},
	    {"interval", required_argument, NULL, OPT_INTERVAL},
	    {"duration", required_argument, NULL, OPT_DURATION},
	    {"cpu", required_argument, NULL, OPT_CPU},
	    {"harvest-cpu", required_argument, NULL, OPT_HCPU},
	    {"mode", required_argument, NULL, OPT_MODE},
	    {"bw-fallback", required_argument, NULL, OPT_BWFB},
	    {"sysfs-root", required_argument, NULL, OPT_SYSFS},
	    {"resctrl-root", required_argument, NULL, OPT_RESCTRL},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c;

	*o = (struct record_opts){
	    .cpu = -1, .harvest_cpu = -1, .interval_ns = HVT_NSEC_PER_SEC, .argc = argc, .argv = argv};
	while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_ATTACH:
			o->attach = optarg;
			break;
		case 'o':
			o->output = optarg;
			break;
		case OPT_JSONL:
			o->jsonl = optarg;
			break;
		case OPT_INTERVAL:
			if (hvt_parse_duration(optarg, &o->interval_ns) || o->interval_ns < 1000000) {
				fprintf(stderr,
					"hvmtrace record: --interval '%s': not a duration of at least 1ms "
					"(e.g. 10ms, 1s)\n",
					optarg);
				return -1;
			}
			break;
		case OPT_DURATION:
			if (hvt_parse_duration(optarg, &o->duration_ns)) {
				fprintf(stderr,
					"hvmtrace record: --duration '%s': not a duration (e.g. 30s, 5m)\n",
					optarg);
				return -1;
			}
			break;
		case OPT_CPU:
			if (parse_cpu("--cpu", optarg, &o->cpu))
				return -1;
			break;
		case OPT_HCPU:
			if (parse_cpu("--harvest-cpu", optarg, &o->harvest_cpu))
				return -1;
			break;
		case OPT_MODE:
			if (strcmp(optarg, "auto")) {
				o->mode = hvt_mode_from_name(optarg);
				if (o->mode == HVT_MODE_NONE) {
					fprintf(
					    stderr,
					    "hvmtrace record: --mode '%s': expected auto, dirty-log or ad\n",
					    optarg);
					return -1;
				}
			}
			break;
		case 'q':
			o->quiet = true;
			break;
		case OPT_BWFB:
			if (strcmp(optarg, "resctrl")) {
				fprintf(stderr,
					"hvmtrace record: --bw-fallback '%s': the only fallback is resctrl\n",
					optarg);
				return -1;
			}
			o->bw_resctrl = true;
			break;
		case OPT_SYSFS:
			o->sysfs_root = optarg;
			break;
		case OPT_RESCTRL:
			o->resctrl_root = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "hvmtrace record: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (!o->attach) {
		fprintf(stderr, "hvmtrace record: --attach SOCK is required\n");
		return -1;
	}
	if (!o->output && !o->jsonl)
		o->output = "hvmtrace.hvt";
	return 0;
}

static struct json_object *build_meta(const struct recorder *r, int tracer_cpu)
{
	const struct session *s = &r->s;
	struct json_object *m = json_object_new_object(), *vm = json_object_new_object();
	struct json_object *host = json_object_new_object(), *tr = json_object_new_object();
	struct json_object *cmd = json_object_new_array();
	char hostname[256] = "", wall[64];
	struct utsname u;

	gethostname(hostname, sizeof(hostname) - 1);
	json_object_object_add(host, "hostname", json_object_new_string(hostname));
	if (!uname(&u)) {
		json_object_object_add(host, "kernel", json_object_new_string(u.release));
		json_object_object_add(host, "machine", json_object_new_string(u.machine));
	}
	json_object_object_add(vm, "name", json_object_new_string(s->hello.vm_name));
	json_object_object_add(vm, "uuid", json_object_new_string(s->hello.vm_uuid));
	json_object_object_add(vm, "pid", json_object_new_int(s->vmm_pid));
	json_object_object_add(vm, "vmm", json_object_new_string(s->hello.vmm));
	json_object_object_add(vm, "accel", json_object_new_string(s->hello.accel));
	json_object_object_add(tr, "version", json_object_new_string(HVT_VERSION));
	json_object_object_add(tr, "cpu", json_object_new_int(tracer_cpu));
	json_object_object_add(tr, "harvest_cpu", json_object_new_int(s->harvest_cpu));
	for (int i = 0; i < r->o->argc; i++)
		json_object_array_add(cmd, json_object_new_string(r->o->argv[i]));
	json_object_object_add(tr, "command", cmd);
	hvt_format_wall(hvt_wall_now_ns(), wall, sizeof(wall));

	json_object_object_add(m, "tool", json_object_new_string("hvmtrace " HVT_VERSION));
	json_object_object_add(m, "created", json_object_new_string(wall));
	json_object_object_add(m, "host", host);
	json_object_object_add(m, "vm", vm);
	json_object_object_add(m, "tracer", tr);
	json_object_object_add(m, "mode", json_object_new_string(hvt_mode_name(s->mode)));
	json_object_object_add(m, "interval_ns", json_object_new_uint64(r->o->interval_ns));
	json_object_object_add(m, "page_size", json_object_new_int((int)s->layout.page_size));
	json_object_object_add(m, "written_available", json_object_new_boolean(1));
	json_object_object_add(m, "accessed_available", json_object_new_boolean(s->mode == HVT_MODE_AD));
	json_object_object_add(m, "bandwidth_available", json_object_new_boolean(r->bw != NULL));
	if (r->bw)
		json_object_object_add(m, "bandwidth_source",
				       json_object_new_string(hvt_vm_bw_source(r->bw)));
	json_object_object_add(m, "channels", hvt_vm_bw_channels_json(r->bw));
	json_object_object_add(m, "t_armed_ns", json_object_new_uint64(s->t_armed_ns));
	return m;
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
			fprintf(stderr,
				"hvmtrace record: warning: every CPU we may use is one the VM's vCPU threads "
				"may run on; "
				"using CPU %d (pin the vCPUs elsewhere, or give --cpu)\n",
				cpu);
			return cpu;
		}
	} else if (CPU_ISSET(cpu, &vcpus)) {
		fprintf(stderr,
			"hvmtrace record: warning: CPU %d is one the VM's vCPU threads may run on: the "
			"tracer and "
			"the guest will compete for it; pin the vCPUs elsewhere or choose another --cpu\n",
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
		fprintf(stderr,
			"hvmtrace record: warning: interval %llu: the kernel reported %llu page%s written "
			"but not "
			"accessed. A written page is an accessed page, so such pages are recorded as "
			"accessed and "
			"counted in each interval's written_not_accessed (see docs/kvm-ad.md); later "
			"intervals are "
			"not reported here.\n",
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

static int harvest_and_emit(struct recorder *r, uint32_t missed, bool final, struct hvt_err *err)
{
	struct hvt_interval iv = {0};
	int rc = r->s.harvester->harvest(&r->s, &iv, harvest_timeout_ms(r->o), err);

	if (rc) {
		hvt_interval_fini(&iv);
		return rc;
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
		*status = r->s.said_bye ? 0 : EXIT_RUNTIME;
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
		*status = EXIT_RUNTIME;
		return 1;
	}
	bool final = iv.flags & HVT_IV_FINAL;
	if (emit_harvested(r, &iv, 0, false, err)) {
		*status = EXIT_RUNTIME;
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
			if (harvest_and_emit(r, missed, true, err))
				return r->s.said_bye ? 0 : EXIT_RUNTIME;
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
		if (harvest_and_emit(r, missed, cut_short, err))
			return r->s.said_bye ? 0 : EXIT_RUNTIME;
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
		struct json_object *meta = build_meta(r, tracer_cpu);

		r->sinks[r->nsinks] = sink_trace_open(r->o->output, meta, err);
		json_object_put(meta);
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
		fprintf(stderr, "hvmtrace record: bandwidth from %s%s\n", hvt_vm_bw_source(r->bw),
			!strcmp(hvt_vm_bw_source(r->bw), "resctrl-total")
			    ? " (TOTAL bytes of the VMM's threads, not split into reads and writes)"
			: !strcmp(hvt_vm_bw_source(r->bw), "pmu-stand-in") ? " (STAND-IN: not DRAM traffic)"
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
	fprintf(stderr,
		"hvmtrace record: %s: mode %s is not available (the VMM offers:%s; this hvmtrace implements "
		"%s)\n",
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

	if (parse_args(argc, argv, &o))
		return EXIT_USAGE;
	r.sigfd = block_stop_signals();
	if (r.sigfd < 0) {
		perror("hvmtrace record: signalfd");
		return EXIT_RUNTIME;
	}

	rc = session_connect(&r.s, o.attach, &err);
	if (rc) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		session_close(&r.s, "error");
		return EXIT_USAGE;
	}
	if (o.mode == HVT_MODE_NONE)
		o.mode = harvester_auto_mode(r.s.hello.modes);
	h = harvester_for_mode(o.mode);
	if (!(r.s.hello.modes & HVT_MODE_BIT(o.mode)) || !h) {
		report_mode_unavailable(&r.s, o.mode);
		session_close(&r.s, "mode not available");
		return EXIT_USAGE;
	}

	cpu = choose_cpu(&r, &err);
	if (pin_to_cpu(cpu, &err)) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		session_close(&r.s, "bad cpu");
		return EXIT_USAGE;
	}
	if (lock_memory(&err))
		fprintf(stderr, "hvmtrace record: warning: %s\n", err.msg);

	rc = session_attach(&r.s, h, o.harvest_cpu >= 0 ? o.harvest_cpu : cpu, &err);
	if (!rc && h->start)
		rc = h->start(&r.s, &err);
	if (rc) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		session_close(&r.s, "attach failed");
		return rc == -EPIPE ? EXIT_RUNTIME : EXIT_USAGE;
	}
	if (open_bandwidth(&r, &err)) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		session_close(&r.s, "bandwidth fallback not available");
		return EXIT_USAGE;
	}
	if (open_sinks(&r, &err, cpu)) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		close_sinks(&r, &err);
		session_close(&r.s, "cannot write output");
		return EXIT_USAGE;
	}
	/* Everything that needed privilege (the socket, outputs, memory locking) is done. */
	if (drop_all_capabilities(&err)) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		close_sinks(&r, &err);
		session_close(&r.s, "cannot drop privileges");
		return EXIT_RUNTIME;
	}

	hvt_format_duration(o.interval_ns, ivs, sizeof(ivs));
	char harvester[64];
	h->describe(&r.s, harvester, sizeof(harvester));
	fprintf(
	    stderr,
	    "hvmtrace record: attached to VM '%s' (pid %d, %s) in %s mode; interval %s; tracer on CPU %d, "
	    "%s\n",
	    r.s.hello.vm_name, (int)r.s.vmm_pid, r.s.hello.vmm, hvt_mode_name(r.s.mode), ivs, cpu, harvester);

	status = run(&r, &err);
	if (status)
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
	session_close(&r.s, status ? "tracer error" : "tracer stopped");
	if (close_sinks(&r, &err)) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		status = EXIT_RUNTIME;
	}
	hvt_vm_bw_close(r.bw);
	fprintf(stderr, "hvmtrace record: %llu intervals recorded (%llu deadlines missed)%s%s; %s\n",
		(unsigned long long)r.intervals, (unsigned long long)r.missed_total, o.output ? " to " : "",
		o.output ? o.output : "", r.s.end_reason[0] ? r.s.end_reason : "stopped");
	close(r.sigfd);
	return status;
}
