// SPDX-License-Identifier: MIT
/* Owners numbered across snapshots (owners_ids.h): sorted by identity, each group numbered by the position
 * of its first member. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attribute/owners_ids.h"

struct ref {
	const struct owner *o;
	size_t flat; /* position over all snapshots' owners, in order */
};

static int cmp_identity(const struct owner *a, const struct owner *b)
{
	int c;

	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	c = strcmp(a->name, b->name);
	return c ? c : strcmp(a->cgroup, b->cgroup);
}

static int cmp_ref(const void *x, const void *y)
{
	const struct ref *a = x, *b = y;
	int c = cmp_identity(a->o, b->o);

	return c ? c : a->flat < b->flat ? -1 : a->flat > b->flat;
}

void owners_ids_free(struct owners_ids *ids, size_t nsnapshots)
{
	for (size_t s = 0; ids->id && s < nsnapshots; s++)
		free(ids->id[s]);
	free(ids->id);
	free(ids->owner);
	memset(ids, 0, sizeof(*ids));
}

int owners_ids_build(const struct owners_timeline *tl, struct owners_ids *ids)
{
	size_t total = 0, at = 0;
	struct ref *refs;
	size_t *leader, *first_of; /* by flat position: its group's first member; a leader's id */
	int rc = -ENOMEM;

	memset(ids, 0, sizeof(*ids));
	for (size_t s = 0; s < tl->n; s++) {
		total += tl->snap[s].nowners;
		if (tl->snap[s].nowners > ids->max_owners)
			ids->max_owners = tl->snap[s].nowners;
	}
	refs = malloc((total + 1) * sizeof(*refs));
	leader = malloc((total + 1) * sizeof(*leader));
	first_of = malloc((total + 1) * sizeof(*first_of));
	ids->id = calloc(tl->n + 1, sizeof(*ids->id));
	ids->owner = malloc((total + 1) * sizeof(*ids->owner));
	if (!refs || !leader || !first_of || !ids->id || !ids->owner)
		goto out;
	for (size_t s = 0; s < tl->n; s++) {
		if (!(ids->id[s] = malloc((tl->snap[s].nowners + 1) * sizeof(uint32_t))))
			goto out;
		for (size_t i = 0; i < tl->snap[s].nowners; i++, at++)
			refs[at] = (struct ref){&tl->snap[s].owners[i], at};
	}
	qsort(refs, total, sizeof(*refs), cmp_ref);
	for (size_t i = 0; i < total; i++)
		leader[refs[i].flat] =
		    i && !cmp_identity(refs[i - 1].o, refs[i].o) ? leader[refs[i - 1].flat] : refs[i].flat;
	at = 0;
	for (size_t s = 0; s < tl->n; s++)
		for (size_t i = 0; i < tl->snap[s].nowners; i++, at++) {
			if (leader[at] == at) {
				first_of[at] = ids->n;
				ids->owner[ids->n++] = &tl->snap[s].owners[i];
			}
			ids->id[s][i] = (uint32_t)first_of[leader[at]];
		}
	rc = 0;
out:
	free(refs);
	free(leader);
	free(first_of);
	if (rc)
		owners_ids_free(ids, tl->n);
	return rc;
}
