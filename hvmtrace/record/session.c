// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harvest.h"
#include "hvmtrace/error.h"
#include "hvmtrace/util.h"
#include "hvmtrace/version.h"
#include "session.h"

#define HELLO_TIMEOUT_MS  5000
#define SET_FLAGS         (HVT_IV_WRITTEN | HVT_IV_ACCESSED)
#define ATTACH_TIMEOUT_MS 10000

static void send_error(struct session *s, const char *code, const char *message)
{
	struct hvt_msg m = {.type = HVT_MSG_ERROR};

	snprintf(m.u.error.code, sizeof(m.u.error.code), "%s", code);
	snprintf(m.u.error.message, sizeof(m.u.error.message), "%s", message);
	hvt_msg_send(s->sock, &m, NULL);
}

/* A VMM notices a dead tracer only when it next reads from it; a new tracer may meet "busy" until then. */
#define BUSY_RETRY_MS 3000

static bool is_busy(const struct hvt_msg *m)
{
	return m->type == HVT_MSG_ERROR && !strcmp(m->u.error.code, "busy");
}

int session_connect(struct session *s, const char *path, long vmm_uid, struct hvt_err *err)
{
	uint64_t give_up = hvt_now_ns() + BUSY_RETRY_MS * 1000000ull;
	struct hvt_msg m = {0};
	int rc;

	memset(s, 0, sizeof(*s));
	s->sock = -1;
	s->path = path;
	bool was_busy = false;
	struct hvt_err busy;
retry:
	s->sock = hvt_attach_connect(path, err);
	if (s->sock < 0) {
		if (was_busy) /* it went away while we waited: what it said last is the news */
			*err = busy;
		return was_busy ? -ECONNREFUSED : s->sock;
	}
	uid_t peer_uid;
	rc = hvt_attach_check_peer(s->sock, &s->vmm_pid, &peer_uid, err);
	if (rc == -EACCES && vmm_uid >= 0 && peer_uid == (uid_t)vmm_uid)
		rc = 0; /* the VMM's own unprivileged user, named by whoever started us */
	if (rc)
		return hvt_err_prefix(err, rc, "%s: ", path);
	rc = hvt_msg_recv(s->sock, &m, HELLO_TIMEOUT_MS, err);
	if (rc == -ETIMEDOUT)
		return hvt_err_set(err, -EPROTO, "%s: no hello within %d s: not an hvmtrace VMM socket", path,
				   HELLO_TIMEOUT_MS / 1000);
	if (rc == -ENOMEM) /* our failure, not the peer's */
		return hvt_err_prefix(err, rc, "%s: reading the VMM's hello: ", path);
	if (rc)
		return hvt_err_prefix(err, rc == -EPROTO ? -EPROTO : rc,
				      "%s: not an hvmtrace VMM socket: ", path);
	if (is_busy(&m) && hvt_now_ns() < give_up) {
		was_busy = true;
		hvt_err_set(&busy, -ECONNREFUSED, "%s: the VMM refused the connection (busy): %s", path,
			    m.u.error.message);
		hvt_msg_fini(&m);
		close(s->sock);
		usleep(50000);
		goto retry;
	}
	if (m.type == HVT_MSG_ERROR) {
		rc = hvt_err_set(err, -ECONNREFUSED, "%s: the VMM refused the connection (%s): %s", path,
				 m.u.error.code, m.u.error.message);
		hvt_msg_fini(&m);
		return rc;
	}
	if (m.type != HVT_MSG_HELLO) {
		rc = hvt_err_set(err, -EPROTO, "%s: expected hello, the VMM sent %s", path,
				 hvt_msg_type_name(m.type));
		hvt_msg_fini(&m);
		return rc;
	}
	if (m.u.hello.protocol != HVT_ATTACH_PROTOCOL) {
		char msg[256];

		snprintf(
		    msg, sizeof(msg), "the VMM speaks attach protocol %u; this hvmtrace (%s) speaks %u%s",
		    m.u.hello.protocol, HVT_VERSION, HVT_ATTACH_PROTOCOL,
		    m.u.hello.protocol < HVT_ATTACH_PROTOCOL
			? " (update the VMM: protocol 1 wrote its final interval into bitmaps the tracer may still read)"
			: "");
		send_error(s, "version", msg);
		hvt_msg_fini(&m);
		return hvt_err_set(err, -EPROTONOSUPPORT, "%s: %s", path, msg);
	}
	s->hello = m.u.hello;
	s->layout = m.u.hello.layout; /* moved: hello no longer owns it */
	memset(&s->hello.layout, 0, sizeof(s->hello.layout));
	return 0;
}

int session_attach(struct session *s, const struct harvester *h, int cpu, struct hvt_err *err)
{
	struct hvt_msg m = {.type = HVT_MSG_ATTACH};
	const enum hvt_mode mode = h->mode;
	int rc;

	m.u.attach.protocol = HVT_ATTACH_PROTOCOL;
	m.u.attach.mode = mode;
	m.u.attach.cpu = cpu;
	m.u.attach.tracer_pid = getpid();
	snprintf(m.u.attach.tracer, sizeof(m.u.attach.tracer), "hvmtrace %s", HVT_VERSION);
	rc = hvt_msg_send(s->sock, &m, err);
	if (rc)
		return hvt_err_prefix(err, rc, "%s: sending attach: ", s->path);

	for (;;) {
		rc = session_recv(s, &m, ATTACH_TIMEOUT_MS, err);
		if (rc)
			return hvt_err_prefix(err, rc, "%s: attaching: ", s->path);
		if (m.type == HVT_MSG_ATTACHED)
			break;
		if (m.type != HVT_MSG_LAYOUT) {
			rc = hvt_err_set(err, -EPROTO, "%s: expected attached, the VMM sent %s", s->path,
					 hvt_msg_type_name(m.type));
			hvt_msg_fini(&m);
			return rc;
		}
	}
	s->mode = m.u.attached.mode;
	s->harvest_cpu = m.u.attached.cpu;
	s->t_armed_ns = m.u.attached.t_armed_ns;
	if (s->mode != mode || m.u.attached.generation != s->layout.generation) {
		rc = hvt_err_set(err, -EPROTO,
				 "%s: attached in mode %s generation %llu, expected %s generation %llu",
				 s->path, hvt_mode_name(s->mode), (unsigned long long)m.u.attached.generation,
				 hvt_mode_name(mode), (unsigned long long)s->layout.generation);
		hvt_msg_fini(&m);
		return rc;
	}
	if (m.nfds != 1) {
		hvt_msg_fini(&m);
		return hvt_err_set(err, -EPROTO, "%s: attached carried %d fds, expected 1", s->path, m.nfds);
	}
	rc = h->attach(s, &m, err);
	hvt_msg_fini(&m); /* closes what the harvester did not take */
	if (!rc)
		s->harvester = h; /* from here on, its layouts and its close */
	return rc;
}

int session_apply_layout(struct session *s, struct hvt_msg *m, struct hvt_err *err)
{
	struct hvt_layout *l = &m->u.layout.layout;
	struct hvt_layout old = s->layout;
	int rc;

	if (l->generation <= s->layout.generation)
		return hvt_err_set(err, -EPROTO, "%s: layout generation %llu does not follow %llu", s->path,
				   (unsigned long long)l->generation,
				   (unsigned long long)s->layout.generation);
	uint64_t bytes = hvt_layout_total_pages(l) * l->page_size;
	if (s->max_guest_bytes && bytes > s->max_guest_bytes) {
		char has[32], max[32];

		hvt_format_size(bytes, has, sizeof(has));
		hvt_format_size(s->max_guest_bytes, max, sizeof(max));
		s->layout_refused = true;
		snprintf(
		    s->end_reason, sizeof(s->end_reason),
		    "layout generation %llu refused: the guest grew to %s of RAM, beyond the %s this run's locked memory covers (record --max-guest-ram)",
		    (unsigned long long)l->generation, has, max);
		return hvt_err_set(err, -E2BIG, "%s: %s", s->path, s->end_reason);
	}
	s->layout = *l;
	if (s->harvester && s->harvester->layout) {
		rc = s->harvester->layout(s, m, err);
		if (rc) {
			s->layout = old;
			return rc;
		}
	}
	memset(l, 0, sizeof(*l)); /* moved into the session */
	hvt_layout_fini(&old);
	return 0;
}

int session_recv(struct session *s, struct hvt_msg *m, int timeout_ms, struct hvt_err *err)
{
	int rc;

	memset(m, 0, sizeof(*m));
	rc = hvt_msg_recv(s->sock, m, timeout_ms, err);
	if ((rc == -EPIPE || rc == -ECONNRESET) && s->said_bye) /* keep why it ended */
		return hvt_err_set(err, -EPIPE, "%s; then it closed the connection", s->end_reason);
	if (rc == -EPIPE || rc == -ECONNRESET) {
		s->vmm_gone = true;
		snprintf(s->end_reason, sizeof(s->end_reason), "the VMM closed the connection without bye");
		return hvt_err_set(err, -EPIPE, "%s", s->end_reason);
	}
	if (rc)
		return rc;
	switch (m->type) {
	case HVT_MSG_LAYOUT:
		rc = session_apply_layout(s, m, err);
		if (rc)
			hvt_msg_fini(m);
		return rc;
	case HVT_MSG_BYE:
		s->vmm_gone = s->said_bye = true;
		snprintf(s->end_reason, sizeof(s->end_reason), "the VMM said bye: %s", m->u.bye.reason);
		hvt_msg_fini(m);
		return hvt_err_set(err, -EPIPE, "%s", s->end_reason);
	case HVT_MSG_ERROR:
		s->vmm_gone = true;
		snprintf(s->end_reason, sizeof(s->end_reason), "the VMM reported an error (%s): %s",
			 m->u.error.code, m->u.error.message);
		hvt_msg_fini(m);
		return hvt_err_set(err, -ECONNABORTED, "%s", s->end_reason);
	default:
		return 0;
	}
}

/* The spare's sets are the layout's: the same generation, slots and sizes, and the kinds flags names. */
static bool spare_fits(const struct session *s, uint32_t flags)
{
	const struct hvt_interval *sp = &s->spare;
	const struct hvt_layout *l = &s->layout;

	if ((sp->flags & SET_FLAGS) != (flags & SET_FLAGS) || !(flags & SET_FLAGS) ||
	    sp->generation != l->generation || sp->nslots != l->nslots ||
	    ((flags & HVT_IV_WRITTEN) && !sp->written) || ((flags & HVT_IV_ACCESSED) && !sp->accessed))
		return false;
	for (uint32_t i = 0; i < l->nslots; i++) {
		uint64_t n = hvt_memslot_npages(l, &l->slots[i]);

		if ((sp->written && sp->written[i].npages != n) ||
		    (sp->accessed && sp->accessed[i].npages != n))
			return false;
	}
	return true;
}

int session_interval_init(struct session *s, struct hvt_interval *iv, uint32_t flags)
{
	if (spare_fits(s, flags)) {
		*iv = s->spare;
		memset(&s->spare, 0, sizeof(s->spare));
		iv->flags = flags;
		return 0;
	}
	hvt_interval_fini(&s->spare); /* another layout's: freed before the new sets take their place */
	return hvt_interval_init(iv, &s->layout, flags);
}

void session_interval_done(struct session *s, struct hvt_interval *iv)
{
	struct hvt_interval keep = {0};

	if (!(iv->flags & SET_FLAGS) || (!iv->written && !iv->accessed)) {
		hvt_interval_fini(iv);
		return;
	}
	for (uint32_t i = 0; i < iv->nslots; i++) {
		if (iv->written)
			hvt_pageset_clear(&iv->written[i]);
		if (iv->accessed)
			hvt_pageset_clear(&iv->accessed[i]);
	}
	keep.flags = iv->flags & SET_FLAGS;
	keep.generation = iv->generation;
	keep.nslots = iv->nslots;
	keep.written = iv->written;
	keep.accessed = iv->accessed;
	iv->written = iv->accessed = NULL;
	hvt_interval_fini(iv);
	hvt_interval_fini(&s->spare);
	s->spare = keep;
}

void session_close(struct session *s, const char *reason)
{
	if (s->sock >= 0 && !s->vmm_gone) {
		struct hvt_msg m = {.type = HVT_MSG_BYE};

		snprintf(m.u.bye.reason, sizeof(m.u.bye.reason), "%s", reason);
		hvt_msg_send(s->sock, &m, NULL);
	}
	if (s->harvester)
		s->harvester->close(s);
	if (s->sock >= 0)
		close(s->sock);
	hvt_layout_fini(&s->layout);
	hvt_interval_fini(&s->spare);
	s->sock = -1;
	s->harvester = NULL;
	s->harvester_state = NULL;
}
