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
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "attribute/owners_port.h"
#include "commands.h"
#include "hvmtrace/error.h"
#include "hvmtrace/trace.h"
#include "record/harvest.h"
#include "record/host.h"
#include "hvmtrace/files.h"
#include "record/mem_budget.h"
#include "live/metrics.h"
#include "live/metrics_registry.h"
#include "hvmtrace/interval_json.h"
#include "hvmtrace/options.h"
#include "hvmtrace/owners_format.h"
#include "hvmtrace/util.h"
#include "hvmtrace/version.h"
#include "hvmtrace/vm_bandwidth.h"
#include "libvirt/libvirt_domain.h"
#include "libvirt/libvirt_lookup.h"
#include "record/session.h"
#include "record/sink.h"

#define MAX_SINKS 3

struct record_opts {
	const char *attach;
	const char *domain;  /* or find the socket through libvirt */
	const char *connect; /* libvirt URI for --domain */
	int vmm_uid;         /* -1: only root or our uid may be the VMM */
	bool no_bw;
	const char *output;
	const char *jsonl;
	const char *metrics; /* [ADDR:]PORT, or NULL */
	uint64_t linger_ns;  /* how long the endpoint waits for the final figures to be scraped */
	bool linger_given;
	int cpu;         /* -1: pick one the VM does not use */
	int harvest_cpu; /* -1: same as cpu */
	enum hvt_mode mode;
	uint64_t interval_ns;
	uint64_t duration_ns;   /* 0: until stopped */
	uint64_t max_guest_ram; /* 0: the RAM at attach plus a quarter, at least 1 GiB more */
	bool quiet;
	bool bw_resctrl;           /* --bw-fallback resctrl */
	bool ad_walk_full;         /* --ad-walk full */
	const char *sysfs_root;    /* PMU tree, for tests */
	const char *resctrl_root;  /* resctrl mount, for tests */
	const char *attached_file; /* written once attached (libvirt's hook waits for it) */
	const char *owners_port;   /* the guest agent's port (QEMU's chardev socket), or NULL */
	uint64_t owners_max_bytes; /* the largest snapshot taken from it, header included */
	int argc;
	char **argv;
};

struct recorder {
	struct record_opts *o;
	struct session s;
	struct hvt_vm_bw *bw;    /* NULL: no bandwidth for this VM */
	struct metrics *metrics; /* NULL without --metrics */
	char announced[320];     /* its file in the registry of endpoints (hvmtrace top), or "" */
	struct sink *sinks[MAX_SINKS];
	int nsinks;
	uint64_t layout_written; /* generation last given to the sinks */
	uint64_t intervals;
	uint64_t missed_total;
	bool warned_written_not_accessed;
	uint64_t last_seq;         /* of the last interval emitted */
	bool final_recorded;       /* the guest's last interval (HVT_IV_FINAL) is in the outputs */
	uint64_t last_t_end_ns;    /* its end */
	uint64_t cpu_at_last_ns;   /* the process's CPU time when it was emitted */
	uint64_t busy_intervals;   /* intervals in which the tracer needed more than half its CPU */
	struct owners_port owners; /* with --owners-port */
	bool owners_on;
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
    {RECORD_USAGE, "bad arguments, or the socket is not a usable VMM, or the VMM went away before\n"
		   "tracking started (nothing recorded, no trace written)"},
    {0, NULL},
};

static const struct hvt_opt_choice bw_fallbacks[] = {{"resctrl", true}, {NULL, 0}};
static const struct hvt_opt_choice ad_walks[] = {{"pruned", false}, {"full", true}, {NULL, 0}};

/* --attached-file: the VMM's pid, once tracing runs (sinks open, privileges dropped). */
static int announce_attached(const char *path, pid_t vmm, struct hvt_err *err)
{
	FILE *f = fopen(path, "w");

	if (!f || fprintf(f, "%d\n", (int)vmm) < 0 || fclose(f))
		return hvt_err_set(err, -errno, "--attached-file %s: %s", path, strerror(errno));
	return 0;
}

/* --metrics-linger: a duration, or 0 for none (hvt_parse_duration takes no 0). */
static int opt_linger(const struct hvt_option *opt, const char *arg, char *problem, size_t len)
{
	struct record_opts *o = opt->value;

	o->linger_given = true;
	if (!strcmp(arg, "0")) {
		o->linger_ns = 0;
		return 0;
	}
	if (!hvt_parse_duration(arg, &o->linger_ns))
		return 0;
	snprintf(problem, len, "'%s' is not a duration (e.g. 15s, 500ms) or 0", arg);
	return -1;
}

/* HVT_OPTS_RUN to record; otherwise the status to exit with (0 after --help). */
static int parse_args(int argc, char **argv, struct record_opts *o)
{
	char modes[64], mode_help[96];

	harvester_list_modes(modes, sizeof(modes));
	snprintf(mode_help, sizeof(mode_help), "auto (default), or one of: %s", modes);
	const struct hvt_option opts[] = {
	    HVT_OPT_PATH(0, "attach", &o->attach, "SOCK", "the VMM's hvmtrace socket"),
	    HVT_OPT_STRING(0, "domain", &o->domain, "NAME",
			   "instead of --attach: the libvirt domain NAME, traced per its <hvmtrace:trace>\n"
			   "(docs/libvirt.md); its socket and QEMU's user come from libvirt"),
	    HVT_OPT_STRING(0, "connect", &o->connect, "URI",
			   "with --domain: libvirt's URI (default: libvirt's default)"),
	    HVT_OPT_INT(0, "vmm-uid", &o->vmm_uid, 0, 0x7fffffff, "UID",
			"also accept a VMM running as UID (the unprivileged user libvirt runs QEMU as)"),
	    HVT_OPT_FLAG(0, "no-bw", &o->no_bw, "record no DRAM bandwidth"),
	    HVT_OPT_PATH('o', "output", &o->output, "FILE",
			 "trace file (default hvmtrace.hvt unless only --jsonl is given)"),
	    HVT_OPT_PATH(0, "jsonl", &o->jsonl, "FILE|-",
			 "also write one JSON object per interval (- for standard output)"),
	    HVT_OPT_STRING(0, "metrics", &o->metrics, "[ADDR:]PORT",
			   "serve live metrics at http://ADDR:PORT/metrics (Prometheus/OpenMetrics\n"
			   "text; ADDR 127.0.0.1 unless given; PORT 0 picks a free one)"),
	    HVT_OPT_CALLBACK(0, "metrics-linger", o, opt_linger, "DUR",
			     "after the run, keep serving until a scrape has taken the final figures,\n"
			     "at most DUR (default 15s; 0: close at once)"),
	    HVT_OPT_DURATION(0, "interval", &o->interval_ns, 1000000, "DUR",
			     "harvest interval (default 1s; e.g. 10ms, 100ms, 1s)"),
	    HVT_OPT_DURATION(0, "duration", &o->duration_ns, 1, "DUR",
			     "stop after this long (default: until SIGINT/SIGTERM or the VM ends)"),
	    HVT_OPT_CPU(0, "cpu", &o->cpu, "N",
			"host CPU for the tracer (default: the highest CPU no vCPU may run on)"),
	    HVT_OPT_SIZE(0, "max-guest-ram", &o->max_guest_ram, 1ull << 21, 0, 0, "SIZE",
			 "the most guest RAM a layout change (memory hot-plug) may bring; the locked\n"
			 "memory is sized for it (default: the RAM at attach + 25 %, at least + 1G)"),
	    HVT_OPT_CPU(0, "harvest-cpu", &o->harvest_cpu, "N",
			"host CPU for the VMM's harvest thread (default: the tracer's CPU)"),
	    HVT_OPT_CHOICE(0, "mode", &o->mode, harvester_mode_choices(), "MODE", mode_help),
	    HVT_OPT_CHOICE(0, "ad-walk", &o->ad_walk_full, ad_walks, "pruned|full",
			   "mode ad: skip the 2 MiB regions the guest did not use (pruned, default where\n"
			   "the kernel can) or visit every page (full); META's ad_walk says which ran"),
	    HVT_OPT_FLAG('q', "quiet", &o->quiet, "no per-interval line on a terminal"),
	    HVT_OPT_PATH(0, "owners-port", &o->owners_port, "SOCK",
			 "store the guest agent's owners snapshots in the trace: SOCK is the unix socket\n"
			 "QEMU serves for the guest's port org.hvmtrace.owners.0 (a chardev socket,\n"
			 "server=on,wait=off, behind a virtserialport); its peer must be the VMM traced;\n"
			 "at most one snapshot an interval (docs/attribution.md)"),
	    HVT_OPT_SIZE(0, "owners-max-bytes", &o->owners_max_bytes, 4096,
			 HVT_OWN_HEADER_BYTES + (uint64_t)HVT_OWN_MAX_BODY, 0, "SIZE",
			 "the largest snapshot taken from --owners-port (default 4M); larger ones are\n"
			 "refused; counted in the locked memory (about 25 times SIZE)"),
	    HVT_OPT_PATH(0, "attached-file", &o->attached_file, "FILE",
			 "create FILE once attached and recording (for a program that waits on it)"),
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
	    .synopsis = "--attach SOCK | --domain NAME [options]",
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

	*o = (struct record_opts){.cpu = -1,
				  .harvest_cpu = -1,
				  .vmm_uid = -1,
				  .interval_ns = HVT_NSEC_PER_SEC,
				  .linger_ns = 15 * HVT_NSEC_PER_SEC,
				  .owners_max_bytes = 4ull << 20,
				  .argc = argc,
				  .argv = argv};
	rc = hvt_opts_parse(&cmd, argc, argv);
	if (rc == HVT_OPTS_RUN && !o->attach == !o->domain) {
		fprintf(stderr, "hvmtrace record: give --attach SOCK or --domain NAME (one of them)\n");
		return RECORD_USAGE;
	}
	if (rc == HVT_OPTS_RUN && o->linger_given && !o->metrics) {
		fprintf(stderr, "hvmtrace record: --metrics-linger needs --metrics\n");
		return RECORD_USAGE;
	}
	if (rc == HVT_OPTS_RUN && !o->output && !o->jsonl)
		o->output = "hvmtrace.hvt";
	if (rc == HVT_OPTS_RUN && o->owners_port && !o->output) {
		fprintf(stderr,
			"hvmtrace record: --owners-port stores snapshots in the trace: give -o FILE\n");
		return RECORD_USAGE;
	}
	/* by the file named, not the name: "-o F --jsonl ./F" would interleave both outputs in one file */
	if (rc == HVT_OPTS_RUN && o->output && o->jsonl && strcmp(o->jsonl, "-") &&
	    hvt_same_file(o->output, o->jsonl)) {
		fprintf(stderr, "hvmtrace record: -o %s and --jsonl %s name the same file\n", o->output,
			o->jsonl);
		return RECORD_USAGE;
	}
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
	if (s->ad_walk)
		hvt_trace_meta_set_present(m, HVT_META_AD_WALK);
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
	    hvt_meta_set_str(&m->tracer_version, HVT_VERSION) || hvt_meta_set_str(&m->ad_walk, s->ad_walk))
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
	if (r->owners_on && (rc = owners_port_next_interval(&r->owners, &r->s.layout, err)))
		return hvt_err_prefix(err, rc, "trace output: ");
	if (r->metrics) {
		struct stat st;

		metrics_add(r->metrics, iv, &r->s.layout,
			    r->o->output && !stat(r->o->output, &st) ? (uint64_t)st.st_size : 0);
	}
	return 0;
}

enum wake { WAKE_DEADLINE, WAKE_SIGNAL, WAKE_SOCKET, WAKE_OWNERS };

static enum wake wait_until(struct recorder *r, uint64_t deadline)
{
	for (;;) {
		uint64_t now = hvt_now_ns();
		/* the owners port only while the next harvest is not near (owners_port_pollfd) */
		int ofd =
		    r->owners_on ? owners_port_pollfd(&r->owners, now, deadline, r->o->interval_ns) : -1;
		struct pollfd p[3] = {{.fd = r->sigfd, .events = POLLIN},
				      {.fd = r->s.sock, .events = POLLIN},
				      {.fd = ofd, .events = POLLIN}};
		struct timespec ts;

		if (now >= deadline)
			return WAKE_DEADLINE;
		/* with the port polled, wake at the quarter before the deadline, where its reading stops
		 * (owners_port_pollfd leaves it out from there: ofd >= 0 means that much time is left) */
		uint64_t until = deadline - now - (ofd >= 0 ? r->o->interval_ns / 4 : 0);

		ts.tv_sec = (time_t)(until / HVT_NSEC_PER_SEC);
		ts.tv_nsec = (long)(until % HVT_NSEC_PER_SEC);
		if (ppoll(p, ofd >= 0 ? 3 : 2, &ts, NULL) < 0 && errno != EINTR)
			return WAKE_SIGNAL;
		if (p[0].revents & POLLIN)
			return WAKE_SIGNAL;
		if (p[1].revents)
			return WAKE_SOCKET;
		if (ofd >= 0 && p[2].revents)
			return WAKE_OWNERS;
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

static uint64_t process_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * HVT_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/*
 * The tracer's own cost is data: its CPU time since the last interval went out (every thread: harvest,
 * encoding, outputs) is recorded with this one, and more than half the interval is a warning, in the trace
 * (HVT_IV_TRACER_BUSY) and on stderr (the first time, and as a count at the end).
 */
static void account_cpu(struct recorder *r, struct hvt_interval *iv)
{
	uint64_t now = process_cpu_ns(), span = iv->t_end_ns - iv->t_start_ns;

	iv->tracer_cpu_ns = now - r->cpu_at_last_ns;
	iv->flags |= HVT_IV_TRACER_CPU;
	r->cpu_at_last_ns = now;
	if (span && iv->tracer_cpu_ns * 2 > span) {
		iv->flags |= HVT_IV_TRACER_BUSY;
		if (!r->busy_intervals++)
			fprintf(
			    stderr,
			    "hvmtrace record: warning: interval %llu: the tracer needed %.0f %% of its CPU (more than 50 %%); deadlines may be missed at this interval (flagged in the trace; report shows the share per interval)\n",
			    (unsigned long long)iv->seq, 100.0 * (double)iv->tracer_cpu_ns / (double)span);
	}
}

/*
 * Every interval the harvester produced, whatever brought it, ends here: its bandwidth, written ⊆ accessed,
 * the tracer's CPU time, then the outputs. Takes iv.
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
		account_cpu(r, iv);
		rc = emit(r, iv, err);
	}
	if (!rc) {
		r->last_seq = iv->seq;
		r->last_t_end_ns = iv->t_end_ns;
		r->final_recorded |= (iv->flags & HVT_IV_FINAL) != 0;
	}
	session_interval_done(&r->s, iv);
	return rc;
}

/*
 * The VMM announced a layout beyond the memory budget (session.c refused it). What the guest did since the
 * last interval is unknown: a last interval without sets records the refusal in the trace.
 */
static void emit_refusal(struct recorder *r)
{
	struct hvt_interval iv;
	struct hvt_err e = {{0}};
	uint64_t now = hvt_now_ns();

	hvt_interval_init(&iv, &r->s.layout, HVT_IV_LAYOUT_REFUSED | HVT_IV_FINAL);
	iv.seq = r->s.seq > r->last_seq ? r->s.seq : r->last_seq + 1; /* the harvest it interrupted, if any */
	iv.t_start_ns = r->last_t_end_ns ? r->last_t_end_ns : r->s.t_armed_ns;
	iv.t_end_ns = now > iv.t_start_ns ? now : iv.t_start_ns;
	iv.wall_start_ns = hvt_wall_now_ns() - (int64_t)(now - iv.t_start_ns);
	if (emit_harvested(r, &iv, 0, true, &e))
		fprintf(stderr, "hvmtrace record: warning: the refusal is not in the trace: %s\n", e.msg);
}

/*
 * Of the count deadlines first, first + interval, ..., those before end: a deadline at or after the end of
 * the run (--duration) is not one of the run's, so a tracer that oversleeps the end misses none of those.
 */
static uint32_t deadlines_in_run(uint64_t first, uint64_t count, uint64_t end, uint64_t iv_ns)
{
	uint64_t before_end = end > first ? (end - first + iv_ns - 1) / iv_ns : 0;

	return (uint32_t)(count < before_end ? count : before_end);
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
		if (r->s.layout_refused)
			emit_refusal(r);
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

/*
 * Deadlines an interval harvested off the schedule (the VMM's last one) passed without a harvest: every
 * deadline t0 + k·interval inside (t_start, t_end] but the one it stands for. A tracer starved while the
 * guest stopped would otherwise merge them silently into this interval.
 */
static uint32_t missed_off_schedule(const struct recorder *r, const struct hvt_interval *iv)
{
	const uint64_t t0 = r->s.t_armed_ns, iv_ns = r->o->interval_ns;
	uint64_t spans;

	if (iv->t_start_ns < t0 || iv->t_end_ns < iv->t_start_ns)
		return 0;
	spans = (iv->t_end_ns - t0) / iv_ns - (iv->t_start_ns - t0) / iv_ns;
	return spans > 1 ? (uint32_t)(spans - 1) : 0;
}

/* The VMM ended the conversation: the guest's last interval, if the harvester can still take it. */
static void emit_after_end(struct recorder *r)
{
	const struct harvester *h = r->s.harvester;
	struct hvt_interval iv = {0};
	struct hvt_err e = {{0}};
	int rc = h->after_end ? h->after_end(&r->s, &iv, &e) : 0;

	if (rc > 0) /* final only if it is the guest's last: a VMM may answer otherwise */
		rc = emit_harvested(r, &iv, missed_off_schedule(r, &iv), false, &e);
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
	if (rc && r->s.layout_refused) {
		emit_refusal(r);
		*status = RECORD_FAILED;
		return 1;
	}
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
	if (emit_harvested(r, &iv, missed_off_schedule(r, &iv), false, err)) {
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
		case WAKE_OWNERS:
			if (owners_port_read(&r->owners, &r->s.layout, err)) {
				hvt_err_prefix(err, -EIO, "trace output: ");
				return RECORD_FAILED;
			}
			continue;
		case WAKE_DEADLINE:
			break;
		}
		/* Overslept past later deadlines: this interval covers them, and says so. */
		uint64_t now = hvt_now_ns();
		if (deadline < end && now - deadline >= iv_ns) {
			uint64_t late = (now - deadline) / iv_ns;

			missed += deadlines_in_run(deadline, late, end, iv_ns);
			deadline = deadline + late * iv_ns < end ? deadline + late * iv_ns : end;
		}
		bool last = deadline >= end;
		bool cut_short = last && r->o->duration_ns % iv_ns;
		if (harvest_and_emit(r, missed, cut_short, &deadline, end, err))
			return r->s.said_bye ? 0 : RECORD_FAILED;
		if (r->s.vmm_gone) { /* the VMM said bye while we harvested */
			if (r->s.said_bye && !r->final_recorded)
				emit_after_end(r); /* that interval was not its last */
			return r->s.said_bye ? 0 : RECORD_FAILED;
		}
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

			missed = deadlines_in_run(deadline + iv_ns, skip, end, iv_ns);
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

	if (r->o->no_bw)
		return 0;
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

/* --metrics: the server thread starts now, while binding to any port is still allowed. */
static int start_metrics(struct recorder *r, struct hvt_err *err)
{
	struct hvt_trace_meta m = {0};
	char url[128];

	if (!r->o->metrics)
		return 0;
	if (hvt_vm_bw_describe(r->bw, &m)) {
		hvt_trace_meta_fini(&m);
		return hvt_err_set(err, -ENOMEM, "out of memory");
	}
	const struct metrics_run run = {
	    .vm = r->s.hello.vm_name,
	    .vmm = r->s.hello.vmm,
	    .mode = hvt_mode_name(r->s.mode),
	    .interval_ns = r->o->interval_ns,
	    .page_size = r->s.layout.page_size,
	    .accessed_available = (r->s.harvester->sets & HVT_IV_ACCESSED) != 0,
	    .channels = &m.channels,
	};
	r->metrics = metrics_start(r->o->metrics, &run, url, sizeof(url), err);
	hvt_trace_meta_fini(&m);
	if (!r->metrics)
		return -1;
	fprintf(stderr, "hvmtrace record: metrics at %s\n", url);
	int rc = metrics_registry_add(url, r->announced, sizeof(r->announced));
	if (rc) {
		r->announced[0] = 0;
		fprintf(stderr, "hvmtrace record: warning: hvmtrace top will not find this recorder: %s\n",
			strerror(-rc));
	}
	return 0;
}

/* The run's last intervals reach a scraper only if the endpoint outlives the run until one scrapes (a VM
 * that ends between two scrapes took them with it): the registry keeps naming it meanwhile, for top. */
static void linger(struct recorder *r)
{
	char dur[32];

	metrics_finish(r->metrics);
	if (!r->o->linger_ns)
		return;
	/* the signal that ended the run is still pending: only a new one ends the wait */
	for (struct pollfd p = {.fd = r->sigfd, .events = POLLIN}; poll(&p, 1, 0) == 1;) {
		struct signalfd_siginfo si;

		if (read(r->sigfd, &si, sizeof(si)) != sizeof(si))
			break;
	}
	hvt_format_duration(r->o->linger_ns, dur, sizeof(dur));
	fprintf(stderr,
		"hvmtrace record: metrics: serving the final figures until a scrape takes them (at most %s, "
		"--metrics-linger; a signal ends it)\n",
		dur);
	switch (metrics_linger(r->metrics, r->o->linger_ns, r->sigfd)) {
	case METRICS_SCRAPED:
		fprintf(stderr, "hvmtrace record: metrics: the final figures were scraped\n");
		break;
	case METRICS_LINGERED:
		fprintf(stderr,
			"hvmtrace record: metrics: warning: no scrape took the final figures within %s\n",
			dur);
		break;
	case METRICS_STOPPED:
		fprintf(stderr, "hvmtrace record: metrics: stopped before a scrape took the final figures\n");
		break;
	}
}

/* owners_port's store: the snapshot goes to every output that keeps them (the trace). */
static int store_owners(void *ctx, uint64_t at_ns, const uint8_t *snap, size_t len, struct hvt_err *err)
{
	struct recorder *r = ctx;

	for (int i = 0; i < r->nsinks; i++) {
		int rc = r->sinks[i]->owners ? r->sinks[i]->owners(r->sinks[i], at_ns, snap, len, err) : 0;

		if (rc)
			return hvt_err_prefix(err, rc, "%s output: ", r->sinks[i]->name);
	}
	return 0;
}

/* --owners-port: connected while connecting to any socket is still allowed; a port not there is a warning. */
static int open_owners_port(struct recorder *r, struct hvt_err *err)
{
	if (!r->o->owners_port)
		return 0;
	if (owners_port_open(&r->owners, r->o->owners_port, r->s.vmm_pid, r->o->owners_max_bytes,
			     store_owners, r))
		return hvt_err_set(err, -ENOMEM, "out of memory");
	r->owners_on = true;
	return 0;
}

/* The owners port's figures, for the closing summary. */
static void report_owners(const struct recorder *r)
{
	const struct owners_port *p = &r->owners;
	char read[32];

	if (!r->o->owners_port)
		return;
	hvt_format_size(p->bytes_read, read, sizeof(read));
	fprintf(
	    stderr,
	    "hvmtrace record: owners port %s: %llu snapshots stored (%llu bytes), %llu refused, %llu dropped "
	    "(cut off by a close or the end); %s read%s\n",
	    p->path, (unsigned long long)p->stored, (unsigned long long)p->stored_bytes,
	    (unsigned long long)p->refused, (unsigned long long)p->dropped, read,
	    p->refused_peer      ? "; the peer was refused (not the VMM)"
	    : !p->ever_connected ? "; never connected"
	    : p->closes          ? "; the port closed"
				 : "");
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

/* Intervals of the trace index kept in the locked reserve: 12 MiB at most. Past them the index (32 bytes an
 * interval) grows on in memory that is not locked, which cannot fail for want of locked memory. */
#define LOCKED_INDEX_INTERVALS 65536

/*
 * Sizes the locked memory for this guest and this run (mem_budget.h), locks it while the privilege to raise
 * the limit is still held, and says how much that is.
 */
static int lock_budget(struct recorder *r, const struct harvester *h, struct hvt_err *err)
{
	const struct session *s = &r->s;
	uint64_t ram = hvt_layout_total_pages(&s->layout) * s->layout.page_size;
	uint64_t grow = ram / 4 > (1ull << 30) ? ram / 4 : 1ull << 30;
	uint64_t run = r->o->duration_ns ? r->o->duration_ns / r->o->interval_ns + 2 : LOCKED_INDEX_INTERVALS;
	struct mem_budget_in in = {
	    .max_guest_bytes = r->o->max_guest_ram ? r->o->max_guest_ram : ram + grow,
	    .page_size = s->layout.page_size,
	    .max_slots = HVT_LAYOUT_MAX_SLOTS,
	    .nsets = (h->sets & HVT_IV_ACCESSED) ? 2 : 1,
	    .retry_copy = h->mode == HVT_MODE_AD,
	    .max_intervals = run < LOCKED_INDEX_INTERVALS ? run : LOCKED_INDEX_INTERVALS,
	    .owners_bytes = r->o->owners_port ? owners_port_memory(r->o->owners_max_bytes) : 0,
	};
	struct mem_budget b;
	char what[64], ram_s[32], max_s[32], lck_s[32], rss_s[32];
	int rc;

	hvt_format_size(ram, ram_s, sizeof(ram_s));
	if (in.max_guest_bytes < ram)
		return hvt_err_set(err, -EINVAL, "--max-guest-ram is less than the guest's %s of RAM", ram_s);
	snprintf(what, sizeof(what), "a %s guest", ram_s);
	rc = mem_budget_lock(mem_budget_working(&in), what, &b, err);
	if (rc)
		return rc;
	r->s.max_guest_bytes = in.max_guest_bytes;
	hvt_format_size(in.max_guest_bytes, max_s, sizeof(max_s));
	hvt_format_size(b.locked, lck_s, sizeof(lck_s));
	hvt_format_size(b.resident, rss_s, sizeof(rss_s));
	fprintf(stderr, "hvmtrace record: resident memory %s (%s locked), enough for guest RAM up to %s\n",
		rss_s, lck_s, max_s);
	return 0;
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

/* The closing lines of a run that started: how busy the tracer was, and what was recorded. */
static void report_end(const struct recorder *r, int status)
{
	const struct record_opts *o = r->o;

	if (r->busy_intervals)
		fprintf(
		    stderr,
		    "hvmtrace record: warning: in %llu interval%s the tracer needed more than 50 %% of its CPU\n",
		    (unsigned long long)r->busy_intervals, r->busy_intervals == 1 ? "" : "s");
	fprintf(stderr, "hvmtrace record: %llu intervals recorded (%llu deadlines missed)%s%s; %s\n",
		(unsigned long long)r->intervals, (unsigned long long)r->missed_total,
		o->output ? " to " : "", o->output ? o->output : "",
		r->s.end_reason[0] ? r->s.end_reason
		: status           ? "stopped by the error above"
				   : "stopped");
}

/*
 * One cleanup path (`out`) for every exit once the stop signals are blocked: a step that fails has set the
 * reason the VMM's bye gives (and the status, where it is not RECORD_USAGE) and jumps to `fail`, which
 * prints err, or straight to `out` when it printed its own line. Every release is harmless on what was not
 * taken.
 */
int cmd_record(int argc, char **argv)
{
	struct record_opts o;
	struct recorder r = {.o = &o, .s = {.sock = -1}, .sigfd = -1};
	struct hvt_err err = {{0}};
	const struct harvester *h;
	const char *bye = "error"; /* the reason the VMM is given */
	bool ran = false;          /* the run started: its end is reported */
	char ivs[32];
	int rc, status = RECORD_USAGE, cpu;

	rc = parse_args(argc, argv, &o);
	if (rc != HVT_OPTS_RUN)
		return rc;
	if (o.metrics && metrics_check_spec(o.metrics, &err)) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		return RECORD_USAGE;
	}
	r.sigfd = block_stop_signals();
	if (r.sigfd < 0) {
		perror("hvmtrace record: signalfd");
		return RECORD_FAILED;
	}

	char domain_sock[4200];
	if (o.domain) {
		struct hvt_lv_domain d;

		rc = hvt_lv_lookup(o.connect, o.domain, &d, &err);
		if (!rc && !d.traced)
			rc = hvt_err_set(&err, -EINVAL,
					 "domain '%s' has no <hvmtrace:trace> (hvmtrace virt-xml)", o.domain);
		if (rc)
			goto fail;
		hvt_lv_path(&d, "qemu/vm.sock", domain_sock, sizeof(domain_sock));
		o.attach = domain_sock;
		if (o.vmm_uid < 0)
			o.vmm_uid = (int)d.uid;
		hvt_lv_free(&d);
	}
	if (session_connect(&r.s, o.attach, o.vmm_uid, &err))
		goto fail;
	if (o.mode == HVT_MODE_NONE)
		o.mode = harvester_auto_mode(r.s.hello.modes);
	h = harvester_for_mode(o.mode);
	if (!(r.s.hello.modes & HVT_MODE_BIT(o.mode)) || !h) {
		report_mode_unavailable(&r.s, o.mode);
		bye = "mode not available";
		goto out;
	}

	cpu = choose_cpu(&r, &err);
	bye = "bad cpu";
	if (pin_to_cpu(cpu, &err))
		goto fail;
	/* Before attaching: locking a large reserve takes a while, and the first interval starts at attach.
	 */
	bye = "not enough locked memory";
	if (lock_budget(&r, h, &err))
		goto fail;
	r.s.ad_walk_full = o.ad_walk_full;
	rc = session_attach(&r.s, h, o.harvest_cpu >= 0 ? o.harvest_cpu : cpu, &err);
	if (!rc && h->start)
		rc = h->start(&r.s, &err);
	if (rc) {
		/* Nothing is recorded yet, and no trace was opened: a VMM that went away is not usable. */
		fprintf(stderr, "hvmtrace record: %s; nothing recorded\n", err.msg);
		bye = "attach failed";
		goto out;
	}
	bye = "bandwidth fallback not available";
	if (open_bandwidth(&r, &err))
		goto fail;
	bye = "cannot serve metrics";
	if (start_metrics(&r, &err))
		goto fail;
	bye = "cannot write output";
	if (open_sinks(&r, &err, cpu) || open_owners_port(&r, &err))
		goto fail;
	/* Everything that needed privilege (the socket, outputs, memory locking) is done. */
	r.cpu_at_last_ns = process_cpu_ns();
	bye = "cannot drop privileges";
	if (drop_all_capabilities(&err)) {
		status = RECORD_FAILED;
		goto fail;
	}

	hvt_format_duration(o.interval_ns, ivs, sizeof(ivs));
	char harvester[64];
	h->describe(&r.s, harvester, sizeof(harvester));
	fprintf(
	    stderr,
	    "hvmtrace record: attached to VM '%s' (pid %d, %s) in %s mode; interval %s; tracer on CPU %d, %s\n",
	    r.s.hello.vm_name, (int)r.s.vmm_pid, r.s.hello.vmm, hvt_mode_name(r.s.mode), ivs, cpu, harvester);
	if (o.attached_file && announce_attached(o.attached_file, r.s.vmm_pid, &err)) {
		status = RECORD_FAILED;
		goto fail;
	}

	ran = true;
	status = run(&r, &err);
	if (!status && r.s.said_bye && !r.final_recorded) {
		/* A trace that ends without what the guest did last is not complete, whatever the VMM said.
		 */
		hvt_err_set(
		    &err, -EPROTO,
		    "%s, but the guest's final interval never came: what it did after interval %llu is not in the trace",
		    r.s.end_reason, (unsigned long long)r.last_seq);
		status = RECORD_FAILED;
	}
	bye = status ? "tracer error" : "tracer stopped";
	if (!status)
		goto out;
fail:
	fprintf(stderr, "hvmtrace record: %s\n", err.msg);
out:
	session_close(&r.s, bye);
	if (close_sinks(&r, &err) && ran) {
		fprintf(stderr, "hvmtrace record: %s\n", err.msg);
		status = RECORD_FAILED;
	}
	hvt_vm_bw_close(r.bw);
	if (r.owners_on)
		owners_port_close(&r.owners);
	if (ran)
		report_owners(&r);
	if (ran)
		report_end(&r, status);
	if (ran && r.metrics)
		linger(&r);
	metrics_stop(r.metrics);
	if (r.announced[0])
		unlink(r.announced);
	close(r.sigfd);
	return status;
}
