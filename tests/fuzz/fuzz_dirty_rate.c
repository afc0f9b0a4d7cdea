// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the file of QEMU's query-dirty-rate replies hvmtrace score --dirty-rate reads
 * (hvmtrace/score/dirty_rate.h). The input is the file. What is read must hold what score relies on: at least
 * one reply, each of a known mode, a window of 1 ns to the bound, lines ascending, no reply equal to the one
 * before; a refusal says why and leaves nothing.
 */
#include "fuzz_common.h"
#include "hvmtrace/error.h"
#include "../../hvmtrace/score/dirty_rate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dirty_rate_file f = {0};
	struct hvt_err err = {{0}};

	if (dirty_rate_parse("fuzz-replies", (const char *)data, size, &f, &err)) {
		if (!err.msg[0] || f.v || f.n)
			abort();
		return 0;
	}
	if (!f.n)
		abort();
	for (size_t i = 0; i < f.n; i++) {
		const struct dirty_rate_reply *r = &f.v[i];

		if ((unsigned)r->mode >= DR_MODES || !r->calc_ns || r->calc_ns > DIRTY_RATE_MAX_CALC_NS ||
		    r->start_s < 0 || r->start_s > DIRTY_RATE_MAX_START_S || !r->line ||
		    (i && r->line <= r[-1].line) || r->rate_mib > INT64_MAX ||
		    r->nvcpu > DIRTY_RATE_MAX_VCPUS)
			abort();
		if (i && r->mode == r[-1].mode && r->start_s == r[-1].start_s &&
		    r->calc_ns == r[-1].calc_ns && r->sample_pages == r[-1].sample_pages &&
		    r->rate_mib == r[-1].rate_mib && r->nvcpu == r[-1].nvcpu)
			abort();
	}
	dirty_rate_free(&f);
	return 0;
}
