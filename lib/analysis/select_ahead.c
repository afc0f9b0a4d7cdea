// SPDX-License-Identifier: MIT
/* Reading, selecting, decoding and cutting intervals ahead of the walk's caller (select_ahead.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/trace_decode.h"
#include "format/trace_format.h"
#include "select_ahead.h"

/* it->view: it->ir with its sets cut to the range. */
static int cut(const struct hvt_ahead *q, struct hvt_ahead_item *it)
{
	it->view.hdr = it->ir.hdr;
	for (int k = 0; k < 2; k++) {
		const struct hvt_runs *in =
		    hvt_runs_clip(&it->cut[k], &it->ir.set[k], q->gfn_first, q->gfn_end);

		if (!in)
			return hvt_err_set(&it->err, -ENOMEM,
					   "out of memory cutting interval %llu to the range",
					   (unsigned long long)it->index);
		it->view.set[k] = *in;
	}
	return 0;
}

int hvt_ahead_read_head(struct hvt_trace_reader *r, uint64_t i, uint64_t *seq, uint64_t *ts_ns,
			uint64_t *te_ns)
{
	const struct hvt_layout *l;
	const uint8_t *payload;
	struct hvt_err err;
	size_t len;
	int rc = hvt_trace_read_payload(r, i, &payload, &len, &l, &err);

	if (rc)
		return rc;
	*seq = hvt_get_le64(payload);
	*ts_ns = hvt_get_le64(payload + 8);
	*te_ns = hvt_get_le64(payload + 16);
	return 0;
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
	if (!hvt_select_takes(q->sel, it->seq, it->ts_ns - *t0, it->te_ns - *t0, &past)) {
		it->kind = past ? HVT_AHEAD_PAST : HVT_AHEAD_SKIPPED;
		return !past;
	}
	if (!q->decode) {
		it->kind = HVT_AHEAD_SELECTED;
		return true;
	}
	it->rc = hvt_trace_decode_runs(q->r, i, payload, len, it->layout, &it->ir, &it->err);
	if (it->rc) {
		it->kind = HVT_AHEAD_ERROR;
		return false;
	}
	it->rc = cut(q, it);
	if (!it->rc && q->early)
		it->rc = q->early(q->early_ctx, &it->view, &it->err);
	it->kind = it->rc ? HVT_AHEAD_ERROR : HVT_AHEAD_SELECTED;
	return !it->rc;
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
		    uint64_t first, uint64_t end, bool decode, uint64_t total, hvt_ahead_early_fn early,
		    void *early_ctx, struct hvt_err *err)
{
	int rc;

	memset(q, 0, sizeof(*q));
	q->r = r;
	q->early = early;
	q->early_ctx = early_ctx;
	q->decode = decode;
	q->sel = sel;
	q->gfn_first = first;
	q->gfn_end = end;
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
	for (int i = 0; i < HVT_AHEAD_SLOTS; i++) {
		hvt_iv_runs_fini(&q->slot[i].ir);
		free(q->slot[i].cut[0].v);
		free(q->slot[i].cut[1].v);
	}
	pthread_cond_destroy(&q->changed);
	pthread_mutex_destroy(&q->lock);
}
