// SPDX-License-Identifier: MIT
/* The record's regions against the guest's memory layout (score_check.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "hvmtrace/error.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/util.h"
#include "score_check.h"

struct span {
	uint64_t first, end; /* bytes */
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *p = a, *q = b;

	return p->first < q->first ? -1 : p->first > q->first;
}

/* The RAM of every layout of r: its slots' byte ranges, sorted, overlapping and touching ones joined. */
static int guest_ram(struct hvt_trace_reader *r, struct span **out, size_t *nout, uint32_t *page_size)
{
	struct hvt_trace_status st;
	struct span *v = NULL;
	size_t n = 0, cap = 0, m = 0;

	hvt_trace_get_status(r, &st);
	*page_size = 4096;
	for (uint64_t i = 0; i < st.layouts; i++) {
		const struct hvt_layout *l = hvt_trace_layout_at(r, i);

		*page_size = l->page_size;
		for (uint32_t s = 0; s < l->nslots; s++) {
			if (hvt_array_room((void **)&v, &cap, n, sizeof(*v))) {
				free(v);
				return -ENOMEM;
			}
			v[n++] = (struct span){l->slots[s].gpa, l->slots[s].gpa + l->slots[s].size};
		}
	}
	qsort(v, n, sizeof(*v), cmp_span);
	for (size_t i = 0; i < n; i++) {
		if (m && v[i].first <= v[m - 1].end) {
			if (v[i].end > v[m - 1].end)
				v[m - 1].end = v[i].end;
		} else
			v[m++] = v[i];
	}
	*out = v;
	*nout = m;
	return 0;
}

/* Whether [first, end) lies in one span of ram (sorted, apart). */
static bool inside(const struct span *ram, size_t n, uint64_t first, uint64_t end)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ram[mid].end <= first)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && ram[lo].first <= first && end <= ram[lo].end;
}

int score_check_regions(const char *name, const struct damon_record *rec, struct hvt_trace_reader *r,
			struct hvt_err *err)
{
	struct span *ram;
	size_t nram;
	uint32_t ps;
	int rc = guest_ram(r, &ram, &nram, &ps);

	if (rc)
		return hvt_err_set(err, rc, "out of memory");
	for (size_t s = 0; s < rec->nsnaps && !rc; s++)
		for (size_t i = 0; i < rec->snaps[s].n && !rc; i++) {
			const struct damon_region *g = &rec->regions[rec->snaps[s].first + i];
			char where[96], list[160] = "";
			size_t used = 0;

			if (rec->text)
				snprintf(where, sizeof(where), "line %" PRIu64, g->where);
			else
				snprintf(where, sizeof(where), "snapshots[%zu]: regions[%" PRIu64 "]", s,
					 g->where);
			if (g->start % ps || g->end % ps)
				rc = hvt_err_set(err, -EINVAL,
						 "%s %s: region 0x%" PRIx64 "-0x%" PRIx64
						 " is not whole pages of %u bytes (DAMON's regions are)",
						 name, where, g->start, g->end, ps);
			else if (!inside(ram, nram, g->start, g->end)) {
				for (size_t k = 0; k < nram && k < 4 && used < sizeof(list) - 40; k++)
					used += (size_t)snprintf(list + used, sizeof(list) - used,
								 "%s0x%" PRIx64 "-0x%" PRIx64, k ? ", " : "",
								 ram[k].first, ram[k].end);
				rc = hvt_err_set(
				    err, -EINVAL,
				    "%s %s: region 0x%" PRIx64 "-0x%" PRIx64
				    " is outside the guest's RAM (%s%s): a record of another guest, or "
				    "not of physical addresses",
				    name, where, g->start, g->end, list, nram > 4 ? ", ..." : "");
			}
		}
	free(ram);
	return rc;
}
