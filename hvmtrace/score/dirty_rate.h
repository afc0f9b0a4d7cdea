/* SPDX-License-Identifier: MIT */
/*
 * QEMU's calc-dirty-rate results, read for hvmtrace score --dirty-rate (docs/score.md): a file of QMP
 * replies, one JSON object a line, as QMP tools print them. Each query-dirty-rate reply (bare, or inside
 * {"return": ...}) is one measurement; calc-dirty-rate's empty acknowledgement, events and the greeting are
 * skipped, and a reply equal to the one before (the same measurement queried again) is taken once.
 * QEMU's fields (qapi/migration.json, DirtyRateInfo): status, start-time (whole seconds of the host's wall
 * clock, rounded down), calc-time (the measured window's length in calc-time-unit, rounded down; seconds
 * before QEMU 8.2, which has no unit), mode (page-sampling before 6.2, which has none), sample-pages,
 * dirty-rate (MiB/s, rounded down), vcpu-dirty-rate (dirty-ring).
 */
#ifndef HVT_SCORE_DIRTY_RATE_H
#define HVT_SCORE_DIRTY_RATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hvt_err;

enum dirty_rate_mode { DR_PAGE_SAMPLING, DR_DIRTY_BITMAP, DR_DIRTY_RING, DR_MODES };

struct dirty_rate_reply {
	uint64_t line; /* in the file, from 1 */
	enum dirty_rate_mode mode;
	int64_t start_s;       /* start-time: the host's CLOCK_REALTIME, whole seconds rounded down */
	uint64_t calc_ns;      /* calc-time in ns */
	bool calc_in_seconds;  /* calc-time in whole seconds (rounded down), not ms */
	uint64_t sample_pages; /* per GiB; page-sampling only */
	uint64_t rate_mib;     /* dirty-rate, MiB/s */
	uint32_t nvcpu;        /* vcpu-dirty-rate's items (dirty-ring) */
};

struct dirty_rate_file {
	struct dirty_rate_reply *v;
	size_t n, cap;
};

/* The largest file read, and line: bounds on memory for a hostile file. */
#define DIRTY_RATE_MAX_BYTES (64u << 20)
#define DIRTY_RATE_MAX_LINE  (1u << 20)
/* calc-time's bound (QEMU's own is 60 s), and vcpu-dirty-rate's items' */
#define DIRTY_RATE_MAX_CALC_NS (3600ull * 1000000000ull)
#define DIRTY_RATE_MAX_VCPUS   16384
/* start-time's bound (2106): in ns, with --offset (under 2^62) and calc-time added, it stays in an int64_t */
#define DIRTY_RATE_MAX_START_S 4294967295ll

const char *dirty_rate_mode_name(enum dirty_rate_mode m);

/*
 * Reads data[0, len) (name: how messages call it) into f, zeroed by the caller. Refuses, with one message
 * naming the input and the line: a line that is not one JSON object, a QMP error, a reply whose status is
 * not "measured" (or whose dirty-rate is negative: the measurement failed), a missing or mistyped field or
 * one out of range, a file without a reply. 0 or -EINVAL / -ENOMEM; on failure f is left empty.
 */
int dirty_rate_parse(const char *name, const char *data, size_t len, struct dirty_rate_file *f,
		     struct hvt_err *err);
/* dirty_rate_parse of a file's content. */
int dirty_rate_read(const char *path, struct dirty_rate_file *f, struct hvt_err *err);
void dirty_rate_free(struct dirty_rate_file *f);

#endif
