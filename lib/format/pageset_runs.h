/* SPDX-License-Identifier: MIT */
/*
 * Internal to libhvmtrace: page sets as runs (struct hvt_runs, pageset.h). An encoded page set is decoded
 * in one place, hvt_pageset_decode_runs, into runs; the bitmap form (hvt_pageset_decode) is those runs set
 * in a bitmap. The trace layer builds on this, not the other way round.
 */
#ifndef HVMTRACE_LIB_PAGESET_RUNS_H
#define HVMTRACE_LIB_PAGESET_RUNS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "hvmtrace/pageset.h"

/* Appends a run; 0 or -ENOMEM. */
static inline int hvt_runs_push(struct hvt_runs *r, uint64_t first, uint64_t count)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 1024;
		struct hvt_run *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (struct hvt_run){first, count};
	return 0;
}

/*
 * Decodes an encoded page set of npages pages (pageset.h) and appends its runs to out as base + page,
 * adding their pages to out->pages. Never reads past in+inlen; corrupt input or a page >= npages gives
 * -EINVAL with a message in err. On error out is as it was.
 */
int hvt_pageset_decode_runs(struct hvt_runs *out, uint64_t base, uint64_t npages, enum hvt_codec c,
			    const uint8_t *in, size_t inlen, struct hvt_err *err);

/* Sets in s the pages of the runs [begin, end) of r, whose page i is base + i. The runs must lie in s. */
void hvt_pageset_set_runs(struct hvt_pageset *s, const struct hvt_runs *r, size_t begin, size_t end,
			  uint64_t base);

#endif
