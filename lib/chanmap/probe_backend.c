// SPDX-License-Identifier: MIT
/*
 * What every probe backend shares (hardware, the model, a replayed log): its allocation with the backend's
 * own context, and its release. Apart from the algorithm (probe.c), which only drives windows, so a backend
 * depends on this file and not on the algorithm that writes its log.
 */
#include <errno.h>
#include <stdlib.h>

#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/probe.h"

struct hvt_probe_backend *
hvt_probe_backend_new(size_t ctx_size,
		      int (*window_fn)(struct hvt_probe_backend *b, const struct hvt_probe_touch *t,
				       uint64_t *rd, uint64_t *wr, struct hvt_err *e),
		      void (*destroy_fn)(struct hvt_probe_backend *b), struct hvt_err *e)
{
	struct hvt_probe_backend *b = calloc(1, sizeof(*b));

	if (b && !(b->ctx = calloc(1, ctx_size))) {
		free(b);
		b = NULL;
	}
	if (!b) {
		hvt_err_set(e, -ENOMEM, "out of memory");
		return NULL;
	}
	b->window = window_fn;
	b->destroy = destroy_fn;
	return b;
}

void hvt_probe_backend_destroy(struct hvt_probe_backend *b)
{
	if (!b)
		return;
	if (b->destroy)
		b->destroy(b);
	hvt_chanmap_free(&b->proto);
	free(b->touchable);
	free(b);
}
