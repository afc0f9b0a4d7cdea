// SPDX-License-Identifier: MIT
/*
 * The channel probe swept over noise seeds on the MODEL memory controller (lib/chanmap/probe_model.c; not
 * hardware): every host shape at a quiet and a noisy background (and the noisy one with per-channel
 * backgrounds, bursts lasting several windows and write bursts: "rough"), seeds 1-100 each. Every run ends in
 * one of three ways, judged per 64 MiB granule against the model's truth: exact       every granule claimed,
 * every claim true; unresolved  some granules left out of the map (the probe said so), every claim made true;
 *   wrong       a claim that is not true (a channel or an interleave the memory is not on), or a probe that
 *               failed.
 * The counts are asserted: no wrong map at any level, no unresolved run at the quiet level and at most 2 %
 * at the noisy one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hvmtrace/probe.h"
#include "hvmtrace/error.h"

#define FIX   "tests/fixtures/probe/"
#define SEEDS 100

/* The two fixtures' backgrounds: model-2s6c-hole's quiet host and model-2s6c-unpopulated's noisy one. */
static const char QUIET[] =
    "{\"read_mbps\": 50, \"write_mbps\": 20, \"sigma_cas\": 500, \"prefetch\": 0.3, \"remote_dir_writes\": 0.5, \"spike_every\": 40, \"spike_cas\": 200000}";
static const char NOISY[] =
    "{\"read_mbps\": 120, \"write_mbps\": 60, \"sigma_cas\": 2000, \"prefetch\": 0.5, \"remote_dir_writes\": 0.5, \"spike_every\": 8, \"spike_cas\": 250000}";

/* The noisy level as real hosts have it: every channel's background its own (±50 %), read bursts lasting up
 * to 5 windows, write bursts. */
static const char ROUGH[] =
    "{\"read_mbps\": 120, \"write_mbps\": 60, \"sigma_cas\": 2000, \"prefetch\": 0.5, \"remote_dir_writes\": 0.5, \"spike_every\": 8, \"spike_cas\": 250000, \"channel_spread\": 0.5, \"burst_windows\": 5, \"write_spike_every\": 8, \"write_spike_cas\": 150000}";

struct counts {
	unsigned exact, unresolved, wrong;
	unsigned first_wrong; /* a seed to reproduce one with */
};

/* The channels holding addr in m: one bit per channel index; 0 when m does not claim addr. */
static void owner(const struct hvt_chanmap *m, uint64_t addr, uint64_t set[2])
{
	set[0] = set[1] = 0;
	for (size_t c = 0; c < m->nchannels; c++)
		for (size_t i = 0; i < m->channels[c].nranges; i++) {
			const struct hvt_range *r = &m->channels[c].ranges[i];
			if (r->start <= addr && addr < r->start + r->size)
				set[c / 64] |= 1ull << (c % 64);
		}
	for (size_t i = 0; i < m->ninterleaved; i++) {
		const struct hvt_chanmap_interleave *il = &m->interleaved[i];
		if (il->range.start <= addr && addr < il->range.start + il->range.size)
			for (size_t j = 0; j < il->nchannels; j++)
				set[il->channels[j] / 64] |= 1ull << (il->channels[j] % 64);
	}
}

enum outcome { EXACT, UNRESOLVED, WRONG };

/* Judges got against want granule by granule over the touchable memory. */
static enum outcome judge(const struct hvt_probe_backend *b, const struct hvt_chanmap *want,
			  const struct hvt_chanmap *got)
{
	bool missing = false;
	for (size_t t = 0; t < b->ntouchable; t++)
		for (uint64_t a = b->touchable[t].start; a < b->touchable[t].start + b->touchable[t].size;
		     a += HVT_CHANMAP_GRANULE) {
			uint64_t w[2], g[2];
			owner(want, a, w);
			owner(got, a, g);
			if (!g[0] && !g[1])
				missing = true;
			else if (g[0] != w[0] || g[1] != w[1])
				return WRONG;
		}
	return missing ? UNRESOLVED : EXACT;
}

static enum outcome probe_once(const char *spec, const char *noise, uint64_t seed)
{
	struct hvt_probe_backend *b;
	struct hvt_probe_params p;
	struct hvt_probe_stats st;
	struct hvt_chanmap got, want;
	struct hvt_err e;
	enum outcome o;

	if (hvt_probe_model_open(spec, &b, &e) || hvt_probe_model_set_noise(b, noise, seed, &e))
		fail_msg("%s", e.msg);
	assert_int_equal(hvt_probe_model_expected(b, &want, &e), 0);
	hvt_probe_default_params(&p);
	if (hvt_probe_run(b, &p, NULL, NULL, &got, &st, &e)) {
		o = WRONG; /* a probe that fails on a model host is as bad as a wrong map */
	} else {
		o = judge(b, &want, &got);
		/* Memory left out must be said to be left out. */
		if (o == UNRESOLVED && !st.unattributed_bytes && !st.unresolved_bytes)
			o = WRONG;
		hvt_chanmap_free(&got);
	}
	hvt_chanmap_free(&want);
	hvt_probe_backend_destroy(b);
	return o;
}

static struct counts sweep(const char *spec, const char *level, const char *noise)
{
	struct counts c = {0};
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t seed = 1; seed <= SEEDS; seed++) {
		switch (probe_once(spec, noise, seed)) {
		case EXACT:
			c.exact++;
			break;
		case UNRESOLVED:
			c.unresolved++;
			break;
		case WRONG:
			if (!c.wrong++)
				c.first_wrong = (unsigned)seed;
			break;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	print_message("sweep %-32s %-5s seeds 1-%d: %3u exact, %3u unresolved, %3u wrong%s%.0u (%.1f s)\n",
		      spec + strlen(FIX), level, SEEDS, c.exact, c.unresolved, c.wrong,
		      c.wrong ? ", first at seed " : "", c.first_wrong,
		      (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	assert_int_equal(c.exact + c.unresolved + c.wrong, SEEDS);
	return c;
}

/* The acceptance counts: never a wrong map; unresolved never when quiet, in at most 2 % of noisy runs. */
static void sweep_host(const char *spec)
{
	struct counts q = sweep(spec, "quiet", QUIET), n = sweep(spec, "noisy", NOISY),
		      x = sweep(spec, "rough", ROUGH);

	if (q.wrong || n.wrong || x.wrong)
		fail_msg("%s: %u quiet, %u noisy and %u rough runs gave a wrong map (first at seed %u)", spec,
			 q.wrong, n.wrong, x.wrong,
			 q.wrong   ? q.first_wrong
			 : n.wrong ? n.first_wrong
				   : x.first_wrong);
	assert_int_equal(q.unresolved, 0);
	assert_true(n.unresolved * 100 <= 2 * SEEDS);
	assert_true(x.unresolved * 100 <= 2 * SEEDS);
}

static void test_sweep_unpopulated(void **state)
{
	(void)state;
	sweep_host(FIX "model-2s6c-unpopulated.json");
}

static void test_sweep_hole(void **state)
{
	(void)state;
	sweep_host(FIX "model-2s6c-hole.json");
}

static void test_sweep_interleaved(void **state)
{
	(void)state;
	sweep_host(FIX "model-2s8c-interleaved.json");
}

static void test_sweep_3way(void **state)
{
	(void)state;
	sweep_host(FIX "model-3way.json");
}

static void test_sweep_bursty(void **state)
{
	(void)state;
	sweep_host(FIX "model-2s6c-bursty.json");
}

static void test_sweep_two_holes(void **state)
{
	(void)state;
	sweep_host(FIX "model-2holes.json");
}

static void test_sweep_nested(void **state)
{
	(void)state;
	sweep_host(FIX "model-nested.json");
}

static void test_sweep_wide(void **state)
{
	(void)state;
	sweep_host(FIX "model-wide.json");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sweep_unpopulated), cmocka_unit_test(test_sweep_hole),
	    cmocka_unit_test(test_sweep_interleaved), cmocka_unit_test(test_sweep_3way),
	    cmocka_unit_test(test_sweep_bursty),      cmocka_unit_test(test_sweep_two_holes),
	    cmocka_unit_test(test_sweep_nested),      cmocka_unit_test(test_sweep_wide),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
