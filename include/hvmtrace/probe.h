/* SPDX-License-Identifier: MIT */
/*
 * The channel probe (docs/architecture.md §2.10, docs/hardware-notes.md §5), behind a small interface so one
 * algorithm runs against three sources of numbers:
 *   - hardware: the memory-controller PMU (lib/pmu) and memory we may touch (hugetlb pages, /dev/mem
 *     reservations) — lib/chanmap/probe_hw.c, the thin part only real hosts reach;
 *   - a MODEL memory controller (address → channel function plus background noise) —
 * lib/chanmap/probe_model.c;
 *   - a probe log (a recorded probe session, `chanmap probe --log`) replayed window by window —
 *     lib/chanmap/probe_log.c.
 * The algorithm (lib/chanmap/probe.c): calibrate the background in idle windows, size the touch so the signal
 * stands well above it, sample one block per coarse step, bisect every change down to the granule, drive a
 * write window per range found to cross-check the write counters, and report interleaving.
 * Used by the chanmap program and the tests.
 */
#ifndef HVMTRACE_PROBE_H
#define HVMTRACE_PROBE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "chanmap.h"

struct hvt_err;

#define HVT_PROBE_MAX_CHANNELS 128

enum hvt_probe_dir { HVT_PROBE_IDLE, HVT_PROBE_READ, HVT_PROBE_WRITE };

/* What one measurement window does. */
struct hvt_probe_touch {
	enum hvt_probe_dir dir;
	uint64_t hpa, bytes; /* the lines to drive (IDLE: none) */
	unsigned reps;       /* how often each line is driven to DRAM */
	unsigned socket;     /* from a CPU of this socket */
	uint64_t window_ns;  /* the window's length */
};

struct hvt_probe_backend {
	/* Host, cpu, sockets, source and channels (no ranges) of the map the probe will fill in. */
	struct hvt_chanmap proto;
	struct hvt_range *touchable; /* memory the probe may drive: sorted, page aligned, not overlapping */
	size_t ntouchable;
	/* Runs one window; rd/wr get every channel's CAS counts over it (proto.channels order). */
	int (*window)(struct hvt_probe_backend *b, const struct hvt_probe_touch *t, uint64_t *rd,
		      uint64_t *wr, struct hvt_err *e);
	void (*destroy)(struct hvt_probe_backend *b); /* frees ctx; hvt_probe_backend_destroy the rest */
	void *ctx;
	/* Parameters the source dictates (a replayed probe log: the recorded ones), or NULL. */
	const struct hvt_probe_params *fixed_params;
};

struct hvt_probe_params {
	uint64_t window_ns;           /* default 20 ms */
	uint64_t sample_bytes;        /* bytes driven per probed block, default 2 MiB */
	uint64_t step_bytes;          /* coarse step, default 1 GiB */
	uint64_t granule;             /* bisection stops here, default 64 MiB */
	unsigned calibration_windows; /* idle windows to learn the background, default 20 */
	unsigned reps;                /* 0: chosen from the background (signal ≥ 20 σ and ≥ 10× mean) */
	unsigned max_retries;         /* extra windows for a block whose result is unclear, default 3 */
	bool write_check;             /* one write window per range found, default on */
};

struct hvt_probe_stats {
	uint64_t windows, calibration, coarse, bisection, retries, socket_moves, write_checks;
	uint64_t verified; /* blocks measured again by the verification pass */
	uint64_t blocks, blocks_measured, unattributed_bytes, first_unattributed;
	uint64_t unresolved_bytes, first_unresolved; /* left out: their channel set stayed ambiguous */
	unsigned reps;
	double implied_seconds;
};

void hvt_probe_default_params(struct hvt_probe_params *p);

/*
 * Runs the probe. out gets proto plus every channel's ranges, the interleaved regions, BIOS advice and the
 * probe info. progress (may be NULL) gets one-line updates; log (may be NULL) gets the probe log.
 * Errors: the backend's, -EAGAIN background too noisy to size the touch, -EPROTO write counters disagree
 * with read counters.
 */
int hvt_probe_run(struct hvt_probe_backend *b, const struct hvt_probe_params *p, FILE *progress, FILE *log,
		  struct hvt_chanmap *out, struct hvt_probe_stats *st, struct hvt_err *e);

/* ---- what every backend shares (probe_backend.c) ---- */

/* For a backend's constructor: a backend with these hooks whose ctx is ctx_size zeroed bytes; NULL when out
 * of memory (message in e). */
struct hvt_probe_backend *
hvt_probe_backend_new(size_t ctx_size,
		      int (*window_fn)(struct hvt_probe_backend *b, const struct hvt_probe_touch *t,
				       uint64_t *rd, uint64_t *wr, struct hvt_err *e),
		      void (*destroy_fn)(struct hvt_probe_backend *b), struct hvt_err *e);
/* Calls the backend's destroy hook (when set), then frees the proto map, touchable memory and b. */
void hvt_probe_backend_destroy(struct hvt_probe_backend *b);

/* ---- the MODEL memory controller (probe_model.c; format in docs/chanmap.md) ---- */

#define HVT_PROBE_MODEL_MAX_BYTES (1u << 20) /* the largest model spec read */

int hvt_probe_model_open(const char *path, struct hvt_probe_backend **b, struct hvt_err *e);
/* Replaces the model's background with a "noise" object of the spec format and reseeds it (noise sweeps). */
int hvt_probe_model_set_noise(struct hvt_probe_backend *b, const char *noise_json, uint64_t seed,
			      struct hvt_err *e);
/* The model's ground truth, restricted to its touchable memory, as a map (for tests and --check). */
int hvt_probe_model_expected(const struct hvt_probe_backend *b, struct hvt_chanmap *out, struct hvt_err *e);

/* ---- probe logs: a probe session recorded and replayed (probe_log.c; format in docs/chanmap.md) ---- */

/* The log's first line: the proto map, touchable memory and parameters. */
int hvt_probe_log_write_header(FILE *log, const struct hvt_probe_backend *b,
			       const struct hvt_probe_params *p);
void hvt_probe_log_write_window(FILE *log, uint64_t n, const char *phase, const struct hvt_probe_touch *t,
				const uint64_t *rd, const uint64_t *wr, size_t nch);
/* A backend that answers from a recorded log, refusing a window the log did not record next, or a line
 * longer than HVT_PROBE_LOG_MAX_LINE (the header carries the map). */
#define HVT_PROBE_LOG_MAX_LINE (16u << 20)
int hvt_probe_log_open(const char *path, struct hvt_probe_backend **b, struct hvt_err *e);

/* ---- hardware (probe_hw.c, probe_touch.c) ---- */

struct hvt_probe_hw_options {
	const char *sysfs_root; /* NULL: /sys */
	const char *iomem;      /* NULL: /proc/iomem */
	const char *fwmap;      /* NULL: /sys/firmware/memmap */
	const char *mem_path;   /* NULL: /dev/mem */
	uint64_t hugetlb_bytes; /* 0: none */
	uint64_t hugetlb_page;  /* 2 MiB or 1 GiB */
	bool devmem;            /* map user-reserved ranges */
};
int hvt_probe_hw_open(const struct hvt_probe_hw_options *o, struct hvt_probe_backend **b, struct hvt_err *e);

/* The access loops (x86-64): clflushopt each line then load it, reps times; or full-line non-temporal
 * stores of pattern. Return a checksum of what was loaded so the compiler keeps the loads. */
uint64_t hvt_touch_read(volatile void *p, uint64_t bytes, unsigned reps);
void hvt_touch_write(void *p, uint64_t bytes, unsigned reps, uint64_t pattern);
/* Pins the calling thread to an online CPU of socket (physical package); sysfs_root NULL: /sys. */
int hvt_pin_to_socket(const char *sysfs_root, unsigned socket, int *cpu, struct hvt_err *e);

#endif
