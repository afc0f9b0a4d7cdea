/* SPDX-License-Identifier: MIT */
/*
 * Which owner each page had over an interval, by the owners timeline (owners_timeline.h): the rule every
 * view by owner (attribute, report --by, export's owner column) follows (docs/attribution.md, "Which
 * snapshot an interval is attributed by").
 *
 * A snapshot says who owned a page at the moment it was taken. An interval [t_start, t_end] of a timed
 * timeline is attributed by the latest snapshot taken at or before t_start, the earliest taken at or after
 * t_end, and every one between: a page is an owner's when all of them name that owner (one process: same
 * pid and name; one kind; one cgroup), shared when all say several processes, no process's when none does,
 * and *changed* when they disagree: never guessed. Before the first snapshot and after the last, the one
 * there is. An untimed timeline (a file) attributes every interval by its one snapshot.
 *
 * Owners are one table across the snapshots (rows): a process keeps its row in every snapshot that names
 * it. By process or kind, the rows are every owner of either type, in the order the snapshots first name
 * them (so with one snapshot, row i is its owner i); by cgroup, the distinct cgroups of the processes.
 */
#ifndef HVT_ATTRIBUTE_OWNERS_INTERVAL_H
#define HVT_ATTRIBUTE_OWNERS_INTERVAL_H

#include <stddef.h>
#include <stdint.h>

#include "attribute/owners_map.h"
#include "attribute/owners_timeline.h"

#define OWNERS_BY_CGROUP 3 /* beside HVT_OWN_PROCESS and HVT_OWN_KIND: processes grouped by cgroup */

struct owner_row {
	uint8_t type;       /* HVT_OWN_PROCESS, HVT_OWN_KIND or OWNERS_BY_CGROUP */
	uint8_t kind;       /* HVT_OWN_KIND */
	uint16_t flags;     /* HVT_OWN_PARTIAL in any snapshot */
	uint32_t pid;       /* a process's */
	const char *name;   /* a process's comm, a kind's name, a cgroup's path; the timeline's */
	const char *cgroup; /* a process's (as the first snapshot naming it has it), a cgroup's path */
	uint64_t pages;     /* its pages in the snapshot where it has most (a cgroup: pages of no other) */
	uint32_t snapshots; /* how many snapshots name it */
};

struct owners_interval {
	const struct owners_timeline *tl;
	int by;
	struct owner_row *rows;
	size_t nrows;
	struct owners_map *maps; /* per snapshot, owners as rows */
	struct owners_map span;  /* the map of snapshots [lo, hi], when lo < hi */
	size_t lo, hi;
	struct owners_map empty; /* for a timeline of no snapshot */
};

/* The rows and each snapshot's map, owners grouped by `by`. 0 or -ENOMEM (v left empty). */
int owners_interval_init(struct owners_interval *v, const struct owners_timeline *tl, int by);
void owners_interval_free(struct owners_interval *v);

/* The snapshots [*lo, *hi] that attribute the interval [t_start_ns, t_end_ns] (trace clock): (0, 0) when
 * the timeline is untimed; nothing to say (*lo > *hi) with no snapshot. */
void owners_interval_span(const struct owners_timeline *tl, uint64_t t_start_ns, uint64_t t_end_ns,
			  size_t *lo, size_t *hi);

/* The owners of every page over the interval, as rows (and OWNERS_SHARED, OWNERS_CHANGED); valid until the
 * next call. NULL: out of memory. Intervals asked in time order reuse the map they share. */
const struct owners_map *owners_interval_map(struct owners_interval *v, uint64_t t_start_ns,
					     uint64_t t_end_ns);

/* "array[100]*", "anon", "/user.slice", "(shared)", "(changed owner)", "(no process)" ... */
void owners_row_label(const struct owners_interval *v, uint32_t owner, char *buf, size_t len);

/* The owner views count pages per row, then in three slots after the rows: shared, changed owner, none. */
enum { OWNERS_SLOT_SHARED, OWNERS_SLOT_CHANGED, OWNERS_SLOT_NONE, OWNERS_SLOTS_SPECIAL };
size_t owners_slot_of(size_t nrows, uint32_t owner);
uint32_t owners_owner_of_slot(size_t nrows, size_t slot);

/* Orders rows order[0..n) as every owner view ranks writers: most written page-intervals in total[row][0]
 * first, then most accessed (total[row][1]), then by row, so that ties read the same in every view. */
void owners_rank_writers(uint32_t *order, size_t n, const uint64_t (*total)[2]);

#endif
