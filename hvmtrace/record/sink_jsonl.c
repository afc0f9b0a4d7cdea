// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvmtrace/error.h"
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

/*
 * Mode 0600 (before the umask) like the trace: the lines hold the same page sets. Written in place, not
 * renamed at the end, since a reader may follow it as it grows (hvmtrace-vmm --follow).
 */
static FILE *create_private(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	if (fd >= 0 && !f) {
		int e = errno;

		close(fd);
		errno = e;
	}
	return f;
}

struct sink *sink_jsonl_open(const char *path, struct hvt_err *err)
{
	struct jsonl_sink *j = calloc(1, sizeof(*j));

	if (!j) {
		hvt_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	j->path = strcmp(path, "-") ? path : "standard output";
	j->f = strcmp(path, "-") ? create_private(path) : stdout;
	if (!j->f) {
		hvt_err_set(err, -errno, "cannot create %s: %s", path, strerror(errno));
		free(j);
		return NULL;
	}
	j->k = (struct sink){
	    .name = "jsonl", .layout = jsonl_layout, .interval = jsonl_interval, .close = jsonl_close};
	return &j->k;
}
