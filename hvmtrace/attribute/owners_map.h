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

#define OWNERS_SHARED UINT32_MAX /* a segment's owner when several own it */

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
void owners_map_free(struct owners_map *m);

/* What a page set holds of each owner, added to per_owner[owner index], *shared and *none. touched (room
 * for every owner) gets, in *ntouched, each owner whose count went from 0 to more. Cost: the set's runs plus
 * the segments they pass. */
struct owners_count {
	uint64_t *per_owner;
	uint64_t shared, none;
	uint32_t *touched;
	size_t ntouched;
};
void owners_map_count(const struct owners_map *m, const struct hvt_runs *set, struct owners_count *c);

#endif
