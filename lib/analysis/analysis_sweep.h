/* SPDX-License-Identifier: MIT */
/*
 * Internal to libhvmtrace: the per-page sweep of hvt_analysis_load (analysis_load.c). For each kind of set
 * (written, accessed) it keeps, per page, in how many intervals the page was touched and the interval that
 * touched it last, and sums, per interval, the touched pages by how many intervals ago they were last
 * touched (the gaps the sliding windows are built from).
 *
 * The states live in chunks of HVT_COUNT_CHUNK pages (chunk_table.h), made when a page in them is first
 * touched: the sweep's memory follows the pages the trace touched, not the range's size.
 *
 * A page's state is 4 bytes per kind: a 16-bit count and a 16-bit last-touch stamp. Half of what two
 * 32-bit fields take, so the sweep touches half as many cache lines, and a vector register holds 8 pages.
 * 16 bits are enough by working in epochs: every `epoch` intervals the counts are added to 32-bit totals and
 * the stamps are moved down by the epoch (those older than the window become "never"). An epoch is at most
 * 32768 intervals (9 hours of 1 s intervals), so shorter traces never flush.
 */
#ifndef HVMTRACE_LIB_ANALYSIS_SWEEP_H
#define HVMTRACE_LIB_ANALYSIS_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chunk_table.h"

struct hvt_run;

#define HVT_SWEEP_MAX_EPOCH 32768u

/* How a run of pages is swept; every one gives the same result. */
enum hvt_sweep_impl {
	HVT_SWEEP_BEST,   /* the widest this CPU has */
	HVT_SWEEP_SCALAR, /* a page at a time */
	HVT_SWEEP_SSE2,   /* 4 pages per instruction (x86-64) */
	HVT_SWEEP_AVX2,   /* 8 pages per instruction (x86-64 with AVX2) */
};

/*
 * A sweep may own only some of the pages: blocks of a multiple of HVT_COUNT_CHUNK pages from the range's
 * first, block b owned when bit b % nblocks of its mask is set. Sweeps whose masks do not overlap share no
 * chunk, so two threads can sweep one interval's runs side by side; their counts are disjoint chunks and
 * their gaps add up to those of one sweep of the whole. The loader's blocks (HVT_SWEEP_BLOCK) are large
 * enough that skipping another sweep's costs little, small enough that a trace's hot regions fall into
 * several.
 */
#define HVT_SWEEP_BLOCK (64u * HVT_COUNT_CHUNK) /* 128 MiB of 4 KiB pages */

/* What tests choose to reach every path; zero: the defaults. */
struct hvt_sweep_tuning {
	uint32_t epoch; /* intervals per epoch, 1 .. HVT_SWEEP_MAX_EPOCH; 0: the largest that fits */
	enum hvt_sweep_impl impl;
	bool hash;      /* chunks found through the hash, as for a range too large to index directly */
	bool one_part;  /* the loader sweeps on one thread, not two */
	uint64_t block; /* the loader's blocks, pages (a multiple of HVT_COUNT_CHUNK); 0: HVT_SWEEP_BLOCK */
};

struct hvt_sweep {
	uint64_t npages;
	uint32_t window; /* as the stamps see it: min(the window, the most intervals there can be); 0: none */
	uint32_t epoch;  /* intervals per epoch */
	uint32_t k;      /* intervals begun in this epoch */
	enum hvt_sweep_impl impl;
	uint32_t mask, nblocks; /* the blocks this sweep owns (nblocks 0: all) */
	uint64_t block;         /* pages per block */
	bool kind[2];           /* enum hvt_set_kind: this kind is swept */
	/* per page and kind, in its chunk's state: count in this epoch (bits 0-15), stamp of the last touch
	 * (bits 16-31: the interval's index in this epoch + window; 0: never, or too long ago to matter) */
	struct chunk_table chunks;
	uint64_t
	    *gap[2]; /* [window] (NULL without one): pages of this interval last touched d intervals before */
	uint64_t flushes; /* epochs flushed */
};

/*
 * npages pages; kinds: bits 1u << enum hvt_set_kind; window 1 .. 65535 (the caller caps it to the intervals
 * the trace holds, which changes no result and keeps epochs long), or 0: the counts only (no gaps, no
 * stamps: a touch adds one to each page's count, whatever the instruction set); t may be NULL. -EINVAL (an
 * impl this CPU lacks, a window out of range), -ENOMEM.
 */
int hvt_sweep_init(struct hvt_sweep *s, uint64_t npages, unsigned kinds, uint32_t window,
		   const struct hvt_sweep_tuning *t);
/* Makes s sweep only the blocks of block pages (a multiple of HVT_COUNT_CHUNK) whose bit b % nblocks (1 ..
 * 32) is set in mask, before any touch. */
void hvt_sweep_own(struct hvt_sweep *s, uint32_t mask, uint32_t nblocks, uint64_t block);
/* Starts the next interval, flushing the epoch first when it is full: 0 or -ENOMEM. */
int hvt_sweep_begin(struct hvt_sweep *s);
/*
 * Touches runs (ascending, disjoint, inside [base, base + npages)) of the interval begun last, at most once
 * per kind and interval, the pages of the blocks s owns; adds them to s->gap[kind] by how long ago they were
 * last touched.
 * 0 or -ENOMEM (a new chunk).
 */
int hvt_sweep_touch(struct hvt_sweep *s, int kind, const struct hvt_run *v, size_t n, uint64_t base);
/*
 * The counts over every interval so far, as the touched chunks in ascending order (malloc'd, each chunk's
 * count arrays too: the caller frees them); the sweep is left empty (only hvt_sweep_fini after). -ENOMEM.
 */
int hvt_sweep_take(struct hvt_sweep *s, struct hvt_count_chunk **out, uint64_t *n);
void hvt_sweep_fini(struct hvt_sweep *s);

struct hvt_analysis;
struct hvt_analysis_opts;
struct hvt_selection;
struct hvt_trace_reader;
struct hvt_err;
/* hvt_analysis_load with the sweep tuned (NULL: as hvt_analysis_load); for tests. */
int hvt_analysis_load_tuned(struct hvt_analysis *a, struct hvt_trace_reader *r,
			    const struct hvt_selection *sel, const struct hvt_analysis_opts *o,
			    const struct hvt_sweep_tuning *t, struct hvt_err *err);

#endif
