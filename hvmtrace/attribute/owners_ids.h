/* SPDX-License-Identifier: MIT */
/*
 * One numbering of the owners of several snapshots: an owner is the same in two snapshots when its type,
 * kind, pid, name and cgroup are, so a process's pages are summed across the snapshots that name it. Ids go
 * in order of first appearance, so the owners of a single snapshot keep their indexes.
 */
#ifndef HVT_ATTRIBUTE_OWNERS_IDS_H
#define HVT_ATTRIBUTE_OWNERS_IDS_H

#include <stddef.h>
#include <stdint.h>

#include "attribute/owners_timeline.h"

struct owners_ids {
	uint32_t **id;              /* id[snapshot][owner index] */
	const struct owner **owner; /* by id: the owner where it first appears (borrowed from the timeline) */
	size_t n;                   /* ids */
	size_t max_owners;          /* the most owners of one snapshot */
};

/* 0 or -ENOMEM. */
int owners_ids_build(const struct owners_timeline *tl, struct owners_ids *ids);
void owners_ids_free(struct owners_ids *ids, size_t nsnapshots);

#endif
