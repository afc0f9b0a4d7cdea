// SPDX-License-Identifier: MIT
/*
 * hvmtrace doctor's bandwidth self-test arithmetic (hvmtrace/doctor/selftest.c): against a model whose
 * counts the test controls (right band passes; a counter counting half or double fails naming the channel
 * and the ratio; one that never moves fails; one that did not run; traffic seen on another channel; a
 * background too large to judge), and against the stand-in PMU (tests/fixtures/sysfs/standin-faults: real
 * perf_event_open of software page-fault events), alone and with a channel's counts halved on the way.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "../../hvmtrace/doctor/selftest.h"
#include "../../hvmtrace/doctor/selftest_sources.h"
#include "hvmtrace/pmu.h"

#define MIB (1ull << 20)

static const struct st_band band = {ST_BAND_LO, ST_BAND_HI};

/* ---- the model: per channel a gain on the traffic that reaches it, a background per window ---- */

struct model {
	unsigned n;
	double gain[ST_MAX_CHANNELS][2]; /* counted / moved, per direction */
	uint64_t background[ST_MAX_CHANNELS][2];
	bool stopped[ST_MAX_CHANNELS]; /* the counter does not run */
	int lands_on;                  /* where the traffic really goes (-1: the target's channels) */
	bool totals;                   /* counts reads and writes together, in [ST_READ] (resctrl-like) */
	uint64_t burst_once; /* someone else's burst on the target, in the first traffic window only */
	uint64_t pending[ST_MAX_CHANNELS][2];
	uint64_t bytes; /* moved per window */
};

static int model_sample(struct st_source *s, struct st_counts *out, struct hvt_err *e)
{
	struct model *m = s->ctx;

	(void)e;
	for (unsigned k = 0; k < m->n; k++) {
		out[k].counted = !m->stopped[k];
		for (int d = 0; d < 2; d++) {
			out[k].bytes[d] = m->stopped[k] ? 0 : m->background[k][d] + m->pending[k][d];
			m->pending[k][d] = 0;
		}
	}
	return 0;
}

static int model_drive(struct st_target *t, enum st_dir d, uint64_t *moved, struct hvt_err *e)
{
	struct model *m = t->ctx;

	(void)e;
	for (unsigned i = 0; i < t->nin; i++) {
		unsigned k = m->lands_on >= 0 ? (unsigned)m->lands_on : t->in[i];

		m->pending[k][m->totals ? ST_READ : d] +=
		    (uint64_t)(m->gain[k][d] * (double)m->bytes / t->nin);
	}
	m->pending[t->in[0]][d] += m->burst_once;
	m->burst_once = 0;
	*moved = m->bytes;
	return 0;
}

static const char *const ids[] = {"s0.mc0.ch0", "s0.mc0.ch1", "s0.mc1.ch0", "s1.mc0.ch0"};

static void setup(struct model *m, struct st_source *s, struct st_target *t, unsigned target)
{
	memset(m, 0, sizeof(*m));
	m->n = 4;
	m->bytes = 256 * MIB;
	m->lands_on = -1;
	for (unsigned k = 0; k < m->n; k++) {
		m->gain[k][0] = m->gain[k][1] = 1.0;
		m->background[k][0] = 2 * MIB; /* the same in every window, so exactly subtracted */
		m->background[k][1] = 1 * MIB;
	}
	*s = (struct st_source){.name = "model", .n = m->n, .split = true, .sample = model_sample, .ctx = m};
	for (unsigned k = 0; k < m->n; k++)
		s->ids[k] = ids[k];
	*t = (struct st_target){.nin = 1, .in = {target}, .exclusive = true, .drive = model_drive, .ctx = m};
	snprintf(t->label, sizeof(t->label), "model");
}

/* One test's model, source, target and results. */
struct fx {
	struct model m;
	struct st_source s;
	struct st_target t;
	struct st_result res[2];
};

/* A fresh fixture whose traffic goes to channel target. */
static struct fx *fresh(unsigned target)
{
	static struct fx f;

	setup(&f.m, &f.s, &f.t, target);
	return &f;
}

static void run(struct st_source *s, struct st_target *t, struct st_result res[2])
{
	struct hvt_err e;

	assert_int_equal(st_run(s, t, 1000000, &band, res, &e), 0);
}

static void test_right_band_passes(void **state)
{

	struct fx *f = fresh(2);

	(void)state;
	f->m.gain[2][ST_READ] = 1.02;  /* prefetch and page walks */
	f->m.gain[2][ST_WRITE] = 1.00; /* non-temporal stores */
	run(&f->s, &f->t, f->res);
	assert_int_equal(f->res[ST_READ].outcome, ST_PASS);
	assert_int_equal(f->res[ST_WRITE].outcome, ST_PASS);
	/* The model's windows last different times, so the background is subtracted only approximately. */
	assert_true(f->res[ST_READ].ratio > 1.0 && f->res[ST_READ].ratio < 1.1);
	assert_int_equal(f->res[ST_READ].moved, 256 * MIB);
	assert_int_equal(f->res[ST_READ].channel, 2);
	assert_non_null(strstr(f->res[ST_READ].msg, "s0.mc1.ch0 counted 1.0"));
	assert_non_null(strstr(f->res[ST_READ].msg, "saw it: s0.mc1.ch0"));
}

static void test_half_fails_naming_channel_and_ratio(void **state)
{

	struct fx *f = fresh(2);

	(void)state;
	for (unsigned k = 0; k < f->m.n; k++)
		f->m.background[k][0] = f->m.background[k][1] = 0; /* exact ratios */
	f->m.gain[2][ST_READ] = 0.5;
	run(&f->s, &f->t, f->res);
	assert_int_equal(f->res[ST_READ].outcome, ST_LOW);
	assert_int_equal(f->res[ST_READ].channel, 2);
	assert_true(f->res[ST_READ].ratio > 0.499 && f->res[ST_READ].ratio < 0.501);
	assert_non_null(strstr(f->res[ST_READ].msg, "s0.mc1.ch0 counted 0.50 × the bytes read"));
	assert_non_null(strstr(f->res[ST_READ].msg, "too few"));
	assert_int_equal(f->res[ST_WRITE].outcome, ST_PASS);
}

static void test_double_fails(void **state)
{

	struct fx *f = fresh(0);

	(void)state;
	for (unsigned k = 0; k < f->m.n; k++)
		f->m.background[k][0] = f->m.background[k][1] = 0;
	f->m.gain[0][ST_WRITE] =
	    2.0; /* e.g. the NT hint ignored: a read for ownership per line, counted as a write */
	run(&f->s, &f->t, f->res);
	assert_int_equal(f->res[ST_WRITE].outcome, ST_HIGH);
	assert_non_null(strstr(f->res[ST_WRITE].msg, "s0.mc0.ch0 counted 2.00 × the bytes written"));
	assert_non_null(strstr(f->res[ST_WRITE].msg, "too many"));
}

static void test_never_moves_fails(void **state)
{

	struct fx *f = fresh(1);

	(void)state;
	f->m.gain[1][ST_READ] = f->m.gain[1][ST_WRITE] = 0;
	f->m.background[1][0] = f->m.background[1][1] = 0;
	run(&f->s, &f->t, f->res);
	for (int d = 0; d < 2; d++) {
		assert_int_equal(f->res[d].outcome, ST_NEVER_MOVED);
		assert_int_equal(f->res[d].channel, 1);
		assert_non_null(strstr(f->res[d].msg, "s0.mc0.ch1: the"));
		assert_non_null(strstr(f->res[d].msg, "never moved"));
	}
}

/* A burst of someone else's traffic in one window: that window is taken again and passes. A counter
 * that counts wrong fails every attempt (the tests above). */
static void test_burst_taken_again(void **state)
{

	struct fx *f = fresh(2);

	(void)state;
	f->m.burst_once = 200 * MIB; /* lands in the first window, the write window */
	run(&f->s, &f->t, f->res);
	assert_int_equal(f->res[ST_WRITE].outcome, ST_PASS);
	assert_int_equal(f->res[ST_WRITE].attempts, 2);
	assert_int_equal(f->res[ST_READ].attempts, 1);
	f->m.gain[2][ST_READ] = 0.5;
	run(&f->s, &f->t, f->res);
	assert_int_equal(f->res[ST_READ].outcome, ST_LOW);
	assert_int_equal(f->res[ST_READ].attempts, ST_ATTEMPTS);
}

static void test_stopped_counter_is_not_zero(void **state)
{

	struct fx *f = fresh(3);

	(void)state;
	f->m.stopped[3] = true;
	run(&f->s, &f->t, f->res);
	assert_int_equal(f->res[ST_READ].outcome, ST_NOT_COUNTED);
	assert_non_null(strstr(f->res[ST_READ].msg, "s1.mc0.ch0: the counter did not run"));
}

static void test_traffic_elsewhere_fails(void **state)
{

	struct fx *f = fresh(2);

	(void)state;
	f->m.lands_on = 1; /* the chanmap put the range on s0.mc1.ch0; the lines are on s0.mc0.ch1 */
	run(&f->s, &f->t, f->res);
	assert_int_equal(f->res[ST_READ].outcome, ST_OFF_TARGET);
	assert_int_equal(f->res[ST_READ].channel, 1);
	assert_non_null(strstr(f->res[ST_READ].msg, "s0.mc0.ch1 counted 1.0"));
	assert_non_null(strstr(f->res[ST_READ].msg, "does not match this host"));
}

static void test_noisy_is_inconclusive(void **state)
{
	struct st_window idle = {.ns = 100}, win = {.ns = 100};
	struct fx *f = fresh(0);

	(void)state;
	for (unsigned k = 0; k < f->m.n; k++)
		idle.c[k].counted = win.c[k].counted = true;
	idle.c[0].bytes[ST_READ] = 300 * MIB; /* as much background as the traffic and more */
	win.c[0].bytes[ST_READ] = 556 * MIB;
	st_judge(&f->s, &f->t, ST_READ, 256 * MIB, &win, &idle, &idle, &band, &f->res[0]);
	assert_int_equal(f->res[0].outcome, ST_NOISY);
	assert_true(f->res[0].ratio > 0.99 && f->res[0].ratio < 1.01);
}

/* Background is scaled by the windows' lengths: 10 MiB in a 100 ms idle window is 20 MiB in 200 ms. */
static void test_background_scaled_by_duration(void **state)
{
	struct st_window idle = {.ns = 100000000}, win = {.ns = 200000000};
	struct fx *f = fresh(0);

	(void)state;
	for (unsigned k = 0; k < f->m.n; k++)
		idle.c[k].counted = win.c[k].counted = true;
	idle.c[0].bytes[ST_WRITE] = 10 * MIB;
	win.c[0].bytes[ST_WRITE] = 20 * MIB + 128 * MIB;
	st_judge(&f->s, &f->t, ST_WRITE, 128 * MIB, &win, &idle, &idle, &band, &f->res[0]);
	assert_int_equal(f->res[0].outcome, ST_PASS);
	assert_true(f->res[0].ratio > 0.9999 && f->res[0].ratio < 1.0001);
}

/* A target of several channels (a socket's, for a buffer whose channels are unknown) is judged on its sum. */
static void test_group_target_sums(void **state)
{

	struct fx *f = fresh(0);

	(void)state;
	f->t.nin = 3;
	f->t.in[1] = 1;
	f->t.in[2] = 2;
	f->t.exclusive = false;
	for (unsigned k = 0; k < f->m.n; k++)
		f->m.background[k][0] = f->m.background[k][1] = 0;
	f->m.gain[2][ST_READ] = 0; /* one member sees none: an unpopulated channel, or ICX's ch2 */
	run(&f->s, &f->t, f->res);
	assert_int_equal(f->res[ST_WRITE].outcome, ST_PASS);
	assert_int_equal(f->res[ST_READ].outcome, ST_LOW); /* two thirds of the bytes */
	assert_true(f->res[ST_READ].ratio > 0.66 && f->res[ST_READ].ratio < 0.68);
	assert_int_equal(f->res[ST_READ].channel, -1);
	assert_non_null(strstr(f->res[ST_READ].msg, "s0.mc0.ch0+s0.mc0.ch1+s0.mc1.ch0 counted 0.67"));
}

/* resctrl-like totals: one figure per domain, compared with each direction's bytes. */
static void test_totals_source(void **state)
{

	struct fx *f = fresh(0);

	(void)state;
	f->s.split = false;
	f->m.totals = true;
	run(&f->s, &f->t, f->res);
	assert_int_equal(f->res[ST_READ].outcome, ST_PASS);
	assert_int_equal(f->res[ST_WRITE].outcome, ST_PASS);
	assert_non_null(strstr(f->res[ST_READ].msg, "read (as total bytes)"));
	assert_non_null(strstr(f->res[ST_WRITE].msg, "written (as total bytes)"));
	/* the same source with half the writes counted: the write window fails, naming the domain */
	f->m.gain[0][ST_WRITE] = 0.5;
	run(&f->s, &f->t, f->res);
	assert_int_equal(f->res[ST_WRITE].outcome, ST_LOW);
	assert_non_null(strstr(f->res[ST_WRITE].msg, "s0.mc0.ch0 counted 0.5"));
}

/* ---- the stand-in PMU: real perf_event_open of page-fault events ---- */

struct halver {
	struct st_source *inner;
	unsigned channel;
};

/* A source that halves one channel's counts on their way: a counter that counts half. */
static int halving_sample(struct st_source *s, struct st_counts *out, struct hvt_err *e)
{
	struct halver *h = s->ctx;
	int rc = h->inner->sample(h->inner, out, e);

	out[h->channel].bytes[ST_READ] /= 2;
	out[h->channel].bytes[ST_WRITE] /= 2;
	return rc;
}

static bool open_standin(struct hvt_pmu_host *host, struct st_pmu_source *p)
{
	struct hvt_pmu_source src = {.sysfs_root = "tests/fixtures/sysfs/standin-faults/sys"};
	struct hvt_err e;

	assert_int_equal(hvt_pmu_discover(host, &src, &e), 0);
	assert_true(host->stand_in);
	assert_int_equal(host->nchannels, 2);
	if (st_pmu_source_open(p, host, &e)) {
		hvt_pmu_host_fini(host);
		return false; /* not root, or perf_event_paranoid: skipped */
	}
	return true;
}

static void test_standin_pmu(void **state)
{
	struct hvt_pmu_host host;
	struct st_pmu_source p;
	struct st_standin gen = {
	    .cpu = 0, .pages = 20000, .reps = 25}; /* as doctor: beside a compile job, 5 was too few */
	struct st_target t = {.nin = 1, .in = {0}, .exclusive = true, .drive = st_standin_drive, .ctx = &gen};
	struct st_result res[2];
	struct hvt_err e;
	cpu_set_t saved;

	(void)state;
	if (!open_standin(&host, &p))
		skip();
	for (unsigned i = 0; i < host.nchannels; i++)
		assert_int_equal(st_standin_check(&host.channels[i], &e), 0);
	sched_getaffinity(0, sizeof(saved), &saved);
	/* The counters count CPU 0's faults, everyone's: a burst of another process's faults (a compiler,
	 * QEMU starting) can still spoil a run, so a run is repeated up to three times; a self-test that is
	 * wrong fails all three. */
	for (int attempt = 0;; attempt++) {
		bool ok = true;

		assert_int_equal(st_run(&p.src, &t, 50000000, &band, res, &e), 0);
		for (int d = 0; d < 2; d++) {
			assert_int_equal(res[d].moved, 25 * 20000 * 64);
			ok &= (res[d].outcome == ST_PASS || res[d].outcome == ST_NOISY) && res[d].ratio > 0.9;
		}
		if (ok)
			break;
		if (attempt == 2)
			fail_msg("three runs off the band: %s / %s", res[0].msg, res[1].msg);
	}
	assert_non_null(strstr(res[ST_READ].msg, "s0.mc0.ch0 counted"));

	/* The same counters with channel 0's counts halved on their way: the self-test names it and the
	 * ratio. */
	struct halver h = {&p.src, 0};
	struct st_source halved = p.src;
	halved.sample = halving_sample;
	halved.ctx = &h;
	for (int attempt = 0;; attempt++) {
		bool ok = true;

		assert_int_equal(st_run(&halved, &t, 50000000, &band, res, &e), 0);
		for (int d = 0; d < 2; d++)
			ok &= res[d].outcome == ST_LOW && res[d].ratio > 0.4 && res[d].ratio < 0.65 &&
			      strstr(res[d].msg, "s0.mc0.ch0 counted 0.") != NULL;
		if (ok)
			break;
		if (attempt == 2)
			fail_msg("three runs of the halved counters not named too few: %s / %s", res[0].msg,
				 res[1].msg);
	}
	sched_setaffinity(0, sizeof(saved), &saved);
	st_pmu_source_close(&p);
	hvt_pmu_host_fini(&host);
}

/* The first stand-in tree counts cpu-clock, which nothing can drive: the generator says so. */
static void test_standin_clock_refused(void **state)
{
	struct hvt_pmu_source src = {.sysfs_root = "tests/fixtures/sysfs/standin/sys"};
	struct hvt_pmu_host host;
	struct hvt_err e;

	(void)state;
	assert_int_equal(hvt_pmu_discover(&host, &src, &e), 0);
	assert_int_equal(st_standin_check(&host.channels[0], &e), -ENOTSUP);
	assert_non_null(strstr(e.msg, "software events 0 and 3"));
	hvt_pmu_host_fini(&host);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_right_band_passes),
	    cmocka_unit_test(test_half_fails_naming_channel_and_ratio),
	    cmocka_unit_test(test_double_fails),
	    cmocka_unit_test(test_never_moves_fails),
	    cmocka_unit_test(test_burst_taken_again),
	    cmocka_unit_test(test_stopped_counter_is_not_zero),
	    cmocka_unit_test(test_traffic_elsewhere_fails),
	    cmocka_unit_test(test_noisy_is_inconclusive),
	    cmocka_unit_test(test_background_scaled_by_duration),
	    cmocka_unit_test(test_group_target_sums),
	    cmocka_unit_test(test_totals_source),
	    cmocka_unit_test(test_standin_pmu),
	    cmocka_unit_test(test_standin_clock_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
