/* SPDX-License-Identifier: MIT */
/*
 * Internal to libhvmtrace: page sets as runs (struct hvt_runs, pageset.h). An encoded page set is decoded
 * in one place, hvt_pageset_decode_runs, into runs; the bitmap form (hvt_pageset_decode) is those runs set
 * in a bitmap. The trace layer builds on this, not the other way round.
 */
#ifndef HVMTRACE_LIB_PAGESET_RUNS_H
#define HVMTRACE_LIB_PAGESET_RUNS_H

#include <stddef.h>
#include <stdint.h>

#include "hvmtrace/pageset.h"

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

/* The first word at or after word that may hold a set page (pageset.h's marks); the word count if none. */
size_t hvt_pageset_next_marked(const struct hvt_pageset *s, size_t word);

#endif
