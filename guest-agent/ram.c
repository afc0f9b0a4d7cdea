// SPDX-License-Identifier: MIT
/*
 * The guest's RAM, from the top-level "System RAM" resources of /proc/iomem: a snapshot describes those
 * pages only. Linux has page structures (and kpageflags words) for some PFNs that are not RAM, such as a
 * PC's legacy VGA window 0xa0000-0xbffff, which are not in the VMM's RAM either (the trace's memory
 * slots); naming them would be naming pages the host cannot have traced.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

int ram_map_read(struct ram_map *m, const char *iomem, uint32_t page_size)
{
	char line[512];
	FILE *f = fopen(iomem, "re");

	m->v = NULL;
	m->n = 0;
	if (!f)
		return 0; /* no map: every PFN counts */
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end;
		int at = 0;

		/* top level only (nested resources are indented); "start-end : System RAM" */
		if (line[0] == ' ' || sscanf(line, "%" SCNx64 "-%" SCNx64 " : %n", &start, &end, &at) != 2 ||
		    !at || strncmp(line + at, "System RAM", 10) || end < start || (!start && !end))
			continue;
		struct ram_range *v = realloc(m->v, (m->n + 1) * sizeof(*v));

		if (!v) {
			fclose(f);
			free(m->v);
			m->v = NULL;
			m->n = 0;
			return -1;
		}
		m->v = v;
		/* every page any byte of which is RAM */
		m->v[m->n++] = (struct ram_range){start / page_size, end / page_size + 1};
	}
	fclose(f);
	return 0;
}

bool ram_has(const struct ram_map *m, uint64_t pfn)
{
	size_t lo = 0, hi = m->n;

	if (!m->n)
		return true;
	while (lo < hi) { /* the resources are listed in ascending order and do not overlap */
		size_t mid = lo + (hi - lo) / 2;

		if (pfn < m->v[mid].first)
			hi = mid;
		else if (pfn >= m->v[mid].end)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}
