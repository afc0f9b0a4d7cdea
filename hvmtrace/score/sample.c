// SPDX-License-Identifier: MIT
/* hvmtrace score --sample: a sampling tracker modelled on the trace's sets (sample.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/util.h"
#include "sample.h"

int sample_spec_parse(const char *s, struct sample_spec *sp, char *problem, size_t len)
{
	struct sample_spec out = {.seed = 1};
	char *end;

	errno = 0;
	if (!strncmp(s, "every:", 6) && s[6] >= '1' && s[6] <= '9') {
		out.block = strtoull(s + 6, &end, 10);
		if (!errno && !*end && out.block >= 1 && out.block <= (1ull << 40)) {
			*sp = out;
			return 0;
		}
	} else if (!strncmp(s, "random:", 7) && ((s[7] >= '0' && s[7] <= '9') || s[7] == '.')) {
		double f = strtod(s + 7, &end);

		if (!errno && f > 0 && f <= 1 && f >= 1e-12 && (!*end || *end == ':')) {
			out.random = true;
			out.block = (uint64_t)llround(1 / f);
			if (*end == ':') {
				const char *seed = end + 1;

				out.seed = strtoull(seed, &end, 10);
				if (errno || *end || !*seed || *seed < '0' || *seed > '9')
					goto bad;
			}
			*sp = out;
			return 0;
		}
	}
bad:
	snprintf(problem, len, "not every:N (N >= 1) or random:F[:SEED] (0 < F <= 1)");
	return -1;
}

void sample_spec_describe(const struct sample_spec *sp, char *buf, size_t len)
{
	if (sp->random)
		snprintf(buf, len, "a random page of every %" PRIu64 " (seed %" PRIu64 ")", sp->block,
			 sp->seed);
	else
		snprintf(buf, len, "the first page of every %" PRIu64, sp->block);
}

/* The page of block k looked at in interval iv: the first (every), or one drawn from (seed, iv, k). */
static uint64_t sampled(const struct sample_tracker *t, uint64_t iv, uint64_t k)
{
	uint64_t state = t->spec.seed ^ (iv * 0x9e3779b97f4a7c15ull) ^ (k * 0xc2b2ae3d27d4eb4full);

	return k * t->spec.block + (t->spec.random ? hvt_splitmix64(&state) % t->spec.block : 0);
}

int sample_interval(struct sample_tracker *t, uint64_t iv, const struct hvt_runs *set)
{
	uint64_t b = t->spec.block;

	t->hits.n = 0;
	for (size_t i = 0; i < set->n; i++) {
		uint64_t first = set->v[i].first, end = first + set->v[i].count, ka = first / b,
			 kb = (end - 1) / b, p;

		/* the blocks strictly inside the run are hit whatever page is looked at; the end ones when it
		 * lies in the run */
		p = sampled(t, iv, ka);
		if (p >= first && p < end && hvt_runs_push(&t->hits, ka, 1))
			return -ENOMEM;
		if (kb > ka + 1 && hvt_runs_push(&t->hits, ka + 1, kb - ka - 1))
			return -ENOMEM;
		if (kb > ka && (p = sampled(t, iv, kb)) < end && hvt_runs_push(&t->hits, kb, 1))
			return -ENOMEM;
	}
	return score_window_add(&t->blocks, &t->hits);
}

struct span {
	uint64_t first, end;
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *p = a, *q = b;

	return p->first < q->first ? -1 : p->first > q->first;
}

int sample_window_regions(struct sample_tracker *t, const struct hvt_layout *l)
{
	const struct score_runs *runs;
	struct span *ram = malloc((l->nslots + 1) * sizeof(*ram));
	size_t j = 0;
	int rc;

	if (!ram)
		return -ENOMEM;
	for (uint32_t s = 0; s < l->nslots; s++)
		ram[s] = (struct span){hvt_memslot_first_gfn(l, &l->slots[s]),
				       hvt_memslot_first_gfn(l, &l->slots[s]) +
					   hvt_memslot_npages(l, &l->slots[s])};
	qsort(ram, l->nslots, sizeof(*ram), cmp_span);
	t->nregions = 0;
	rc = score_window_counts(&t->blocks, &runs);
	for (size_t i = 0; i < runs->n && !rc; i++) {
		uint64_t first = runs->v[i].first * t->spec.block, end = runs->v[i].end * t->spec.block;

		while (j < l->nslots && ram[j].end <= first)
			j++;
		for (size_t k = j; k < l->nslots && ram[k].first < end; k++) {
			uint64_t a = first > ram[k].first ? first : ram[k].first,
				 b = end < ram[k].end ? end : ram[k].end;

			if (b <= a)
				continue;
			if (hvt_array_room((void **)&t->regions, &t->regions_cap, t->nregions,
					   sizeof(*t->regions))) {
				rc = -ENOMEM;
				break;
			}
			t->regions[t->nregions++] =
			    (struct damon_region){a * l->page_size, b * l->page_size, runs->v[i].count, 0};
		}
	}
	free(ram);
	return rc;
}

void sample_tracker_fini(struct sample_tracker *t)
{
	score_window_fini(&t->blocks);
	free(t->hits.v);
	free(t->regions);
}
