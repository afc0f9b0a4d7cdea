// SPDX-License-Identifier: MIT
#include <stdlib.h>

#include "hvmtrace/error.h"
#include "hvmtrace/trace.h"
#include "sink.h"

struct trace_sink {
	struct sink k;
	struct hvt_trace_writer *w;
};

static int trace_layout(struct sink *k, const struct hvt_layout *l, struct hvt_err *err)
{
	return hvt_trace_write_layout(((struct trace_sink *)k)->w, l, err);
}

static int trace_interval(struct sink *k, const struct hvt_interval *iv, const struct hvt_layout *l,
			  struct hvt_err *err)
{
	(void)l;
	return hvt_trace_write_interval(((struct trace_sink *)k)->w, iv, err);
}

static int trace_owners(struct sink *k, uint64_t at_ns, const uint8_t *snap, size_t len, struct hvt_err *err)
{
	return hvt_trace_write_owners(((struct trace_sink *)k)->w, at_ns, snap, len, err);
}

static int trace_close(struct sink *k, struct hvt_err *err)
{
	struct trace_sink *t = (struct trace_sink *)k;
	int rc = hvt_trace_close(t->w, err);

	free(t);
	return rc;
}

struct sink *sink_trace_open(const char *path, const struct hvt_trace_meta *meta, struct hvt_err *err)
{
	struct trace_sink *t = calloc(1, sizeof(*t));

	if (!t) {
		hvt_err_set(err, -1, "out of memory");
		return NULL;
	}
	if (hvt_trace_create(&t->w, path, meta, err)) {
		free(t);
		return NULL;
	}
	t->k = (struct sink){.name = "trace",
			     .layout = trace_layout,
			     .interval = trace_interval,
			     .owners = trace_owners,
			     .close = trace_close};
	return &t->k;
}
