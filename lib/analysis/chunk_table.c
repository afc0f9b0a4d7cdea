// SPDX-License-Identifier: MIT
/* The sweep's chunks by first page: open addressing, linear probing, at most half full; their states cut
 * from huge-page slabs (chunk_table.h). */
#include <stdlib.h>
#include <sys/mman.h>

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

int chunk_table_init(struct chunk_table *t, uint64_t npages, bool hash)
{
	uint64_t n = npages / HVT_COUNT_CHUNK + 1;

	*t = (struct chunk_table){0};
	if (hash || n > CHUNK_DIR_MAX)
		return 0;
	/* large callocs are mapped untouched: what is resident follows the chunks made */
	t->dir = calloc(n, sizeof(*t->dir));
	t->states_dir[0] = calloc(n, sizeof(*t->states_dir[0]));
	t->states_dir[1] = calloc(n, sizeof(*t->states_dir[1]));
	if (!t->dir || !t->states_dir[0] || !t->states_dir[1]) {
		chunk_table_fini(t);
		return -1;
	}
	return 0;
}

/* A new chunk at first: its index + 1, 0: -ENOMEM. */
static size_t add(struct chunk_table *t, uint64_t first)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct sweep_chunk *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return 0;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n] = (struct sweep_chunk){.first = first};
	return ++t->n;
}

ptrdiff_t chunk_table_get(struct chunk_table *t, uint64_t i)
{
	uint64_t first = i / HVT_COUNT_CHUNK * HVT_COUNT_CHUNK;
	size_t *s;

	if (t->dir) {
		uint32_t *d = &t->dir[i / HVT_COUNT_CHUNK];

		if (!*d && !(*d = (uint32_t)add(t, first)))
			return -1;
		return (ptrdiff_t)*d - 1;
	}
	if (t->last && t->v[t->last - 1].first == first)
		return (ptrdiff_t)t->last - 1;
	if ((t->n + 1) * 2 > t->nslots && grow_slots(t))
		return -1;
	s = find(t, first);
	if (!*s && !(*s = add(t, first)))
		return -1;
	t->last = *s;
	return (ptrdiff_t)*s - 1;
}

#define SLAB (2u << 20)

uint32_t *chunk_table_states(struct chunk_table *t)
{
	struct state_slabs *s = &t->slabs;
	size_t bytes = (HVT_COUNT_CHUNK + SWEEP_CHUNK_PAD) * sizeof(uint32_t);
	void *p;

	if (!s->n || s->used + bytes > SLAB) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 16;
			void **v = realloc(s->v, cap * sizeof(*v));

			if (!v)
				return NULL;
			s->v = v;
			s->cap = cap;
		}
		/* anonymous memory comes zeroed; the huge page is a hint, refused without THP */
		p = mmap(NULL, SLAB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		madvise(p, SLAB, MADV_HUGEPAGE);
		s->v[s->n++] = p;
		s->used = 0;
	}
	p = (char *)s->v[s->n - 1] + s->used;
	s->used += bytes;
	return p;
}

void chunk_table_fini(struct chunk_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		for (int k = 0; k < 2; k++)
			free(t->v[i].total[k]);
	for (size_t i = 0; i < t->slabs.n; i++)
		munmap(t->slabs.v[i], SLAB);
	free(t->slabs.v);
	free(t->v);
	free(t->slot);
	free(t->dir);
	free(t->states_dir[0]);
	free(t->states_dir[1]);
	*t = (struct chunk_table){0};
}
