// SPDX-License-Identifier: MIT
/*
 * The owners snapshots a trace holds (OWNERS records, docs/formats.md), each checked by the snapshot reader
 * as a snapshot file's are: the trace's walk checked only their frames, and a trace is input like any other.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute/owners_timeline.h"
#include "hvmtrace/trace.h"

int owners_timeline_from_trace(struct hvt_trace_reader *r, struct owners_timeline *tl, struct hvt_err *err)
{
	uint64_t n = hvt_trace_owners_count(r);
	int rc = 0;

	memset(tl, 0, sizeof(*tl));
	tl->timed = true;
	if (!n)
		return 0;
	tl->snap = calloc(n, sizeof(*tl->snap));
	tl->at_ns = calloc(n, sizeof(*tl->at_ns));
	if (!tl->snap || !tl->at_ns) {
		owners_timeline_free(tl);
		return hvt_err_set(err, -ENOMEM, "%s: out of memory", hvt_trace_path(r));
	}
	for (uint64_t i = 0; i < n && !rc; i++) {
		const struct hvt_owners_info *o = hvt_trace_owners_at(r, i);
		uint8_t *data;
		size_t used = 0;
		char name[400];

		if (i && o->at_ns < tl->at_ns[i - 1]) {
			rc = hvt_err_set(err, -EINVAL,
					 "%s: owners record %" PRIu64 " (offset %" PRIu64
					 "): received at %" PRIu64 " ns, before the one before it (%" PRIu64
					 ")",
					 hvt_trace_path(r), i, o->offset, o->at_ns, tl->at_ns[i - 1]);
			break;
		}
		rc = hvt_trace_read_owners(r, i, &data, err);
		if (rc)
			break;
		snprintf(name, sizeof(name), "%s: owners record %" PRIu64 " (offset %" PRIu64 ")",
			 hvt_trace_path(r), i, o->offset);
		rc = owners_parse(name, data, o->bytes, &used, &tl->snap[i], err);
		if (!rc && used != o->bytes) { /* the walk checked body_bytes: cannot happen but for a bug */
			owners_free(&tl->snap[i]);
			rc = hvt_err_set(err, -EINVAL, "%s: %" PRIu64 " bytes after its snapshot", name,
					 o->bytes - used);
		}
		free(data);
		if (!rc) {
			tl->at_ns[i] = o->at_ns;
			tl->n++;
		}
	}
	if (rc)
		owners_timeline_free(tl);
	return rc;
}
