// SPDX-License-Identifier: MIT
/*
 * dirty-log mode: the VMM's harvest thread syncs KVM's dirty log into the shared memfd when asked; we ask,
 * wait for the answer and copy the bitmaps out. Accessed pages are not available in this mode.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harvest.h"
#include "hvmtrace/util.h"

/* The shared bitmaps of the layout in force. */
struct dirty_log {
	int memfd;
	const void *bitmaps;
	size_t bitmap_bytes;
};

static struct dirty_log *state(const struct session *s)
{
	return s->harvester_state;
}

static void unmap_bitmaps(struct dirty_log *d)
{
	if (d->bitmaps)
		munmap((void *)d->bitmaps, d->bitmap_bytes ? d->bitmap_bytes : 1);
	if (d->memfd >= 0)
		close(d->memfd);
	d->bitmaps = NULL;
	d->memfd = -1;
}

/* Maps a memfd of the shared bitmaps, in place of the last one, after checking it is as large as the
 * layout in force needs. Takes fd on success. */
static int map_bitmaps(struct session *s, struct dirty_log *d, int fd, uint64_t bytes, struct hvt_err *err)
{
	uint64_t need = hvt_layout_bitmap_bytes(&s->layout);
	struct stat st;
	void *p;

	if (bytes != need)
		return hvt_err_set(
		    err, -EPROTO,
		    "%s: the VMM announced %llu bytes of bitmaps, layout generation %llu needs %llu", s->path,
		    (unsigned long long)bytes, (unsigned long long)s->layout.generation,
		    (unsigned long long)need);
	if (fstat(fd, &st) || (uint64_t)st.st_size < need)
		return hvt_err_set(err, -EPROTO,
				   "%s: the bitmap memfd is smaller than the %llu bytes announced", s->path,
				   (unsigned long long)need);
	p = mmap(NULL, need ? need : 1, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return hvt_err_set(err, -errno, "%s: mapping the bitmap memfd: %s", s->path, strerror(errno));
	unmap_bitmaps(d);
	d->bitmaps = p;
	d->bitmap_bytes = need;
	d->memfd = fd;
	return 0;
}

static int dirty_log_attach(struct session *s, struct hvt_msg *m, struct hvt_err *err)
{
	struct dirty_log *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	d->memfd = -1;
	rc = map_bitmaps(s, d, m->fds[0], m->u.attached.bitmap_bytes, err);
	if (rc) {
		free(d);
		return rc;
	}
	m->fds[0] = -1; /* taken */
	s->harvester_state = d;
	return 0;
}

/* Every layout brings the memfd of its bitmaps. */
static int dirty_log_layout(struct session *s, struct hvt_msg *m, struct hvt_err *err)
{
	int rc;

	if (m->nfds != 1)
		return hvt_err_set(err, -EPROTO, "%s: layout generation %llu came without its memfd", s->path,
				   (unsigned long long)s->layout.generation);
	rc = map_bitmaps(s, state(s), m->fds[0], m->u.layout.bitmap_bytes, err);
	if (!rc)
		m->fds[0] = -1; /* taken */
	return rc;
}

static void dirty_log_close(struct session *s)
{
	unmap_bitmaps(state(s));
	free(state(s));
}

/* Fills iv from a "harvested" message: the answer to ours, or the VMM's unsolicited final one. */
static int collect(struct session *s, const struct hvt_msg_harvested *h, struct hvt_interval *iv,
		   struct hvt_err *err)
{
	const uint8_t *base = state(s)->bitmaps;
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
		rc = collect(s, &m.u.harvested, iv, err);
		hvt_msg_fini(&m);
		return rc;
	}
}

/* When the guest ends, the VMM harvests its last interval unasked, as the next harvest, marked final. */
static int dirty_log_vmm_message(struct session *s, const struct hvt_msg *m, struct hvt_interval *iv,
				 struct hvt_err *err)
{
	if (m->type != HVT_MSG_HARVESTED || !m->u.harvested.final || m->u.harvested.seq != s->seq + 1)
		return 0;
	s->seq++;
	int rc = collect(s, &m->u.harvested, iv, err);
	return rc ? rc : 1;
}

static void dirty_log_describe(const struct session *s, char *buf, size_t len)
{
	if (s->harvest_cpu >= 0)
		snprintf(buf, len, "VMM harvest thread on CPU %d", s->harvest_cpu);
	else
		snprintf(buf, len, "VMM harvest thread unpinned");
}

const struct harvester harvester_dirty_log = {
    .mode = HVT_MODE_DIRTY_LOG,
    .sets = HVT_IV_WRITTEN,
    .attach = dirty_log_attach,
    .layout = dirty_log_layout,
    .harvest = dirty_log_harvest,
    .vmm_message = dirty_log_vmm_message,
    .close = dirty_log_close,
    .describe = dirty_log_describe,
};
