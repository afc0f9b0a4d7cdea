// SPDX-License-Identifier: MIT
/* A timeline of one snapshot from a file (no host time), and freeing any timeline. */
#include <errno.h>
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
	rc = owners_read(path, index, &tl->snap[0], count, err);
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
