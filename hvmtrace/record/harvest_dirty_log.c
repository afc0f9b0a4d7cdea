// SPDX-License-Identifier: MIT
/*
 * dirty-log mode: the VMM's harvest thread syncs KVM's dirty log into the shared memfd when asked; we ask,
 * wait for the answer and copy the bitmaps out, checking the memfd's sequence word around the copy (the
 * VMM must not write while we read). Accessed pages are not available in this mode. Mode dirty-ring shares
 * all of it but the copy (harvest_memfd.h).
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bus_guard.h"
#include "harvest.h"
#include "harvest_memfd.h"
#include "hvmtrace/attach.h"
#include "hvmtrace/error.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/pageset.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/util.h"
#include "session.h"

/* How long the guest's end waits for the VMM to answer our request for its last interval. */
#define FINAL_TIMEOUT_MS 5000

/* The shared memfd of the layout in force: the header with the sequence word, then the bitmaps. */
struct dirty_log {
	int memfd;
	const void *map;
	size_t map_bytes;
	bool final_taken; /* the VMM's last interval ("final") is recorded */
	memfd_load_fn load;
};

static struct dirty_log *state(const struct session *s)
{
	return s->harvester_state;
}

static void unmap_bitmaps(struct dirty_log *d)
{
	if (d->map)
		munmap((void *)d->map, d->map_bytes);
	if (d->memfd >= 0)
		close(d->memfd);
	d->map = NULL;
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
	need += HVT_BITMAP_HEADER_BYTES;
	if (fstat(fd, &st) || (uint64_t)st.st_size < need)
		return hvt_err_set(
		    err, -EPROTO,
		    "%s: the bitmap memfd is smaller than its header and the %llu bytes announced", s->path,
		    (unsigned long long)bytes);
	p = mmap(NULL, need, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return hvt_err_set(err, -errno, "%s: mapping the bitmap memfd: %s", s->path, strerror(errno));
	unmap_bitmaps(d);
	d->map = p;
	d->map_bytes = need;
	d->memfd = fd;
	return 0;
}

int memfd_attach(struct session *s, struct hvt_msg *m, memfd_load_fn load, struct hvt_err *err)
{
	struct dirty_log *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	d->memfd = -1;
	d->load = load;
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
int memfd_layout(struct session *s, struct hvt_msg *m, struct hvt_err *err)
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

void memfd_close(struct session *s)
{
	unmap_bitmaps(state(s));
	free(state(s));
}

/* One copy out of the memfd, between two reads of the sequence word (run under bus_guard). */
struct copy {
	struct memfd_copy mc;
	const uint8_t *map;
	memfd_load_fn load;
	uint64_t seq_before, seq_after;
};

void memfd_load_bitmaps(struct memfd_copy *c)
{
	for (uint32_t i = 0; i < c->s->layout.nslots; i++)
		hvt_pageset_load_le(&c->iv->written[i], c->area + hvt_layout_bitmap_offset(&c->s->layout, i));
}

static void copy_out(void *arg)
{
	struct copy *c = arg;
	const uint64_t *word = (const uint64_t *)c->map;

	c->seq_before = le64toh(__atomic_load_n(word, __ATOMIC_ACQUIRE));
	c->load(&c->mc);
	__atomic_thread_fence(__ATOMIC_ACQUIRE); /* the copy's reads happen before the word's re-read */
	c->seq_after = le64toh(__atomic_load_n(word, __ATOMIC_RELAXED));
}

/* Fills iv from the "harvested" that answers our request. A copy the VMM may have written under, or that
 * does not hold what the VMM announced, is discarded: the run ends rather than record wrong pages. */
static int collect(struct session *s, const struct hvt_msg_harvested *h, struct hvt_interval *iv,
		   struct hvt_err *err)
{
	struct copy c = {.mc = {.s = s,
				.area = (const uint8_t *)state(s)->map + HVT_BITMAP_HEADER_BYTES,
				.h = h,
				.iv = iv},
			 .map = state(s)->map,
			 .load = state(s)->load};
	const uint64_t want = hvt_bitmap_seq_done(h->seq);
	int rc;

	if (h->generation != s->layout.generation)
		return hvt_err_set(err, -EPROTO,
				   "%s: harvest %llu refers to layout generation %llu, current is %llu",
				   s->path, (unsigned long long)h->seq, (unsigned long long)h->generation,
				   (unsigned long long)s->layout.generation);
	if (h->t_end_ns < h->t_start_ns || h->t_done_ns < h->t_end_ns)
		return hvt_err_set(err, -EPROTO, "%s: harvest %llu has timestamps out of order", s->path,
				   (unsigned long long)h->seq);
	rc = session_interval_init(s, iv, HVT_IV_WRITTEN);
	if (rc)
		return hvt_err_set(err, rc, "out of memory for interval %llu", (unsigned long long)h->seq);
	if (bus_guard_run(state(s)->map, state(s)->map_bytes, copy_out, &c)) {
		hvt_interval_fini(iv);
		return hvt_err_set(
		    err, -EFAULT,
		    "%s: harvest %llu: the VMM (%s, pid %d) shrank the shared bitmap memfd under the tracer (SIGBUS on its mapping); the interval is discarded",
		    s->path, (unsigned long long)h->seq, s->hello.vmm, (int)s->vmm_pid);
	}
	if (c.seq_before != want || c.seq_after != want) {
		hvt_interval_fini(iv);
		return hvt_err_set(
		    err, -EPROTO,
		    "%s: harvest %llu: the VMM (%s, pid %d) wrote the shared bitmaps while the tracer read them (sequence word %llu before the copy, %llu after; %llu expected); the interval is discarded",
		    s->path, (unsigned long long)h->seq, s->hello.vmm, (int)s->vmm_pid,
		    (unsigned long long)c.seq_before, (unsigned long long)c.seq_after,
		    (unsigned long long)want);
	}
	if (c.mc.bad[0]) {
		hvt_interval_fini(iv);
		return hvt_err_set(err, -EPROTO, "%s: harvest %llu: %s", s->path, (unsigned long long)h->seq,
				   c.mc.bad);
	}
	uint64_t pages = hvt_interval_count_pages(iv->written, iv->nslots);
	if (h->listed ? pages > h->dirty_pages : pages != h->dirty_pages) { /* a list may repeat a page */
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
	if (s->mode == HVT_MODE_DIRTY_RING) {
		iv->ring_full = h->ring_full;
		iv->flags |= HVT_IV_RING_FULL;
	}
	if (h->final) {
		iv->flags |= HVT_IV_FINAL;
		state(s)->final_taken = true;
	}
	return 0;
}

/*
 * Asks for the next interval and reads it. A VMM whose guest stopped says bye first and then answers the
 * request in flight, or the next one, as its final interval (docs/attach-protocol.md).
 */
int memfd_harvest(struct session *s, struct hvt_interval *iv, int timeout_ms, struct hvt_err *err)
{
	struct hvt_msg m = {.type = HVT_MSG_HARVEST};
	uint64_t deadline = hvt_now_ns() + (uint64_t)timeout_ms * 1000000;
	bool past_bye = s->said_bye; /* a bye from now on is the guest's end, and the answer still comes */
	int rc;

	m.u.harvest.seq = ++s->seq;
	rc = hvt_msg_send(s->sock, &m, err);
	if (rc && rc != -EPIPE)
		return hvt_err_prefix(err, rc, "%s: asking for harvest %llu: ", s->path,
				      (unsigned long long)s->seq);
	/* -EPIPE: the VMM may have closed already; read what it left. */
	for (;;) {
		uint64_t now = hvt_now_ns();
		int left = now >= deadline ? 0 : (int)((deadline - now) / 1000000);

		rc = session_recv(s, &m, left, err);
		if (rc == -ETIMEDOUT)
			return hvt_err_set(err, -ETIMEDOUT,
					   "%s: the VMM did not answer harvest %llu within %d ms", s->path,
					   (unsigned long long)s->seq, timeout_ms);
		if (rc == -EPIPE && s->said_bye && !past_bye) {
			past_bye = true;
			continue;
		}
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

/* The VMM said bye (the guest stopped): its last interval answers one more request, unless a request in
 * flight already brought it. A VMM that closed without bye answers nothing. */
int memfd_after_end(struct session *s, struct hvt_interval *iv, struct hvt_err *err)
{
	int rc;

	if (state(s)->final_taken || !s->said_bye)
		return 0;
	rc = memfd_harvest(s, iv, FINAL_TIMEOUT_MS, err);
	return rc ? rc : 1;
}

void memfd_describe(const struct session *s, char *buf, size_t len)
{
	if (s->harvest_cpu >= 0)
		snprintf(buf, len, "VMM harvest thread on CPU %d", s->harvest_cpu);
	else
		snprintf(buf, len, "VMM harvest thread unpinned");
}

static int dirty_log_attach(struct session *s, struct hvt_msg *m, struct hvt_err *err)
{
	return memfd_attach(s, m, memfd_load_bitmaps, err);
}

const struct harvester harvester_dirty_log = {
    .mode = HVT_MODE_DIRTY_LOG,
    .sets = HVT_IV_WRITTEN,
    .attach = dirty_log_attach,
    .layout = memfd_layout,
    .harvest = memfd_harvest,
    .after_end = memfd_after_end,
    .close = memfd_close,
    .describe = memfd_describe,
};
