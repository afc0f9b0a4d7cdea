// SPDX-License-Identifier: MIT
/*
 * Phase holds that follow the tracer (phase_hold.h). The tracer's JSON Lines file is read as it grows: a
 * line counts once it is complete, and each interval is judged as check_phases judges it, with one
 * simplification on the safe side: the phase has not ended yet, so an interval whose harvest ended before
 * now ends before the phase does.
 * Only each line's head is kept and read: the times come first (lib/format/interval_json.c writes its keys in
 * a fixed order), while the page ranges after them run to hundreds of kilobytes an interval, more than a JSON
 * parser in the nested lab's L1 (TCG, sanitizers) reads in the time the tracer takes to write them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "phase_hold.h"

#define HOLD_POLL_NS 1000000ull /* read the tracer's file at most once a millisecond */
#define HOLD_STALL_S 120        /* no interval for this long: the tracer is gone or stuck */
#define HOLD_IN_VAIN                                                                                         \
	50 /* this many intervals inside a phase without a pass, none of whose passes is shorter             \
	      than its intervals: they never will hold one */
#define HOLD_IN_VAIN_FIT 1000 /* ... though passes are short enough: the guest is preempted in every pass */
#define HOLD_HEAD        1024 /* bytes of a line kept: its times, well before its page ranges */

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
	if (follow && !(h->head = malloc(HOLD_HEAD + 1)))
		return hvt_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

void phase_hold_fini(struct phase_hold *h)
{
	if (h->fd >= 0)
		close(h->fd);
	free(h->head);
	free(h->passes);
	memset(h, 0, sizeof(*h));
	h->fd = -1;
}

void phase_hold_begin(struct phase_hold *h, uint64_t t_ns)
{
	h->begin_ns = t_ns;
	h->have = 0;
	h->inside = 0;
	h->shortest_pass_ns = UINT64_MAX;
	h->longest_interval_ns = 0;
	h->pass_sum_ns = 0;
	h->interval_sum_ns = 0;
	h->passes_logged = 0;
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
	if (t_end_ns - t_start_ns < h->shortest_pass_ns)
		h->shortest_pass_ns = t_end_ns - t_start_ns;
	h->pass_sum_ns += t_end_ns - t_start_ns;
	h->passes_logged++;
	return 0;
}

/* Where the value of "key": begins in the line's head; NULL if the head does not hold it. */
static const char *value_of(const char *head, const char *key)
{
	char pattern[32];
	const char *p;

	snprintf(pattern, sizeof(pattern), "\"%s\":", key);
	p = strstr(head, pattern);
	return p ? p + strlen(pattern) : NULL;
}

static bool get_u64(const char *head, const char *key, uint64_t *v)
{
	const char *p = value_of(head, key);
	char *end;

	if (!p || *p < '0' || *p > '9')
		return false;
	errno = 0;
	*v = strtoull(p, &end, 10);
	return !errno && (*end == ',' || *end == '}');
}

/* One interval of the tracer: counts it if it lies wholly inside the phase with a logged pass inside. */
static int take_interval(struct phase_hold *h, const char *head, uint64_t now_ns, struct hvt_err *err)
{
	const char *harvest = value_of(head, "harvest_us");
	uint64_t t_start, t_end, harvest_ns = 0;
	size_t keep = 0;

	if (head[0] != '{' || !get_u64(head, "t_start_ns", &t_start) || !get_u64(head, "t_end_ns", &t_end))
		return hvt_err_set(err, -EINVAL,
				   "--follow %s: line %" PRIu64
				   " is not an interval of hvmtrace record --jsonl",
				   h->path, h->intervals + 1);
	if (harvest)
		harvest_ns = (uint64_t)ceil(strtod(harvest, NULL) * 1e3);
	h->intervals++;
	h->last_news_ns = now_ns;

	/* check_phases: an interval's window opens at the previous interval's end (its own start at first) */
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
		h->interval_sum_ns += t_end - t_start;
		if (t_end - t_start > h->longest_interval_ns)
			h->longest_interval_ns = t_end - t_start;
	}
	return 0;
}

/* Reads what the tracer added to its file; takes every complete line by its head. */
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
		for (size_t i = 0; i < (size_t)n;) {
			const char *nl = memchr(buf + i, '\n', (size_t)n - i);
			size_t upto = nl ? (size_t)(nl - buf) : (size_t)n, take = upto - i;

			if (take > HOLD_HEAD - h->len)
				take = HOLD_HEAD - h->len;
			memcpy(h->head + h->len, buf + i, take);
			h->len += take;
			i = upto + 1;
			if (!nl)
				break;
			h->head[h->len] = 0;
			h->len = 0;
			int rc = take_interval(h, h->head, now_ns, err);

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
	/* Judged by what was seen, not by the clock: a busy machine may stretch passes for a while. */
	bool fits = h->shortest_pass_ns < h->longest_interval_ns;
	if (h->inside - h->have >= HOLD_IN_VAIN && !fits) {
		char shortest[48] = "no pass of it has ended";

		if (h->shortest_pass_ns != UINT64_MAX)
			snprintf(shortest, sizeof(shortest), "the shortest pass took %.1f ms",
				 h->shortest_pass_ns / 1e6);
		return hvt_err_set(
		    err, -ETIMEDOUT,
		    "%u intervals inside this phase, %u with a logged pass inside (need %u); %s, the "
		    "longest interval %.1f ms: passes take longer than an interval",
		    h->inside, h->have, h->want, shortest, h->longest_interval_ns / 1e6);
	}
	/*
	 * One short pass proves little when the others are long (in dirty-log mode every pass after a harvest
	 * write-faults on pages the harvest protected again): when the mean pass is no shorter than the mean
	 * interval, passes take longer than an interval, as above.
	 */
	if (h->inside - h->have >= HOLD_IN_VAIN_FIT &&
	    h->pass_sum_ns / h->passes_logged >= h->interval_sum_ns / h->inside)
		return hvt_err_set(
		    err, -ETIMEDOUT,
		    "%u intervals inside this phase, %u with a logged pass inside (need %u); the mean of %u "
		    "logged passes took %.1f ms, the mean interval %.1f ms: passes take longer than an interval",
		    h->inside, h->have, h->want, h->passes_logged, h->pass_sum_ns / h->passes_logged / 1e6,
		    h->interval_sum_ns / h->inside / 1e6);
	if (h->inside - h->have >= HOLD_IN_VAIN_FIT)
		return hvt_err_set(
		    err, -ETIMEDOUT,
		    "%u intervals inside this phase, %u with a logged pass inside (need %u), though "
		    "passes of %.1f ms fit intervals of up to %.1f ms: the guest is preempted in "
		    "every pass",
		    h->inside, h->have, h->want, h->shortest_pass_ns / 1e6, h->longest_interval_ns / 1e6);
	if (now_ns - h->last_news_ns > HOLD_STALL_S * 1000000000ull)
		return hvt_err_set(err, -ETIMEDOUT,
				   "the tracer harvested no interval for %d s (%s: %" PRIu64
				   " intervals; %u of %u whole ones inside this phase)",
				   HOLD_STALL_S, h->path, h->intervals, h->have, h->want);
	return 0;
}
