// SPDX-License-Identifier: MIT
/*
 * dirty-log mode: the VMM's harvest thread syncs KVM's dirty log into the shared memfd when asked; we ask,
 * wait for the answer and copy the bitmaps out. Accessed pages are not available in this mode.
 */
#include <errno.h>
#include <string.h>

#include "harvest.h"
#include "hvmtrace/util.h"

int dirty_log_collect(struct session *s, const struct hvt_msg_harvested *h, struct hvt_interval *iv,
		      struct hvt_err *err)
{
	const uint8_t *base = s->bitmaps;
	int rc;

	if (h->generation != s->layout.generation)
		return hvt_err_set(err, -EPROTO,
				   "%s: harvest %llu refers to layout generation %llu, current is %llu",
				   s->path, (unsigned long long)h->seq, (unsigned long long)h->generation,
				   (unsigned long long)s->layout.generation);
	if (h->t_end_ns < h->t_start_ns || h->t_done_ns < h->t_end_ns)
		return hvt_err_set(err, -EPROTO, "%s: harvest %llu has timestamps out of order", s->path,
				   (unsigned long long)h->seq);
	rc = hvt_interval_init(iv, &s->layout, HVT_IV_WRITTEN);
	if (rc)
		return hvt_err_set(err, rc, "out of memory for interval %llu", (unsigned long long)h->seq);
	for (uint32_t i = 0; i < s->layout.nslots; i++)
		hvt_pageset_load_le(&iv->written[i], base + hvt_layout_bitmap_offset(&s->layout, i));
	uint64_t pages = hvt_interval_count_pages(iv->written, iv->nslots);
	if (pages != h->dirty_pages) {
		hvt_interval_fini(iv);
		return hvt_err_set(err, -EPROTO,
				   "%s: harvest %llu announced %llu dirty pages, its bitmaps hold %llu",
				   s->path, (unsigned long long)h->seq, (unsigned long long)h->dirty_pages,
				   (unsigned long long)pages);
	}
	iv->seq = h->seq;
	iv->t_start_ns = h->t_start_ns;
	iv->t_end_ns = h->t_end_ns;
	iv->harvest_ns = h->t_done_ns - h->t_end_ns;
	iv->wall_start_ns = hvt_wall_now_ns() - (int64_t)(hvt_now_ns() - h->t_start_ns);
	iv->generation = h->generation;
	iv->lost_pages = h->lost_pages;
	if (h->final)
		iv->flags |= HVT_IV_FINAL;
	return 0;
}

static int dirty_log_harvest(struct session *s, struct hvt_interval *iv, int timeout_ms, struct hvt_err *err)
{
	struct hvt_msg m = {.type = HVT_MSG_HARVEST};
	uint64_t deadline = hvt_now_ns() + (uint64_t)timeout_ms * 1000000;
	int rc;

	m.u.harvest.seq = ++s->seq;
	rc = hvt_msg_send(s->sock, &m, err);
	if (rc && rc != -EPIPE)
		return hvt_err_prefix(err, rc, "%s: asking for harvest %llu: ", s->path,
				      (unsigned long long)s->seq);
	/* -EPIPE: the VMM may have closed right after sending its final harvest and bye; read what it left.
	 */
	for (;;) {
		uint64_t now = hvt_now_ns();
		int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000);

		rc = session_recv(s, &m, left, err);
		if (rc == -ETIMEDOUT)
			return hvt_err_set(err, -ETIMEDOUT,
					   "%s: the VMM did not answer harvest %llu within %d ms", s->path,
					   (unsigned long long)s->seq, timeout_ms);
		if (rc)
			return hvt_err_prefix(err, rc, "during harvest %llu: ", (unsigned long long)s->seq);
		if (m.type == HVT_MSG_LAYOUT)
			continue;
		if (m.type != HVT_MSG_HARVESTED || m.u.harvested.seq != s->seq) {
			rc = hvt_err_set(
			    err, -EPROTO, "%s: expected harvested %llu, the VMM sent %s %llu", s->path,
			    (unsigned long long)s->seq, hvt_msg_type_name(m.type),
			    (unsigned long long)(m.type == HVT_MSG_HARVESTED ? m.u.harvested.seq : 0));
			hvt_msg_fini(&m);
			return rc;
		}
		rc = dirty_log_collect(s, &m.u.harvested, iv, err);
		hvt_msg_fini(&m);
		return rc;
	}
}

const struct harvester harvester_dirty_log = {
    .name = "dirty-log",
    .mode = HVT_MODE_DIRTY_LOG,
    .harvest = dirty_log_harvest,
};
