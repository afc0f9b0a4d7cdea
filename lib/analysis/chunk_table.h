/* SPDX-License-Identifier: MIT */
/*
 * Internal to libhvmtrace: the chunks of the per-page sweep (analysis_sweep.h), found by their first page
 * through a hash. A chunk exists once a page in it was touched, so the sweep's memory follows the pages the
 * trace touched, whatever the range's size (a trace may declare an exabyte slot and touch a few pages).
 */
#ifndef HVMTRACE_LIB_ANALYSIS_CHUNK_TABLE_H
#define HVMTRACE_LIB_ANALYSIS_CHUNK_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hvmtrace/analysis.h"

#define SWEEP_CHUNK_PAD 16 /* states past a chunk's end that a vector step may read and write back */

struct sweep_chunk {
	uint64_t first;     /* a multiple of HVT_COUNT_CHUNK */
	uint32_t *state[2]; /* [HVT_COUNT_CHUNK + SWEEP_CHUNK_PAD] per kind (chunk_table_states); NULL: not
			     * touched yet */
	uint32_t *total[2]; /* [HVT_COUNT_CHUNK]: counts of the epochs flushed; NULL: none yet */
};

/* Where states are cut from: 2 MiB slabs that the kernel may back with one huge page each (the sweep
 * visits chunks in scattered order, and with 4 KiB pages nearly every run would miss the TLB). */
struct state_slabs {
	void **v;
	size_t n, cap;
	size_t used; /* bytes given out of the newest slab */
};

struct chunk_table {
	struct sweep_chunk *v; /* n chunks, in the order they were made */
	size_t n, cap;
	uint32_t *dir; /* a range of at most CHUNK_DIR_MAX chunks: [i / HVT_COUNT_CHUNK] 1 + index into v, 0
			* none (one load per lookup); NULL: the hash */
	/* with dir, per kind: [i / HVT_COUNT_CHUNK] the chunk's states of that kind, NULL none yet (the
	 * sweep's lookup: one load, not three); set by the sweep */
	uint32_t **states_dir[2];
	size_t *slot; /* nslots (a power of two): 1 + index into v, 0 empty */
	size_t nslots;
	size_t last; /* 1 + the chunk found last (runs come ascending: mostly the next is in it), 0 none */
	struct state_slabs slabs;
};

/* A range of up to this many chunks (4 MiB of directory, 2 TiB of 4 KiB pages) is looked up directly. */
#define CHUNK_DIR_MAX (1u << 20)

/* For a range of npages pages (hash: the hash whatever its size, for tests): 0 or -ENOMEM. */
int chunk_table_init(struct chunk_table *t, uint64_t npages, bool hash);
/* The chunk holding page i, made (all zero) when there is none: its index in t->v, or -1: -ENOMEM. */
ptrdiff_t chunk_table_get(struct chunk_table *t, uint64_t i);
/* Zeroed states for a chunk's kind (HVT_COUNT_CHUNK + SWEEP_CHUNK_PAD), freed with the table; NULL: -ENOMEM.
 */
uint32_t *chunk_table_states(struct chunk_table *t);
void chunk_table_fini(struct chunk_table *t); /* frees the table, the states and each chunk's totals */

#endif
