// SPDX-License-Identifier: MIT
/* Reading and decoding intervals ahead of the analyses' sweep (analysis_ahead.h). */
#include <errno.h>
#include <string.h>

#include "analysis_ahead.h"
#include "format/trace_format.h"
#include "format/trace_decode.h"
#include "hvmtrace/analysis.h"

bool hvt_ahead_selected(const struct hvt_selection *sel, uint64_t seq, uint64_t t0, uint64_t ts, uint64_t te,
			bool *past)
{
	*past = (sel->to.kind == HVT_POINT_INTERVAL && seq > sel->to.value) ||
		(sel->to.kind == HVT_POINT_TIME && ts - t0 >= sel->to.value);
	if (*past)
		return false;
	if (sel->from.kind == HVT_POINT_INTERVAL && seq < sel->from.value)
		return false;
	if (sel->from.kind == HVT_POINT_TIME && te - t0 <= sel->from.value)
		return false;
	return true;
}

/* Reads interval i into it; false when it is the last item. */
static bool read_one(struct hvt_ahead *q, uint64_t i, uint64_t *t0, struct hvt_ahead_item *it)
{
	const uint8_t *payload;
	size_t len;
	bool past;

	it->index = i;
	it->parsed = false;
	it->err.msg[0] = 0;
	if (i == q->total) {
		it->kind = HVT_AHEAD_END;
		return false;
	}
	it->rc = hvt_trace_read_payload(q->r, i, &payload, &len, &it->layout, &it->err);
	if (it->rc) {
		it->kind = HVT_AHEAD_ERROR;
		return false;
	}
	it->parsed = true;
	it->seq = hvt_get_le64(payload);
	it->ts_ns = hvt_get_le64(payload + 8);
	it->te_ns = hvt_get_le64(payload + 16);
	if (i == 0)
		*t0 = it->ts_ns;
	if (!hvt_ahead_selected(q->sel, it->seq, *t0, it->ts_ns, it->te_ns, &past)) {
		it->kind = past ? HVT_AHEAD_PAST : HVT_AHEAD_SKIPPED;
		return !past;
	}
	it->rc = hvt_trace_decode_runs(q->r, i, payload, len, it->layout, &it->ir, &it->err);
	if (it->rc) {
		it->kind = HVT_AHEAD_ERROR;
		return false;
	}
	it->kind = HVT_AHEAD_SELECTED;
	return true;
}

static void *reader(void *arg)
{
	struct hvt_ahead *q = arg;
	uint64_t t0 = 0;
	bool more = true;

	for (uint64_t i = 0; more; i++) {
		bool stop;

		pthread_mutex_lock(&q->lock);
		while (!q->stop && q->produced - q->released == HVT_AHEAD_SLOTS)
			pthread_cond_wait(&q->changed, &q->lock);
		stop = q->stop;
		pthread_mutex_unlock(&q->lock);
		if (stop)
			break;
		/* the slot is the reader's alone until produced moves past it */
		more = read_one(q, i, &t0, &q->slot[i % HVT_AHEAD_SLOTS]);
		pthread_mutex_lock(&q->lock);
		q->produced++;
		pthread_cond_broadcast(&q->changed);
		pthread_mutex_unlock(&q->lock);
	}
	return NULL;
}

int hvt_ahead_start(struct hvt_ahead *q, struct hvt_trace_reader *r, const struct hvt_selection *sel,
		    uint64_t total, struct hvt_err *err)
{
	int rc;

	memset(q, 0, sizeof(*q));
	q->r = r;
	q->sel = sel;
	q->total = total;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->changed, NULL);
	rc = pthread_create(&q->thread, NULL, reader, q);
	if (rc) {
		hvt_ahead_stop(q);
		return hvt_err_set(err, -rc, "cannot start the trace's reading thread: %s", strerror(rc));
	}
	q->started = true;
	return 0;
}

const struct hvt_ahead_item *hvt_ahead_next(struct hvt_ahead *q)
{
	const struct hvt_ahead_item *it;

	pthread_mutex_lock(&q->lock);
	if (q->taken) {
		it = &q->slot[(q->taken - 1) % HVT_AHEAD_SLOTS];
		if (it->kind != HVT_AHEAD_SELECTED && it->kind != HVT_AHEAD_SKIPPED) {
			pthread_mutex_unlock(&q->lock);
			return it; /* the last one, again */
		}
		q->released = q->taken; /* the caller is done with the item it had */
		pthread_cond_broadcast(&q->changed);
	}
	while (q->produced == q->taken)
		pthread_cond_wait(&q->changed, &q->lock);
	it = &q->slot[q->taken++ % HVT_AHEAD_SLOTS];
	pthread_mutex_unlock(&q->lock);
	return it;
}

void hvt_ahead_stop(struct hvt_ahead *q)
{
	if (q->started) {
		pthread_mutex_lock(&q->lock);
		q->stop = true;
		pthread_cond_broadcast(&q->changed);
		pthread_mutex_unlock(&q->lock);
		pthread_join(q->thread, NULL);
		q->started = false;
	}
	for (int i = 0; i < HVT_AHEAD_SLOTS; i++)
		hvt_iv_runs_fini(&q->slot[i].ir);
	pthread_cond_destroy(&q->changed);
	pthread_mutex_destroy(&q->lock);
}
