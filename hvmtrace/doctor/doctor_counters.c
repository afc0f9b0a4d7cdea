// SPDX-License-Identifier: MIT
/*
 * Counters, proven: PMU discovery (docs/bandwidth.md), perf_event_paranoid (docs/hardware-notes.md §1.6),
 * and the bandwidth self-tests (selftest.h) on the PMU — DRAM traffic on a usable reservation the chanmap
 * names, else on a buffer far larger than the LLC per socket; the stand-in PMU's own traffic where the PMU
 * is a stand-in — and on resctrl MBM where it is mounted.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "doctor/doctor_placement.h"
#include "doctor/selftest_sources.h"
#include "hvmtrace/pmu.h"
#include "hvmtrace/util.h"

#define IDLE_NS       (100ull * 1000 * 1000) /* the background window */
#define MIN_BUFFER    (256ull << 20)
#define MAX_BUFFER    (1ull << 30)
#define STANDIN_PAGES 20000 /* an 80 MiB region, faulted in STANDIN_REPS times per window */
#define STANDIN_REPS                                                                                         \
	25 /* 500000 faults: a compile job on the same CPU faults ~10^4 per window (seen: 0.89 with 5) */
#define MAX_TARGETS 16

static const struct st_band band = {ST_BAND_LO, ST_BAND_HI};

/* How each source's traffic is made, per direction (docs/doctor.md says what inflates the counts). */
static const char *const dram_method[2] = {
    "reads: each line flushed, then loaded: one CAS read per line (page walks and prefetch add about 1 %)",
    "writes: full-line non-temporal stores: one CAS write per line, no read for ownership",
};
static const char *const standin_method[2] = {
    "reads: minor page faults counted as CAS reads, one per page faulted in",
    "writes: page faults counted as CAS writes, one per page faulted in",
};

/* Records one target's two results as checks "selftest.SOURCE.TARGET.DIR". */
static void report_result(struct doc_report *r, const char *source, const char *key, const char *label,
			  const char *const method[2], const struct st_result *res)
{
	for (int d = ST_READ; d <= ST_WRITE; d++) {
		const struct st_result *x = &res[d];
		char id[64];
		enum doc_status s = x->outcome == ST_PASS    ? DOC_YES
				    : x->outcome == ST_NOISY ? DOC_WARN
							     : DOC_NO;
		struct doc_check *c;

		snprintf(id, sizeof(id), "selftest.%s.%s.%s", source, key, st_dir_name((enum st_dir)d));
		c = doc_add(r, DOC_COUNTERS, id, s, "%s self-test, %s: %s", source,
			    st_dir_name((enum st_dir)d), x->msg);
		doc_evidence(
		    c, "%s; %s%s", label, method[d],
		    x->attempts > 1
			? "; the window was taken again after a failure (the result is the last one's)"
			: "");
		c->fig = (struct doc_figure){true,     x->moved, x->counted > 0 ? (uint64_t)x->counted : 0,
					     x->ratio, band.lo,  band.hi};
		if (s == DOC_NO)
			doc_fix(
			    c, "%s",
			    x->outcome == ST_OFF_TARGET
				? "probe the channels again (chanmap probe): the map does not describe this host"
				: "the counters do not measure this host's DRAM traffic: check the PMU's event encodings (hvmtrace bw prints notes) and report it with this output");
	}
}

static uint64_t buffer_bytes(const struct doc_env *env)
{
	uint64_t llc = st_llc_bytes(env->sysfs_root), b;

	if (env->selftest_bytes)
		return env->selftest_bytes;
	b = 8 * llc > MIN_BUFFER ? 8 * llc : MIN_BUFFER;
	return b < MAX_BUFFER ? b : MAX_BUFFER;
}

/* The channels (indices) of the source on socket s, and a CPU of that socket. */
static unsigned socket_channels(const struct hvt_pmu_host *h, int socket, struct st_target *t, int *cpu)
{
	t->nin = 0;
	for (unsigned i = 0; i < h->nchannels && t->nin < ST_MAX_TARGET; i++)
		if (h->channels[i].socket == socket) {
			t->in[t->nin++] = i;
			*cpu = h->channels[i].cpu;
		}
	return t->nin;
}

/* The stand-in: one target per "socket" (CPU), page faults there. */
static void standin_tests(const struct hvt_pmu_host *h, struct st_pmu_source *p, struct doc_report *r)
{
	struct hvt_err e;

	for (unsigned i = 0; i < h->nchannels; i++)
		if (st_standin_check(&h->channels[i], &e)) {
			struct doc_check *c = doc_add(r, DOC_COUNTERS, "selftest.stand-in", DOC_SKIP,
						      "stand-in self-test not run: %s", e.msg);
			(void)c;
			return;
		}
	for (unsigned s = 0; s < h->nsockets; s++) {
		struct st_standin gen = {.pages = STANDIN_PAGES, .reps = STANDIN_REPS};
		struct st_target t = {.exclusive = true, .drive = st_standin_drive, .ctx = &gen};
		struct st_result res[2];
		char key[32];

		if (!socket_channels(h, (int)s, &t, &gen.cpu))
			continue;
		snprintf(t.label, sizeof(t.label),
			 "STAND-IN: %" PRIu64
			 " page faults on CPU %d, counted by socket %u's software events",
			 (uint64_t)STANDIN_PAGES * STANDIN_REPS, gen.cpu, s);
		snprintf(key, sizeof(key), "s%u", s);
		if (st_run(&p->src, &t, IDLE_NS, &band, res, &e)) {
			doc_add(r, DOC_COUNTERS, "selftest.stand-in", DOC_NO,
				"stand-in self-test failed to run: %s", e.msg);
			return;
		}
		report_result(r, "stand-in", key, t.label, standin_method, res);
	}
}

/* DRAM traffic: on usable reservations the chanmap names, else a buffer per socket. */
static void dram_tests(const struct doc_env *env, const struct hvt_pmu_host *h, struct st_pmu_source *p,
		       const struct doc_placement_facts *pf, struct doc_report *r)
{
	uint64_t bytes = buffer_bytes(env);
	unsigned ran = 0;
	struct hvt_err e;

	for (size_t i = 0; i < pf->nres; i++) {
		const struct doc_reservation *x = &pf->res[i];
		const struct hvt_pmu_channel *ch = hvt_pmu_find_channel(h, x->channel);
		struct st_dram d;
		struct st_target t = {.exclusive = true, .nin = 1, .drive = st_dram_drive, .ctx = &d};
		struct st_result res[2];

		if (!doc_reservation_usable(x) || !ch)
			continue;
		t.in[0] = (unsigned)(ch - h->channels);
		if (st_dram_devmem(&d, env->mem_path, x->start, x->size < bytes ? x->size : bytes, ch->cpu,
				   &e)) {
			doc_add(r, DOC_COUNTERS, "selftest.pmu", DOC_NO, "self-test on %s's reservation: %s",
				x->channel, e.msg);
			continue;
		}
		snprintf(t.label, sizeof(t.label),
			 "%" PRIu64 " MiB of memmap= reservation 0x%" PRIx64
			 " (channel %s) through %s, from CPU %d",
			 d.bytes >> 20, x->start, x->channel, env->mem_path, ch->cpu);
		if (!st_run(&p->src, &t, IDLE_NS, &band, res, &e))
			report_result(r, "pmu", x->channel, t.label, dram_method, res);
		else
			doc_add(r, DOC_COUNTERS, "selftest.pmu", DOC_NO, "self-test on %s: %s", x->channel,
				e.msg);
		st_dram_free(&d);
		ran++;
	}
	for (unsigned s = 0; !ran && s < h->nsockets; s++) {
		struct st_dram d;
		struct st_target t = {.drive = st_dram_drive, .ctx = &d};
		struct st_result res[2];
		char key[32];
		int cpu = 0;

		if (!socket_channels(h, (int)s, &t, &cpu))
			continue;
		if (st_dram_anon(&d, bytes, cpu, &e)) {
			doc_add(r, DOC_COUNTERS, "selftest.pmu", DOC_NO, "self-test on socket %u: %s", s,
				e.msg);
			st_dram_free(&d);
			continue;
		}
		snprintf(
		    t.label, sizeof(t.label),
		    "a %" PRIu64
		    " MiB anonymous buffer first touched from CPU %d, counted on socket %u's channels together (the buffer's channels are not known without a reservation)",
		    bytes >> 20, cpu, s);
		snprintf(key, sizeof(key), "s%u", s);
		if (!st_run(&p->src, &t, IDLE_NS, &band, res, &e))
			report_result(r, "pmu", key, t.label, dram_method, res);
		else
			doc_add(r, DOC_COUNTERS, "selftest.pmu", DOC_NO, "self-test on socket %u: %s", s,
				e.msg);
		st_dram_free(&d);
	}
}

static void judge_discovery(const struct doc_env *env, const struct hvt_pmu_host *h, int rc,
			    const struct hvt_err *e, struct doc_report *r)
{
	struct doc_check *c;
	unsigned inferred = 0;

	if (rc) {
		c = doc_add(r, DOC_COUNTERS, "pmu.discovery", DOC_NO, "%s%s",
			    rc == -ENODEV ? "" : "PMU discovery failed: ", e->msg);
		doc_evidence(c, "%s/bus/event_source/devices: no uncore_imc_<N> or amd_umc_<N>",
			     env->sysfs_root);
		doc_fix(
		    c, "%s",
		    rc == -ENODEV
			? "on a server, modprobe intel_uncore (AMD Zen 4: Linux >= 6.7); VMs and client CPUs have none"
			: "see the message");
		return;
	}
	for (unsigned i = 0; i < h->nchannels; i++)
		inferred += h->channels[i].inferred;
	c = doc_add(r, DOC_COUNTERS, "pmu.discovery", h->stand_in ? DOC_WARN : DOC_YES,
		    "%s%u channels on %u sockets (%s, %s…), CAS events %s%s",
		    h->stand_in ? "STAND-IN (software events, not DRAM): " : "", h->nchannels, h->nsockets,
		    hvt_pmu_gen_name(h->gen), h->nchannels ? h->channels[0].pmu : "",
		    h->nchannels && h->channels[0].read[0].alias[0] ? "from the kernel's aliases"
								    : "packed from the generation table",
		    inferred ? "; box → channel numbering inferred" : "");
	doc_evidence(c, "%s (docs/bandwidth.md); first channel %s: read %s, write %s%s%s", h->sysfs_root,
		     h->nchannels ? h->channels[0].id : "-",
		     h->nchannels ? h->channels[0].read[0].terms : "-",
		     h->nchannels ? h->channels[0].write[0].terms : "-", h->note[0] ? "; " : "", h->note);
	if (h->stand_in)
		doc_fix(c, "this is a test tree (--sysfs-root), not this host's memory controllers");
}

static void judge_paranoid(const struct doc_env *env, struct doc_report *r)
{
	char path[512], buf[16];
	struct doc_check *c;
	int level = 99;

	doc_proc_path(env, "sys/kernel/perf_event_paranoid", path, sizeof(path));
	if (!hvt_read_text(path, buf, sizeof(buf), NULL))
		level = atoi(buf);
	c = doc_add(r, DOC_COUNTERS, "perf.paranoid", DOC_INFO,
		    "kernel.perf_event_paranoid is %d: CPU-wide counters need %s", level,
		    level >= 3  ? "CAP_SYS_ADMIN (Debian's level 3)"
		    : level > 0 ? "CAP_PERFMON or CAP_SYS_ADMIN"
				: "no capability");
	doc_evidence(c, "%s; docs/hardware-notes.md §1.6", path);
}

static void mbm_test(const struct doc_env *env, uint64_t bytes, struct doc_report *r)
{
	char path[512];
	struct stat st;
	struct st_resctrl_source p;
	struct st_dram d;
	struct st_target t = {.drive = st_dram_drive, .ctx = &d};
	struct st_result res[2];
	struct hvt_err e;
	struct doc_check *c;

	snprintf(path, sizeof(path), "%s/info/L3_MON", env->resctrl_root);
	if (stat(path, &st)) {
		c = doc_add(r, DOC_COUNTERS, "resctrl.mbm", DOC_SKIP,
			    "resctrl MBM is not available: %s does not exist", path);
		doc_fix(
		    c,
		    "where the CPU has cqm_mbm_total: mount -t resctrl resctrl %s (only the labelled fallback --bw-fallback resctrl uses it)",
		    env->resctrl_root);
		return;
	}
	if (st_resctrl_source_open(&p, env->resctrl_root, &e)) {
		c = doc_add(r, DOC_COUNTERS, "resctrl.mbm", DOC_NO,
			    "resctrl MBM cannot count for this process: %s", e.msg);
		return;
	}
	t.nin = p.src.n < ST_MAX_TARGET ? p.src.n : ST_MAX_TARGET;
	for (unsigned i = 0; i < t.nin; i++)
		t.in[i] = i;
	if (!st_dram_anon(&d, bytes, 0, &e)) {
		snprintf(
		    t.label, sizeof(t.label),
		    "a %" PRIu64
		    " MiB anonymous buffer from CPU 0, counted as this process's RMID over every L3 domain (totals: reads and writes not split)",
		    bytes >> 20);
		if (!st_run(&p.src, &t, IDLE_NS, &band, res, &e))
			report_result(r, "resctrl", "total", t.label, dram_method, res);
		else
			doc_add(r, DOC_COUNTERS, "resctrl.mbm", DOC_NO, "resctrl self-test: %s", e.msg);
	} else
		doc_add(r, DOC_COUNTERS, "resctrl.mbm", DOC_NO, "resctrl self-test: %s", e.msg);
	st_dram_free(&d);
	st_resctrl_source_close(&p);
}

void doc_check_counters(const struct doc_env *env, struct doc_report *r)
{
	struct hvt_pmu_source src = {.sysfs_root = env->sysfs_root};
	struct hvt_pmu_host h;
	struct hvt_err e;
	char cpuinfo[512];
	cpu_set_t saved;
	int rc;

	if (strcmp(env->proc_root, "/proc")) {
		doc_proc_path(env, "cpuinfo", cpuinfo, sizeof(cpuinfo));
		src.cpuinfo = cpuinfo;
	}
	memset(&h, 0, sizeof(h));
	rc = hvt_pmu_discover(&h, &src, &e);
	judge_discovery(env, &h, rc, &e, r);
	judge_paranoid(env, r);
	if (!env->selftest) {
		doc_add(r, DOC_COUNTERS, "selftest", DOC_SKIP,
			"bandwidth self-tests not run (--no-selftest)");
	} else if (!rc) {
		struct st_pmu_source p;

		sched_getaffinity(0, sizeof(saved), &saved);
		if (st_pmu_source_open(&p, &h, &e)) {
			struct doc_check *c = doc_add(r, DOC_COUNTERS, "pmu.open", DOC_NO,
						      "the counters cannot be opened: %s", e.msg);
			doc_fix(c, "run as root, or lower kernel.perf_event_paranoid");
		} else {
			if (h.stand_in)
				standin_tests(&h, &p, r);
			else {
				struct doc_placement_facts *pf = calloc(1, sizeof(*pf));

				if (pf)
					doc_placement_gather(env, pf);
				dram_tests(env, &h, &p, pf ? pf : &(struct doc_placement_facts){0}, r);
				free(pf);
			}
			st_pmu_source_close(&p);
		}
		sched_setaffinity(0, sizeof(saved), &saved);
	} else {
		doc_add(r, DOC_COUNTERS, "selftest.pmu", DOC_SKIP,
			"PMU self-test not run: no memory-controller PMU to count with");
	}
	if (env->selftest) {
		sched_getaffinity(0, sizeof(saved), &saved);
		mbm_test(env, buffer_bytes(env), r);
		sched_setaffinity(0, sizeof(saved), &saved);
	}
	if (!rc)
		hvt_pmu_host_fini(&h);
}
