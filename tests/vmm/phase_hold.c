// SPDX-License-Identifier: MIT
/*
 * Phase holds that follow the tracer (phase_hold.h). The tracer's JSON Lines file is read as it grows: a
 * line counts once it is complete, and each interval is judged as check_phases judges it, with one
 * simplification on the safe side: the phase has not ended yet, so an interval whose harvest ended before
 * now ends before the phase does.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "phase_hold.h"

#define HOLD_POLL_NS 1000000ull /* read the tracer's file at most once a millisecond */
#define HOLD_STALL_S 120        /* no interval for this long: the tracer is gone or stuck */
#define HOLD_IN_VAIN 50         /* this many intervals inside a phase without a pass: they never will */

int phase_hold_init(struct phase_hold *h, uint64_t min_ns, unsigned want, const char *follow,
		    struct hvt_err *err)
{
	memset(h, 0, sizeof(*h));
	h->min_ns = min_ns;
	h->want = want;
	h->path = follow;
	h->fd = -1;
	if (want && !follow)
		return hvt_err_set(err, -EINVAL,
				   "--hold-intervals needs --follow FILE (the tracer's --jsonl)");
	return 0;
}

void phase_hold_fini(struct phase_hold *h)
{
	if (h->fd >= 0)
		close(h->fd);
	free(h->line);
	free(h->passes);
	memset(h, 0, sizeof(*h));
	h->fd = -1;
}

void phase_hold_begin(struct phase_hold *h, uint64_t t_ns)
{
	h->begin_ns = t_ns;
	h->have = 0;
	h->inside = 0;
	h->npasses = 0;
	h->last_news_ns = t_ns;
}

int phase_hold_pass(struct phase_hold *h, uint64_t t_start_ns, uint64_t t_end_ns)
{
	if (!h->path)
		return 0;
	if (h->npasses == h->pass_cap) {
		size_t cap = h->pass_cap ? 2 * h->pass_cap : 256;
		struct hold_pass *v = realloc(h->passes, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		h->passes = v;
		h->pass_cap = cap;
	}
	h->passes[h->npasses++] = (struct hold_pass){t_start_ns, t_end_ns};
	return 0;
}

static bool get_u64(struct json_object *o, const char *key, uint64_t *v)
{
	struct json_object *x;

	if (!json_object_object_get_ex(o, key, &x) || !json_object_is_type(x, json_type_int))
		return false;
	*v = json_object_get_uint64(x);
	return true;
}

/* One interval of the tracer: counts it if it lies wholly inside the phase with a logged pass inside. */
static int take_interval(struct phase_hold *h, const char *line, uint64_t now_ns, struct hvt_err *err)
{
	struct json_object *o = json_tokener_parse(line), *x;
	uint64_t t_start, t_end, harvest_ns = 0;
	size_t keep = 0;

	if (!o || !get_u64(o, "t_start_ns", &t_start) || !get_u64(o, "t_end_ns", &t_end)) {
		json_object_put(o);
		return hvt_err_set(err, -EINVAL,
				   "--follow %s: line %" PRIu64
				   " is not an interval of hvmtrace record --jsonl",
				   h->path, h->intervals + 1);
	}
	if (json_object_object_get_ex(o, "harvest_us", &x))
		harvest_ns = (uint64_t)ceil(json_object_get_double(x) * 1e3);
	json_object_put(o);
	h->intervals++;
	h->last_news_ns = now_ns;

	/* check_phases: the interval's window opens at the previous interval's end (its own start at first)
	 */
	uint64_t window_start = h->have_prev ? h->prev_end_ns : t_start;
	bool pass_inside = false;

	h->have_prev = true;
	h->prev_end_ns = t_end;
	for (size_t i = 0; i < h->npasses; i++) {
		if (h->passes[i].t_start_ns >= t_start && h->passes[i].t_end_ns <= t_end)
			pass_inside = true;
		if (h->passes[i].t_start_ns >= t_end) /* may lie inside a later interval */
			h->passes[keep++] = h->passes[i];
	}
	h->npasses = keep;
	if (window_start >= h->begin_ns && t_end + harvest_ns < now_ns) {
		h->inside++;
		h->have += pass_inside;
	}
	return 0;
}

/* Reads what the tracer added to its file; takes every complete line. */
static int follow(struct phase_hold *h, uint64_t now_ns, struct hvt_err *err)
{
	char buf[65536];
	struct stat st;
	ssize_t n;

	if (h->fd < 0) {
		h->fd = open(h->path, O_RDONLY | O_CLOEXEC);
		if (h->fd < 0)
			return errno == ENOENT
				   ? 0
				   : hvt_err_set(err, -errno, "--follow %s: %s", h->path, strerror(errno));
	}
	/* A tracer that truncated the file after we opened it starts it anew. */
	if (!fstat(h->fd, &st) && (uint64_t)st.st_size < h->offset) {
		h->offset = 0;
		h->len = 0;
		h->have_prev = false;
	}
	while ((n = pread(h->fd, buf, sizeof(buf), (off_t)h->offset)) > 0) {
		h->offset += (uint64_t)n;
		for (ssize_t i = 0; i < n; i++) {
			if (h->len + 1 >= h->cap) {
				size_t cap = h->cap ? 2 * h->cap : 4096;
				char *l = realloc(h->line, cap);

				if (!l)
					return hvt_err_set(err, -ENOMEM, "out of memory following %s",
							   h->path);
				h->line = l;
				h->cap = cap;
			}
			if (buf[i] != '\n') {
				h->line[h->len++] = buf[i];
				continue;
			}
			h->line[h->len] = 0;
			h->len = 0;
			int rc = take_interval(h, h->line, now_ns, err);

			if (rc)
				return rc;
		}
	}
	return n < 0 ? hvt_err_set(err, -errno, "--follow %s: %s", h->path, strerror(errno)) : 0;
}

int phase_hold_over(struct phase_hold *h, uint64_t now_ns, struct hvt_err *err)
{
	if (now_ns - h->begin_ns < h->min_ns)
		return 0;
	if (!h->want)
		return 1;
	if (now_ns - h->last_poll_ns >= HOLD_POLL_NS) {
		int rc = follow(h, now_ns, err);

		h->last_poll_ns = now_ns;
		if (rc)
			return rc;
	}
	if (h->have >= h->want)
		return 1;
	if (h->inside - h->have >= HOLD_IN_VAIN)
		return hvt_err_set(
		    err, -ETIMEDOUT,
		    "%u intervals of the tracer lay inside this phase, %u of them with a logged "
		    "pass inside (need %u): passes take longer than an interval",
		    h->inside, h->have, h->want);
	if (now_ns - h->last_news_ns > HOLD_STALL_S * 1000000000ull)
		return hvt_err_set(err, -ETIMEDOUT,
				   "the tracer harvested no interval for %d s (%s: %" PRIu64
				   " intervals; %u of %u whole ones inside this phase)",
				   HOLD_STALL_S, h->path, h->intervals, h->have, h->want);
	return 0;
}
