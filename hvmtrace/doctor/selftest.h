/* SPDX-License-Identifier: MIT */
/*
 * The bandwidth self-test (docs/doctor.md "The bandwidth self-test"): a known number of bytes is moved to
 * DRAM, reads and writes in turn, while a counter source counts; per direction, the bytes counted on the
 * channels the traffic went to (less their background, measured in an idle window) over the bytes moved
 * must fall in a band. Both sides are pluggable:
 *   the counter source: the memory-controller PMU (hvt_pmu sampler: real CAS counts, or the stand-in's
 *     software events), resctrl MBM totals, or a test's model;
 *   the traffic generator: DRAM streaming loads and non-temporal stores (selftest_hw.c), page faults for
 *     the stand-in PMU (selftest_standin.c), or a test's model.
 * The arithmetic (st_judge) sees only counts, durations and bytes, never where they came from.
 */
#ifndef HVT_DOCTOR_SELFTEST_H
#define HVT_DOCTOR_SELFTEST_H

#include <stdbool.h>
#include <stdint.h>

#include "hvmtrace/error.h"

enum st_dir { ST_READ, ST_WRITE };

#define ST_MAX_CHANNELS 256
#define ST_MAX_TARGET   32

/* One channel over one window. */
struct st_counts {
	uint64_t bytes[2]; /* [ST_READ], [ST_WRITE]; a source without the split puts its total in [ST_READ] */
	bool counted;      /* false: the counter did not run in the window (its bytes are unknown) */
};

struct st_source {
	const char *name; /* "pmu", "stand-in pmu", "resctrl" */
	unsigned n;       /* channels */
	const char *ids[ST_MAX_CHANNELS];
	bool split; /* reads and writes apart; false: totals (resctrl), compared with either direction */
	/* Counts since the previous call (the first call starts the first window). */
	int (*sample)(struct st_source *s, struct st_counts *out, struct hvt_err *e);
	void *ctx;
};

/* Where the traffic goes and who makes it. */
struct st_target {
	char label[320]; /* "s0.mc1.ch0 (reserved 0x900000000+256 MiB through /dev/mem)" */
	unsigned nin;    /* the channels (source indices) the traffic lands on */
	unsigned in[ST_MAX_TARGET];
	bool exclusive; /* nothing else may see it: a rise elsewhere means the map is wrong */
	/* Moves bytes in direction d; *moved gets how many. */
	int (*drive)(struct st_target *t, enum st_dir d, uint64_t *moved, struct hvt_err *e);
	void *ctx;
};

/* The band a direction's ratio must fall in, and why (docs/doctor.md). */
struct st_band {
	double lo, hi;
};

#define ST_BAND_LO  0.90
#define ST_BAND_HI  1.30
#define ST_ATTEMPTS 3 /* traffic windows per direction until one passes */

enum st_outcome {
	ST_PASS,
	ST_LOW,         /* counted below the band */
	ST_HIGH,        /* counted above the band */
	ST_NEVER_MOVED, /* the target's counters did not move at all */
	ST_NOT_COUNTED, /* a counter of the target did not run */
	ST_OFF_TARGET,  /* another channel saw the traffic */
	ST_NOISY,       /* the background is too large next to the traffic to judge: inconclusive */
};

/* One window of every channel. */
struct st_window {
	uint64_t ns;
	struct st_counts c[ST_MAX_CHANNELS];
};

struct st_result {
	enum st_dir dir;
	enum st_outcome outcome;
	uint64_t moved;
	double counted; /* net of background, summed over the target's channels */
	double ratio;   /* counted / moved */
	int channel;    /* the channel a failure is about (source index), or -1 for the whole target */
	double channel_ratio;
	unsigned attempts; /* traffic windows taken (the result is the last one's) */
	char msg[768];     /* one sentence: the finding, naming the channel and the ratio */
};

/*
 * The arithmetic: judges the traffic window t of direction d for target tg. The target's background is the
 * idle window's, scaled to t's duration; other channels' (traffic gone astray) is busy's, an idle window at
 * least as busy. Pure: no I/O.
 */
void st_judge(const struct st_source *s, const struct st_target *tg, enum st_dir d, uint64_t moved,
	      const struct st_window *t, const struct st_window *idle, const struct st_window *busy,
	      const struct st_band *band, struct st_result *r);

/*
 * Runs the self-test on one target: idle, write, idle, read, idle (idle windows of idle_ns; writes first,
 * so the reads find lines that are in DRAM, not dirty in a cache); each traffic window is judged against the
 * idle windows on either side, per channel and direction, and one that fails is taken again (ST_ATTEMPTS).
 */
int st_run(struct st_source *s, struct st_target *tg, uint64_t idle_ns, const struct st_band *band,
	   struct st_result res[2], struct hvt_err *e);

const char *st_dir_name(enum st_dir d); /* "read", "write" */

#endif
