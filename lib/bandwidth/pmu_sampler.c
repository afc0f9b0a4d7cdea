// SPDX-License-Identifier: MIT
/*
 * The sampler: one perf counter per channel, direction and sub-channel, opened CPU-wide (pid -1) on a CPU
 * of the channel's socket, read as {value, time_enabled, time_running}. Uncore counters are 48 bits wide
 * in hardware, but the kernel folds them into a 64-bit count (docs/hardware-notes.md §1.5), so a window's
 * delta is a plain subtraction.
 */
#include <cap-ng.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "pmu_internal.h"

struct counter {
	int fd;
	uint64_t open_value;
	uint64_t prev[3]; /* value, time_enabled, time_running at the previous read */
};

struct sampled_channel {
	struct hvt_pmu_channel ch;
	struct counter rd[HVT_PMU_MAX_SUB], wr[HVT_PMU_MAX_SUB];
};

struct hvt_pmu_sampler {
	unsigned n;
	struct sampled_channel *chans;
};

bool hvt_pmu_window_delta(const uint64_t prev[3], const uint64_t cur[3], uint64_t *delta, double *running)
{
	uint64_t d = cur[0] - prev[0], en = cur[1] - prev[1], run = cur[2] - prev[2];

	if (!en) { /* no time passed: nothing to scale */
		*delta = d;
		*running = 1.0;
		return true;
	}
	if (!run) {
		*delta = 0;
		*running = 0.0;
		return false;
	}
	*running = run >= en ? 1.0 : (double)run / (double)en;
	/* Multiplexed: the count covers run of en nanoseconds; scale as perf does. */
	*delta = run >= en ? d : (uint64_t)((double)d * (double)en / (double)run + 0.5);
	return true;
}

static int read_counter(const struct counter *c, uint64_t v[3])
{
	ssize_t n = read(c->fd, v, 3 * sizeof(uint64_t));

	if (n < 0)
		return -errno;
	return n == 3 * sizeof(uint64_t) ? 0 : -EIO;
}

static int paranoid_level(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int level = 99;

	if (f) {
		if (fscanf(f, "%d", &level) != 1)
			level = 99;
		fclose(f);
	}
	return level;
}

/* One sentence: why the kernel refused, and what to change. */
static int refused(const struct hvt_pmu_channel *c, int e, struct hvt_err *err)
{
	int level = paranoid_level();
	bool admin, perfmon;

	capng_get_caps_process();
	admin = capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_ADMIN);
	perfmon = capng_have_capability(CAPNG_EFFECTIVE, CAP_PERFMON);
	if (level >= 3 && !admin)
		return hvt_err_set(
		    err, e,
		    "the kernel refused to open %s on CPU %d: kernel.perf_event_paranoid is %d, at which only CAP_SYS_ADMIN may use perf_event_open%s; run as root, or lower it with `sysctl kernel.perf_event_paranoid=0`",
		    c->pmu, c->cpu, level, perfmon ? " (CAP_PERFMON is not enough)" : "");
	if (!admin && !perfmon)
		return hvt_err_set(
		    err, e,
		    "the kernel refused to open %s on CPU %d: CPU-wide counters need CAP_PERFMON (or CAP_SYS_ADMIN) because kernel.perf_event_paranoid is %d (above 0); run as root, grant CAP_PERFMON, or set `sysctl kernel.perf_event_paranoid=0`",
		    c->pmu, c->cpu, level);
	return hvt_err_set(err, e,
			   "the kernel refused to open %s on CPU %d (%s) although this process holds %s",
			   c->pmu, c->cpu, strerror(-e), admin ? "CAP_SYS_ADMIN" : "CAP_PERFMON");
}

static int open_counter(struct counter *k, const struct hvt_pmu_channel *c, const struct hvt_pmu_event *ev,
			struct hvt_err *err)
{
	struct perf_event_attr a = {0};
	int e;

	a.size = sizeof(a);
	a.type = c->type;
	a.config = ev->config;
	a.config1 = ev->config1;
	a.config2 = ev->config2;
	/* Uncore PMUs refuse exclude_* bits and sampling (kernel: PERF_PMU_CAP_NO_EXCLUDE): leave them 0. */
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	k->fd = (int)syscall(SYS_perf_event_open, &a, -1, c->cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (k->fd >= 0)
		return 0;
	e = -errno;
	switch (e) {
	case -EACCES:
	case -EPERM:
		return refused(c, e, err);
	case -ENOENT:
		return hvt_err_set(err, e,
				   "%s: this kernel has no PMU of type %" PRIu32
				   " (read from the sysfs tree): the tree is not this host's",
				   c->pmu, c->type);
	case -ENODEV:
		return hvt_err_set(err, e, "%s cannot count on CPU %d (offline, or not of the PMU's socket)",
				   c->pmu, c->cpu);
	case -EMFILE:
	case -ENFILE:
		return hvt_err_set(err, e, "out of file descriptors opening %s: raise the limit (ulimit -n)",
				   c->pmu);
	case -EINVAL:
		return hvt_err_set(err, e, "the kernel rejected %s/%s/ (config 0x%" PRIx64 ") on CPU %d",
				   c->pmu, ev->terms, ev->config, c->cpu);
	default:
		return hvt_err_set(err, e, "perf_event_open of %s/%s/ on CPU %d: %s", c->pmu, ev->terms,
				   c->cpu, strerror(-e));
	}
}

static int start_channel(struct sampled_channel *s, struct hvt_err *err)
{
	for (unsigned i = 0; i < s->ch.nsub; i++) {
		int rc = open_counter(&s->rd[i], &s->ch, &s->ch.read[i], err);

		if (!rc)
			rc = open_counter(&s->wr[i], &s->ch, &s->ch.write[i], err);
		if (rc)
			return rc;
	}
	return 0;
}

static void close_channel(struct sampled_channel *s)
{
	for (unsigned i = 0; i < HVT_PMU_MAX_SUB; i++) {
		if (s->rd[i].fd >= 0)
			close(s->rd[i].fd);
		if (s->wr[i].fd >= 0)
			close(s->wr[i].fd);
		s->rd[i].fd = s->wr[i].fd = -1;
	}
}

/* Sums one direction's sub-channels over the window and advances their baselines. */
static int sum_window(struct counter *k, unsigned nsub, uint64_t *delta, uint64_t *total, double *running,
		      bool *counted)
{
	*delta = *total = 0;
	for (unsigned i = 0; i < nsub; i++) {
		uint64_t cur[3], d;
		double r;
		int rc = read_counter(&k[i], cur);

		if (rc)
			return rc;
		if (!hvt_pmu_window_delta(k[i].prev, cur, &d, &r))
			*counted = false;
		*delta += d;
		*total += cur[0] - k[i].open_value;
		if (r < *running)
			*running = r;
		memcpy(k[i].prev, cur, sizeof(cur));
	}
	return 0;
}

int hvt_pmu_read(struct hvt_pmu_sampler *s, struct hvt_pmu_counts *out, struct hvt_err *err)
{
	for (unsigned i = 0; i < s->n; i++) {
		struct sampled_channel *c = &s->chans[i];
		struct hvt_pmu_counts *o = &out[i];
		int rc;

		*o = (struct hvt_pmu_counts){.running = 1.0, .counted = true};
		rc =
		    sum_window(c->rd, c->ch.nsub, &o->read_cas, &o->read_cas_total, &o->running, &o->counted);
		if (!rc)
			rc = sum_window(c->wr, c->ch.nsub, &o->write_cas, &o->write_cas_total, &o->running,
					&o->counted);
		if (rc)
			return hvt_err_set(err, rc, "reading the counters of %s (%s on CPU %d): %s", c->ch.id,
					   c->ch.pmu, c->ch.cpu, strerror(-rc));
		o->read_bytes = o->read_cas * HVT_PMU_BYTES_PER_CAS;
		o->write_bytes = o->write_cas * HVT_PMU_BYTES_PER_CAS;
	}
	return 0;
}

static int no_counter(const struct hvt_pmu_host *h, const char *id, struct hvt_err *err)
{
	char list[256] = "";
	size_t used = 0;

	for (unsigned i = 0; i < h->nchannels && used + HVT_CHANNEL_MAX + 8 < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
					 h->channels[i].id);
	if (used + HVT_CHANNEL_MAX + 8 >= sizeof(list))
		snprintf(list + used, sizeof(list) - used, ", …");
	return hvt_err_set(
	    err, -ENOENT,
	    "channel %s has no counter on this host (%s has: %s): the chanmap or VM layout was made for another host or generation",
	    id, h->sysfs_root, h->nchannels ? list : "no channels");
}

int hvt_pmu_open(struct hvt_pmu_sampler **sp, const struct hvt_pmu_host *h, const char *const *ids,
		 unsigned nids, struct hvt_err *err)
{
	struct hvt_pmu_sampler *s = calloc(1, sizeof(*s));
	unsigned n = ids ? nids : h->nchannels;
	int rc = 0;

	*sp = NULL;
	if (!s || !(s->chans = calloc(n ? n : 1, sizeof(*s->chans)))) {
		free(s);
		return hvt_err_set(err, -ENOMEM, "out of memory");
	}
	for (unsigned i = 0; i < n && !rc; i++) {
		const struct hvt_pmu_channel *c = ids ? hvt_pmu_find_channel(h, ids[i]) : &h->channels[i];
		struct sampled_channel *sc = &s->chans[i];

		for (unsigned k = 0; k < HVT_PMU_MAX_SUB; k++)
			sc->rd[k].fd = sc->wr[k].fd = -1;
		s->n = i + 1;
		if (!c) {
			rc = no_counter(h, ids[i], err);
			break;
		}
		sc->ch = *c;
		rc = start_channel(sc, err);
	}
	/* Baselines: the first window starts now. */
	for (unsigned i = 0; i < s->n && !rc; i++) {
		struct sampled_channel *sc = &s->chans[i];

		for (unsigned k = 0; k < sc->ch.nsub && !rc; k++) {
			if ((rc = read_counter(&sc->rd[k], sc->rd[k].prev)) ||
			    (rc = read_counter(&sc->wr[k], sc->wr[k].prev)))
				hvt_err_set(err, rc, "reading %s on CPU %d: %s", sc->ch.pmu, sc->ch.cpu,
					    strerror(-rc));
			sc->rd[k].open_value = sc->rd[k].prev[0];
			sc->wr[k].open_value = sc->wr[k].prev[0];
		}
	}
	if (rc) {
		hvt_pmu_close(s);
		return rc;
	}
	*sp = s;
	return 0;
}

unsigned hvt_pmu_nchannels(const struct hvt_pmu_sampler *s)
{
	return s->n;
}

const struct hvt_pmu_channel *hvt_pmu_channel_at(const struct hvt_pmu_sampler *s, unsigned i)
{
	return i < s->n ? &s->chans[i].ch : NULL;
}

void hvt_pmu_close(struct hvt_pmu_sampler *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->n; i++)
		close_channel(&s->chans[i]);
	free(s->chans);
	free(s);
}
