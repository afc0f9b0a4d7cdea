// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: owners snapshots (hvmtrace/attribute/owners_snapshot.h), which a guest agent writes and
 * the host must treat as hostile. The input is a stream of snapshots, read one after another as owners_read
 * does. What is read must hold what attribute relies on: each owner's runs inside the snapshot's run array,
 * ascending and apart, below PFN 2^40, their pages counted; the kinds' runs disjoint; within the limits.
 */
#include "fuzz_common.h"
#include "hvmtrace/error.h"
#include "../../hvmtrace/attribute/owners_snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t at = 0;

	while (at < size) {
		struct owners_snapshot s;
		struct hvt_err err = {{0}};
		size_t used = 0, runs = 0;

		if (owners_parse("fuzz-owners", data + at, size - at, &used, &s, &err)) {
			if (!err.msg[0] || s.owners || s.runs || s.nowners)
				abort(); /* a refusal says why and leaves nothing */
			return 0;
		}
		if (used < HVT_OWN_HEADER_BYTES || used > size - at || s.nowners > HVT_OWN_MAX_OWNERS ||
		    s.nruns > HVT_OWN_MAX_RUNS)
			abort();
		for (size_t i = 0; i < s.nowners; i++) {
			const struct owner *o = &s.owners[i];
			uint64_t pages = 0;

			if (o->first_run != runs || o->nruns > s.nruns - runs || !o->name || !o->cgroup)
				abort();
			for (size_t j = 0; j < o->nruns; j++) {
				const struct hvt_run *r = &s.runs[o->first_run + j];

				if (!r->count || r->first + r->count > HVT_OWN_MAX_PFN_END ||
				    (j && r[-1].first + r[-1].count >= r->first))
					abort();
				pages += r->count;
			}
			if (pages != o->pages)
				abort();
			runs += o->nruns;
		}
		if (runs != s.nruns)
			abort();
		owners_free(&s);
		at += used;
	}
	return 0;
}
