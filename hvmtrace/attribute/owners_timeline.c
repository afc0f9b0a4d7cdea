// SPDX-License-Identifier: MIT
/* An owners timeline of a snapshot file, and freeing any timeline (owners_timeline.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute/owners_timeline.h"

int owners_timeline_from_file(const char *path, size_t index, struct owners_timeline *tl, size_t *count,
			      struct hvt_err *err)
{
	int rc;

	memset(tl, 0, sizeof(*tl));
	tl->snap = calloc(1, sizeof(*tl->snap));
	tl->at_ns = calloc(1, sizeof(*tl->at_ns));
	if (!tl->snap || !tl->at_ns) {
		owners_timeline_free(tl);
		return hvt_err_set(err, -ENOMEM, "%s: out of memory", path);
	}
	rc = owners_read(path, index, tl->snap, count, err);
	if (rc) {
		owners_timeline_free(tl);
		return rc;
	}
	tl->n = 1;
	return 0;
}

void owners_timeline_free(struct owners_timeline *tl)
{
	for (size_t i = 0; i < tl->n; i++)
		owners_free(&tl->snap[i]);
	free(tl->snap);
	free(tl->at_ns);
	memset(tl, 0, sizeof(*tl));
}

int owners_timeline_load(const char *prog, const char *file, size_t index, struct hvt_trace_reader *r,
			 const char *trace, struct owners_timeline *tl, size_t *count)
{
	struct hvt_err err = {{0}};

	if (file ? owners_timeline_from_file(file, index, tl, count, &err)
		 : owners_timeline_from_trace(r, tl, &err)) {
		fprintf(stderr, "%s: %s\n", prog, err.msg);
		return -1;
	}
	if (!tl->n) {
		fprintf(
		    stderr,
		    "%s: %s holds no owners snapshots (record --owners-port stores them): give --owners SNAPSHOT "
		    "(hvmtrace-guest's output)\n",
		    prog, trace);
		owners_timeline_free(tl);
		return -1;
	}
	return 0;
}
