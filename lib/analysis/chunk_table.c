// SPDX-License-Identifier: MIT
/* The sweep's chunks by first page: open addressing, linear probing, at most half full (chunk_table.h). */
#include <stdlib.h>

#include "chunk_table.h"

static size_t hash(uint64_t first, size_t nslots)
{
	return (size_t)((first / HVT_COUNT_CHUNK * 0x9e3779b97f4a7c15ull) >> 17) & (nslots - 1);
}

static size_t *find(const struct chunk_table *t, uint64_t first)
{
	size_t h = hash(first, t->nslots);

	while (t->slot[h] && t->v[t->slot[h] - 1].first != first)
		h = (h + 1) & (t->nslots - 1);
	return &t->slot[h];
}

static int grow_slots(struct chunk_table *t)
{
	size_t n = t->nslots ? t->nslots * 2 : 256;
	size_t *old = t->slot, oldn = t->nslots;

	if (!(t->slot = calloc(n, sizeof(*t->slot)))) {
		t->slot = old;
		return -1;
	}
	t->nslots = n;
	for (size_t i = 0; i < oldn; i++)
		if (old[i])
			*find(t, t->v[old[i] - 1].first) = old[i];
	free(old);
	return 0;
}

ptrdiff_t chunk_table_get(struct chunk_table *t, uint64_t i)
{
	uint64_t first = i / HVT_COUNT_CHUNK * HVT_COUNT_CHUNK;
	size_t *s;

	if (t->last && t->v[t->last - 1].first == first)
		return (ptrdiff_t)t->last - 1;
	if ((t->n + 1) * 2 > t->nslots && grow_slots(t))
		return -1;
	s = find(t, first);
	if (!*s) {
		if (t->n == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 64;
			struct sweep_chunk *v = realloc(t->v, cap * sizeof(*v));

			if (!v)
				return -1;
			t->v = v;
			t->cap = cap;
		}
		t->v[t->n] = (struct sweep_chunk){.first = first};
		*s = ++t->n;
	}
	t->last = *s;
	return (ptrdiff_t)*s - 1;
}

void chunk_table_fini(struct chunk_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		for (int k = 0; k < 2; k++) {
			free(t->v[i].state[k]);
			free(t->v[i].total[k]);
		}
	free(t->v);
	free(t->slot);
	*t = (struct chunk_table){0};
}
