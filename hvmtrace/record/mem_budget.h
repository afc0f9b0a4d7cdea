/* SPDX-License-Identifier: MIT */
/*
 * What `record` must keep resident, computed from the guest's layout (docs/performance.md, "Memory"), and
 * the locking itself: the heap is grown to that size and locked with everything mapped so far while the
 * privilege to do so is still held. Later mappings are not locked (no MCL_FUTURE), so no allocation can
 * fail mid-run for want of locked memory once the capabilities are dropped.
 */
#ifndef HVT_RECORD_MEM_BUDGET_H
#define HVT_RECORD_MEM_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

struct hvt_err;

struct mem_budget_in {
	uint64_t max_guest_bytes; /* the largest guest RAM (all slots) the run accepts */
	uint32_t page_size;
	uint32_t max_slots;     /* slots of the largest layout (each rounds its bitmap up to a word) */
	unsigned nsets;         /* page sets per interval: 1 written, 2 written and accessed */
	bool retry_copy;        /* ad: a harvest retried after a memslot change keeps a second interval */
	uint64_t max_intervals; /* intervals of the trace writer's index to keep in the reserve */
	uint64_t owners_bytes;  /* the owners port's (record --owners-port; owners_port_memory), or 0 */
};

struct mem_budget {
	uint64_t working;  /* the heap reserved for the run: mem_budget_working() */
	uint64_t need;     /* what mlockall locks: everything mapped, the reserved heap included */
	uint64_t resident; /* resident after locking (VmRSS) */
	uint64_t locked;   /* locked after locking (VmLck) */
};

/* What the working memory is made of (docs/performance.md, "Memory"), each at its worst. */
struct mem_budget_terms {
	uint64_t sets;   /* the interval's page sets (bitmaps) */
	uint64_t record; /* the INTERVAL record the sets are encoded into */
	uint64_t index;  /* the trace writer's index */
	uint64_t owners; /* the owners port's */
	uint64_t fixed;  /* everything of fixed size */
};

void mem_budget_terms(const struct mem_budget_in *in, struct mem_budget_terms *t);

/* The working memory of a run: the worst case over every written (and accessed) pattern; the terms' sum. */
uint64_t mem_budget_working(const struct mem_budget_in *in);

/* Pages of guest RAM a layout needs, summed over the slots. */
uint64_t mem_budget_guest_bytes(uint64_t total_pages, uint32_t page_size);

/*
 * Reserves `working` bytes of heap that malloc keeps (no trimming, no separate mappings, one arena) and locks
 * every current mapping. With CAP_IPC_LOCK any amount can be locked; without it RLIMIT_MEMLOCK must cover it
 * and is raised (up to the hard limit, or beyond with CAP_SYS_RESOURCE); when it cannot be, fails with one
 * sentence naming the limit, the amount needed and the fix. `what` names the guest there ("a 64 GiB guest").
 */
int mem_budget_lock(uint64_t working, const char *what, struct mem_budget *b, struct hvt_err *err);

#endif
