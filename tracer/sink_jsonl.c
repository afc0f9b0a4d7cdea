// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/interval_json.h"
#include "sink.h"

struct jsonl_sink {
	struct sink k;
	FILE *f;
	const char *path;
};

static int jsonl_layout(struct sink *k, const struct hvt_layout *l, struct hvt_err *err)
{
	(void)k, (void)l, (void)err; /* lines carry their generation; layouts live in the trace metadata */
	return 0;
}

static int jsonl_interval(struct sink *k, const struct hvt_interval *iv, const struct hvt_layout *l,
			  struct hvt_err *err)
{
	struct jsonl_sink *j = (struct jsonl_sink *)k;
	struct hvt_json_opts opts = {.page_ranges = true};
	int rc = hvt_jsonl_write(j->f, iv, l, &opts);

	return rc ? hvt_err_set(err, rc, "writing %s: %s", j->path, strerror(-rc)) : 0;
}

static int jsonl_close(struct sink *k, struct hvt_err *err)
{
	struct jsonl_sink *j = (struct jsonl_sink *)k;
	int rc = 0;

	if (j->f != stdout) {
		if (fclose(j->f))
			rc = hvt_err_set(err, -errno, "closing %s: %s", j->path, strerror(errno));
	} else if (fflush(stdout)) {
		rc = hvt_err_set(err, -errno, "writing standard output: %s", strerror(errno));
	}
	free(j);
	return rc;
}

struct sink *sink_jsonl_open(const char *path, struct hvt_err *err)
{
	struct jsonl_sink *j = calloc(1, sizeof(*j));

	if (!j) {
		hvt_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	j->path = strcmp(path, "-") ? path : "standard output";
	j->f = strcmp(path, "-") ? fopen(path, "we") : stdout;
	if (!j->f) {
		hvt_err_set(err, -errno, "cannot create %s: %s", path, strerror(errno));
		free(j);
		return NULL;
	}
	j->k = (struct sink){
	    .name = "jsonl", .layout = jsonl_layout, .interval = jsonl_interval, .close = jsonl_close};
	return &j->k;
}
