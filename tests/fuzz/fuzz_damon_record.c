// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the DAMON records hvmtrace score reads (hvmtrace/score/damon_record.h): damo's JSON,
 * zlib-compressed or not, and "hvmtrace-damon 1" text. The input is the file. What is read must hold what
 * score relies on: every snapshot's window after the one before, its regions non-empty, ascending, apart,
 * and all the record's regions its snapshots' own.
 */
#include "fuzz_common.h"
#include "hvmtrace/error.h"
#include "../../hvmtrace/score/damon_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct damon_record rec = {0};
	struct hvt_err err = {{0}};
	size_t at = 0;

	if (damon_record_parse("fuzz-record", data, size, &rec, &err)) {
		if (!err.msg[0] || rec.snaps || rec.regions)
			abort(); /* a refusal says why and leaves nothing */
		return 0;
	}
	if (!rec.nsnaps || !rec.nregions)
		abort();
	for (size_t s = 0; s < rec.nsnaps; s++) {
		const struct damon_snapshot *p = &rec.snaps[s];

		if (p->end_ns <= p->start_ns || (s && rec.snaps[s - 1].end_ns > p->start_ns) ||
		    p->first != at)
			abort();
		for (size_t i = 0; i < p->n; i++) {
			const struct damon_region *g = &rec.regions[p->first + i];

			if (g->end <= g->start || (i && g[-1].end > g->start))
				abort();
		}
		at += p->n;
	}
	if (at != rec.nregions)
		abort();
	damon_record_free(&rec);
	return 0;
}
