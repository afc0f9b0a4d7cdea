/* SPDX-License-Identifier: MIT */
/*
 * One group of a snapshot's owners (its processes, or its page kinds) as disjoint segments of PFNs, each
 * with the one owner it belongs to or the fact that several own it; and the count of a page set against
 * them. A page of several owners is counted as shared, a page of none as such: never guessed.
 */
#ifndef HVT_ATTRIBUTE_OWNERS_MAP_H
#define HVT_ATTRIBUTE_OWNERS_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "attribute/owners_snapshot.h"
#include "hvmtrace/pageset.h"

#define OWNERS_SHARED  UINT32_MAX       /* a segment's owner when several own it */
#define OWNERS_CHANGED (UINT32_MAX - 1) /* ... when snapshots disagree on its owner (owners_map_agree) */
#define OWNERS_NONE    (UINT32_MAX - 2) /* a piece no segment covers (owners_map_pieces) */
#define OWNERS_SKIP    UINT32_MAX       /* owners_map_build_rows: an owner left out */
#define OWNERS_MAX_ROW (UINT32_MAX - 3) /* row ids are below this */

struct owner_seg {
	uint64_t first, end; /* PFNs [first, end) */
	uint32_t owner;      /* the snapshot's owner index, or OWNERS_SHARED */
};

struct owners_map {
	struct owner_seg *v;
	size_t n;
};

/* The segments of the owners of `type` (HVT_OWN_PROCESS or HVT_OWN_KIND); 0 or -ENOMEM. */
int owners_map_build(const struct owners_snapshot *s, uint8_t type, struct owners_map *m);
/* The segments of owner i of s as row[i] (< nrows), owners whose row is OWNERS_SKIP left out: a page of
 * several owners of one row is that row's, of several rows shared. 0 or -ENOMEM. */
int owners_map_build_rows(const struct owners_snapshot *s, const uint32_t *row, size_t nrows,
			  struct owners_map *m);
/* Where a and b name the same owner (one row, both shared, or both none) that, elsewhere OWNERS_CHANGED:
 * the owners two snapshots agree on. 0 or -ENOMEM (out left empty). */
int owners_map_agree(const struct owners_map *a, const struct owners_map *b, struct owners_map *out);
void owners_map_free(struct owners_map *m);

/* The pieces of pages [first, first + count) by segment: fn(ctx, first, count, owner), owner a segment's or
 * OWNERS_NONE. *cursor (0 before the first call) carries the search on to the next run: runs passed to one
 * cursor ascend. Cost: the segments passed. */
typedef void (*owners_piece_fn)(void *ctx, uint64_t first, uint64_t count, uint32_t owner);
void owners_map_pieces(const struct owners_map *m, size_t *cursor, uint64_t first, uint64_t count,
		       owners_piece_fn fn, void *ctx);

/* What a page set holds of each owner, added to per_owner[owner index], *shared and *none. touched (room
 * for every owner) gets, in *ntouched, each owner whose count went from 0 to more. Cost: the set's runs plus
 * the segments they pass. */
struct owners_count {
	uint64_t *per_owner;
	uint64_t shared, none, changed;
	uint32_t *touched;
	size_t ntouched;
};
void owners_map_count(const struct owners_map *m, const struct hvt_runs *set, struct owners_count *c);
/* One run of a set, the runs of one set through one cursor (owners_map_pieces). */
void owners_map_count_run(const struct owners_map *m, size_t *cursor, uint64_t first, uint64_t count,
			  struct owners_count *c);

#endif
