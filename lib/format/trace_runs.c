// SPDX-License-Identifier: MIT
/* An INTERVAL record read as runs of GFNs (trace_runs.h), as trace_interval_decode.c decodes it. */
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/trace_runs.h"
#include "trace_decode.h"

int hvt_trace_decode_runs(const struct hvt_trace_reader *r, uint64_t i, const uint8_t *payload, size_t len,
			  const struct hvt_layout *l, struct hvt_iv_runs *ir, struct hvt_err *err)
{
	int rc = hvt_iv_runs_decode(ir, l, payload, len, err);

	if (!rc)
		rc = hvt_trace_check_interval_meta(r, &ir->hdr, err);
	if (rc)
		hvt_trace_interval_err(r, i, rc, err);
	return rc;
}

int hvt_trace_read_runs(struct hvt_trace_reader *r, uint64_t i, struct hvt_iv_runs *ir, struct hvt_err *err)
{
	const struct hvt_layout *l;
	const uint8_t *payload;
	size_t len;
	int rc = hvt_trace_read_payload(r, i, &payload, &len, &l, err);

	return rc ? rc : hvt_trace_decode_runs(r, i, payload, len, l, ir, err);
}

void hvt_iv_runs_fini(struct hvt_iv_runs *ir)
{
	free(ir->set[0].v);
	free(ir->set[1].v);
	free(ir->hdr.channels);
	memset(ir, 0, sizeof(*ir));
}

void hvt_runs_range(const struct hvt_runs *r, uint64_t first, uint64_t end, size_t *begin, size_t *end_index)
{
	size_t lo = 0, hi = r->n;

	/* the first run that ends after first */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->v[mid].first + r->v[mid].count <= first)
			lo = mid + 1;
		else
			hi = mid;
	}
	*begin = lo;
	hi = r->n;
	/* the first run that starts at or after end */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->v[mid].first < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	*end_index = lo;
}
