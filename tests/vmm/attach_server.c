// SPDX-License-Identifier: MIT
/*
 * Attach protocol server. The accept thread authenticates each peer and either starts a session or answers
 * "busy". A session thread says hello, takes "attach", pins itself to the requested CPU, arms dirty logging,
 * hands over the bitmap memfd and then answers harvests until the tracer leaves or the guest stops. It
 * disarms dirty logging when it ends, so another tracer can attach later.
 * With KVM's dirty ring (--dirty-ring) the VM has no dirty bitmaps: it offers mode "dirty-ring" instead,
 * which answers harvests the same way with the pages reaped from the ring (dirtyring.h).
 * In mode "ad" (offered when KVM has our KVM_AD_HARVEST patch) it hands over the A/D fd instead and only
 * waits: the tracer harvests itself.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ad_mode.h"
#include "attach_server.h"
#include "dirtylog.h"
#include "dirtyring.h"
#include "hvmtrace/attach.h"
#include "hvmtrace/error.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/util.h"
#include "vm.h"

#define VMM_NAME          "hvmtrace-vmm 0.1.0"
#define ATTACH_TIMEOUT_MS 10000 /* a tracer that connects must attach soon, or it blocks others */
#define FRAME_TIMEOUT_MS  5000  /* once a frame has begun, the rest must follow */
#define FINISH_TIMEOUT_S  10
#define AD_LINGER_MS      3000 /* mode ad: how long the VM outlives our bye for the tracer's last harvest */
#define FINAL_WAIT_MS     8000 /* dirty-log: how long the guest's end waits for the tracer's next harvest */

struct attach_server {
	struct vm *vm;
	struct attach_server_config cfg;
	char path[108];
	int listen_fd;
	int wake_fd; /* eventfd: ends the accept thread */
	int stop_fd; /* eventfd: the session ends with a final harvest */
	pthread_t accept_thread;
	pthread_t session_thread;
	bool session_joinable;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool session_active, attached, finishing;
	char final_reason[64];
	uint32_t modes; /* HVT_MODE_BIT()s offered in hello */
};

struct session {
	struct attach_server *srv;
	int sock;
	pid_t peer_pid;
	struct hvt_layout layout;
	void *map; /* the shared memfd: the header with the sequence word, then the bitmaps */
	uint64_t map_bytes;
	uint64_t bitmap_bytes;
	uint64_t last_seq;
	uint64_t t_prev_done_ns;
	bool armed;
	enum hvt_mode mode;
};

static void logmsg(const struct attach_server *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logmsg(const struct attach_server *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->cfg.verbose)
		return;
	va_start(ap, fmt);
	fputs("hvmtrace-vmm: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Best effort: the connection is closed right after, whatever happens to this message. */
static void send_error(int sock, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void send_error(int sock, const char *code, const char *fmt, ...)
{
	struct hvt_msg m = {.type = HVT_MSG_ERROR};
	va_list ap;

	snprintf(m.u.error.code, sizeof(m.u.error.code), "%s", code);
	va_start(ap, fmt);
	vsnprintf(m.u.error.message, sizeof(m.u.error.message), fmt, ap);
	va_end(ap);
	hvt_msg_send(sock, &m, NULL);
}

static int send_bye(int sock, const char *reason)
{
	struct hvt_msg m = {.type = HVT_MSG_BYE};

	snprintf(m.u.bye.reason, sizeof(m.u.bye.reason), "%s", reason);
	return hvt_msg_send(sock, &m, NULL);
}

static int send_hello(struct session *ss)
{
	struct attach_server *s = ss->srv;
	struct hvt_msg m = {.type = HVT_MSG_HELLO};
	struct hvt_msg_hello *h = &m.u.hello;
	struct hvt_err err;
	int rc;

	h->protocol = HVT_ATTACH_PROTOCOL;
	snprintf(h->vmm, sizeof(h->vmm), "%s", VMM_NAME);
	snprintf(h->vm_name, sizeof(h->vm_name), "%s", s->cfg.vm_name ? s->cfg.vm_name : "");
	h->vm_pid = (int32_t)getpid();
	snprintf(h->accel, sizeof(h->accel), "kvm");
	h->page_size = 4096;
	h->modes = s->modes;
	h->default_cpu = s->cfg.default_cpu;
	h->nvcpu_tids = 1;
	h->vcpu_tids[0] = (int32_t)s->cfg.vcpu_tid;
	h->layout = ss->layout; /* borrowed: not freed by this message */
	rc = hvt_msg_send(ss->sock, &m, &err);
	if (rc)
		logmsg(s, "hello to pid %d: %s", (int)ss->peer_pid, err.msg);
	return rc;
}

/* Waits for the socket or the stop event. 1: socket readable, 0: stop, <0: error. */
static int wait_sock_or_stop(struct session *ss, int timeout_ms)
{
	struct pollfd p[2] = {{.fd = ss->sock, .events = POLLIN}, {.fd = ss->srv->stop_fd, .events = POLLIN}};

	for (;;) {
		int n = poll(p, 2, timeout_ms);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ETIMEDOUT;
		if (p[1].revents)
			return 0;
		return 1;
	}
}

/* Pins the calling (harvest) thread. Returns the CPU in force or -1 (unpinned), or -EINVAL. */
static int pin_harvest_thread(struct session *ss, int requested, char *why, size_t whylen)
{
	int cpu = requested >= 0 ? requested : ss->srv->cfg.default_cpu;
	cpu_set_t set;
	int rc;

	if (cpu < 0)
		return -1;
	if (cpu >= CPU_SETSIZE) {
		snprintf(why, whylen, "host CPU %d does not exist", cpu);
		return -EINVAL;
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (rc) {
		snprintf(why, whylen, "cannot run the harvest thread on host CPU %d: %s", cpu, strerror(rc));
		return -EINVAL;
	}
	return cpu;
}

static int create_bitmaps(struct session *ss, int *fd_out, struct hvt_err *err)
{
	int fd = memfd_create("hvmtrace-dirty-log", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return hvt_err_set(err, -errno, "memfd_create: %s", strerror(errno));
	ss->bitmap_bytes = hvt_layout_bitmap_bytes(&ss->layout);
	ss->map_bytes = HVT_BITMAP_HEADER_BYTES + ss->bitmap_bytes;
	if (ftruncate(fd, (off_t)ss->map_bytes) < 0) {
		close(fd);
		return hvt_err_set(err, -errno, "sizing the bitmap memfd: %s", strerror(errno));
	}
	/* The tracer cannot shrink it under our mapping (which would SIGBUS the VMM). */
	fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	ss->map = mmap(NULL, ss->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ss->map == MAP_FAILED) {
		ss->map = NULL;
		close(fd);
		return hvt_err_set(err, -errno, "mapping the bitmap memfd: %s", strerror(errno));
	}
	*fd_out = fd;
	return 0;
}

/* dirty-log: the bitmap memfd, and KVM's dirty log armed. */
static int prepare_dirty_log(struct session *ss, int *fd, uint64_t *t_armed, struct hvt_err *err)
{
	int rc = create_bitmaps(ss, fd, err);

	if (rc)
		return rc;
	if ((rc = dirtylog_arm(ss->srv->vm, t_armed, err))) {
		close(*fd);
		return rc;
	}
	ss->armed = true;
	ss->t_prev_done_ns = *t_armed;
	return 0;
}

/* dirty-ring: the same memfd, and the ring's pages collected from now on. */
static int prepare_dirty_ring(struct session *ss, int *fd, uint64_t *t_armed, struct hvt_err *err)
{
	int rc = create_bitmaps(ss, fd, err);
	uint64_t list_max = ss->bitmap_bytes / 8;

	if (rc)
		return rc;
	if (ss->srv->cfg.ring_list_max && ss->srv->cfg.ring_list_max < list_max)
		list_max = ss->srv->cfg.ring_list_max;
	if ((rc = dirtyring_arm(ss->srv->vm, &ss->layout, list_max, t_armed, err))) {
		close(*fd);
		return rc;
	}
	ss->armed = true;
	ss->t_prev_done_ns = *t_armed;
	return 0;
}

/* ad: the A/D fd and nothing armed (bitmap_bytes stays 0); the tracer's first harvest opens the first
 * interval, so t_armed only says when the fd was made. */
static int prepare_ad(struct session *ss, int *fd, uint64_t *t_armed, struct hvt_err *err)
{
	*fd = ad_mode_create_fd(ss->srv->vm, err);
	if (*fd < 0)
		return *fd;
	*t_armed = hvt_now_ns();
	return 0;
}

/* hello, attach, attached. 0 when attached; otherwise the connection is to be closed. */
static int handshake(struct session *ss)
{
	struct attach_server *s = ss->srv;
	struct hvt_msg m;
	struct hvt_err err = {{0}};
	char why[160];
	int rc, cpu, fd = -1;

	if ((rc = send_hello(ss)))
		return rc;
	rc = wait_sock_or_stop(ss, ATTACH_TIMEOUT_MS);
	if (rc == 0) {
		send_bye(ss->sock, s->final_reason);
		return -ECANCELED;
	}
	if (rc == -ETIMEDOUT) {
		send_error(ss->sock, "protocol", "no attach message within %d ms", ATTACH_TIMEOUT_MS);
		return rc;
	}
	if (rc < 0)
		return rc;
	rc = hvt_msg_recv(ss->sock, &m, FRAME_TIMEOUT_MS, &err);
	if (rc) {
		logmsg(s, "tracer pid %d: %s", (int)ss->peer_pid, err.msg);
		if (rc == -EPROTO)
			send_error(ss->sock, "protocol", "%s", err.msg);
		return rc;
	}
	if (m.type != HVT_MSG_ATTACH) {
		send_error(ss->sock, "protocol", "expected an attach message, got %s",
			   hvt_msg_type_name(m.type));
		hvt_msg_fini(&m);
		return -EPROTO;
	}
	if (m.u.attach.protocol != HVT_ATTACH_PROTOCOL) {
		send_error(ss->sock, "version", "protocol version %u is not supported; this VMM speaks %d",
			   m.u.attach.protocol, HVT_ATTACH_PROTOCOL);
		return -EPROTO;
	}
	if (m.u.attach.mode == HVT_MODE_NONE || !(s->modes & HVT_MODE_BIT(m.u.attach.mode))) {
		send_error(ss->sock, "mode", "mode %s is not offered; this VMM offers %s%s",
			   hvt_mode_name(m.u.attach.mode), s->vm->ring ? "dirty-ring" : "dirty-log",
			   (s->modes & HVT_MODE_BIT(HVT_MODE_AD)) ? " and ad" : "");
		return -EPROTO;
	}
	ss->mode = m.u.attach.mode;
	cpu = pin_harvest_thread(ss, m.u.attach.cpu, why, sizeof(why));
	if (cpu == -EINVAL) {
		send_error(ss->sock, "cpu", "%s", why);
		return -EINVAL;
	}
	logmsg(s, "tracer %s (pid %d) attaching, harvest thread on CPU %d", m.u.attach.tracer,
	       (int)m.u.attach.tracer_pid, cpu);

	uint64_t t_armed;
	rc = ss->mode == HVT_MODE_AD           ? prepare_ad(ss, &fd, &t_armed, &err)
	     : ss->mode == HVT_MODE_DIRTY_RING ? prepare_dirty_ring(ss, &fd, &t_armed, &err)
					       : prepare_dirty_log(ss, &fd, &t_armed, &err);
	if (rc) {
		send_error(ss->sock, "internal", "%s", err.msg);
		return rc;
	}

	struct hvt_msg a = {.type = HVT_MSG_ATTACHED, .nfds = 1};
	a.u.attached = (struct hvt_msg_attached){.mode = ss->mode,
						 .cpu = cpu,
						 .generation = ss->layout.generation,
						 .t_armed_ns = t_armed,
						 .bitmap_bytes = ss->bitmap_bytes};
	a.fds[0] = fd;
	rc = hvt_msg_send(ss->sock, &a, &err);
	close(fd);
	if (rc) {
		logmsg(s, "attached to pid %d: %s", (int)ss->peer_pid, err.msg);
		return rc;
	}
	pthread_mutex_lock(&s->lock);
	s->attached = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int harvest(struct session *ss, uint64_t seq, bool final)
{
	struct hvt_msg m = {.type = HVT_MSG_HARVESTED};
	struct dirtylog_result r;
	struct dirtyring_result rr = {0};
	struct hvt_err err = {{0}};
	int rc;

	uint64_t *seq_word = ss->map;

	/* The sequence word brackets our writes (a seqlock): odd while we write, 2 * seq when done. */
	__atomic_store_n(seq_word, htole64(hvt_bitmap_seq_writing(seq)), __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (ss->mode == HVT_MODE_DIRTY_RING) {
		rc = dirtyring_harvest(ss->srv->vm, (char *)ss->map + HVT_BITMAP_HEADER_BYTES,
				       ss->bitmap_bytes, &rr, &err);
		r = (struct dirtylog_result){rr.t_end_ns, rr.t_done_ns, rr.dirty_pages};
	} else
		rc = dirtylog_harvest(ss->srv->vm, &ss->layout, (char *)ss->map + HVT_BITMAP_HEADER_BYTES, &r,
				      &err);
	__atomic_store_n(seq_word, htole64(hvt_bitmap_seq_done(seq)), __ATOMIC_RELEASE);
	if (rc) {
		send_error(ss->sock, "internal", "%s", err.msg);
		return rc;
	}
	m.u.harvested = (struct hvt_msg_harvested){.seq = seq,
						   .generation = ss->layout.generation,
						   .t_start_ns = ss->t_prev_done_ns,
						   .t_end_ns = r.t_end_ns,
						   .t_done_ns = r.t_done_ns,
						   .dirty_pages = r.dirty_pages,
						   .final = final,
						   .listed = rr.listed,
						   .ring_full = rr.ring_full};
	ss->t_prev_done_ns = r.t_done_ns;
	rc = hvt_msg_send(ss->sock, &m, &err);
	if (rc)
		logmsg(ss->srv, "harvested %" PRIu64 ": %s", seq, err.msg);
	else
		logmsg(ss->srv,
		       "harvest %" PRIu64 "%s: %" PRIu64 " dirty pages%s in %.3f ms (%" PRIu64
		       " ring-full exits)",
		       seq, final ? " (final)" : "", r.dirty_pages, rr.listed ? " listed" : "",
		       (double)(r.t_done_ns - r.t_end_ns) / 1e6, rr.ring_full);
	return rc;
}

/*
 * Mode ad, after our bye: the tracer harvests the guest's last interval itself, which needs the VM's
 * mappings (and their A/D bits) still in place. Keep the VM until the tracer closes, for a bounded time.
 */
static void linger_for_tracer(struct session *ss)
{
	uint64_t give_up = hvt_now_ns() + AD_LINGER_MS * 1000000ull;
	char buf[256];

	shutdown(ss->sock, SHUT_WR);
	for (;;) {
		uint64_t now = hvt_now_ns();
		struct pollfd p = {.fd = ss->sock, .events = POLLIN};

		if (now >= give_up || poll(&p, 1, (int)((give_up - now) / 1000000) + 1) <= 0)
			return;
		if (read(ss->sock, buf, sizeof(buf)) <= 0) /* EOF: the tracer is done; its bye is drained */
			return;
	}
}

/*
 * The guest stopped (dirty-log mode). The tracer may still be reading the bitmaps of the last "harvested",
 * and the VMM writes them only between a "harvest" and its "harvested" (docs/attach-protocol.md): an
 * unrequested final harvest here could overwrite them under the tracer. So we say bye, and the final
 * interval answers the tracer's request in flight or its next one; a tracer that does not ask within
 * FINAL_WAIT_MS loses its last, partial interval (lost, never wrong).
 */
static void final_on_next_request(struct session *ss)
{
	struct pollfd p = {.fd = ss->sock, .events = POLLIN};
	struct hvt_err err = {{0}};
	struct hvt_msg m;
	int n;

	if (send_bye(ss->sock, ss->srv->final_reason))
		return;
	while ((n = poll(&p, 1, FINAL_WAIT_MS)) < 0 && errno == EINTR)
		;
	if (n <= 0) {
		logmsg(ss->srv,
		       "tracer pid %d asked for no harvest within %d ms after bye: its last interval is lost",
		       (int)ss->peer_pid, FINAL_WAIT_MS);
		return;
	}
	if (hvt_msg_recv(ss->sock, &m, FRAME_TIMEOUT_MS, &err))
		return; /* the tracer left (EOF) or broke the framing: nobody to send the interval to */
	if (m.type == HVT_MSG_HARVEST && m.u.harvest.seq == ss->last_seq + 1) {
		ss->last_seq = m.u.harvest.seq;
		harvest(ss, ss->last_seq, true);
		return;
	}
	hvt_msg_fini(&m); /* its bye (or anything else) ends the session as it is */
}

/* Answers harvests until the tracer leaves (bye, EOF, error) or the guest stops (final harvest). */
static void serve(struct session *ss)
{
	struct attach_server *s = ss->srv;

	for (;;) {
		struct hvt_msg m;
		struct hvt_err err = {{0}};
		int rc = wait_sock_or_stop(ss, -1);

		if (rc == 0 && ss->mode == HVT_MODE_AD) {
			if (send_bye(ss->sock, s->final_reason) == 0)
				linger_for_tracer(ss);
			return;
		}
		if (rc == 0) {
			final_on_next_request(ss);
			return;
		}
		if (rc < 0)
			return;
		rc = hvt_msg_recv(ss->sock, &m, FRAME_TIMEOUT_MS, &err);
		if (rc) {
			if (rc != -EPIPE)
				logmsg(s, "tracer pid %d: %s", (int)ss->peer_pid, err.msg);
			if (rc == -EPROTO)
				send_error(ss->sock, "protocol", "%s", err.msg);
			return;
		}
		switch (m.type) {
		case HVT_MSG_HARVEST:
			if (ss->mode == HVT_MODE_AD) {
				send_error(ss->sock, "protocol",
					   "harvest in mode ad: the tracer harvests through the A/D fd");
				return;
			}
			if (m.u.harvest.seq != ss->last_seq + 1) {
				send_error(ss->sock, "protocol", "harvest seq %" PRIu64 ", expected %" PRIu64,
					   m.u.harvest.seq, ss->last_seq + 1);
				return;
			}
			ss->last_seq = m.u.harvest.seq;
			if (harvest(ss, ss->last_seq, false))
				return;
			break;
		case HVT_MSG_BYE:
			logmsg(s, "tracer pid %d said bye: %s", (int)ss->peer_pid, m.u.bye.reason);
			return;
		case HVT_MSG_ERROR:
			logmsg(s, "tracer pid %d sent error %s: %s", (int)ss->peer_pid, m.u.error.code,
			       m.u.error.message);
			return;
		default:
			send_error(ss->sock, "protocol", "unexpected %s message while attached",
				   hvt_msg_type_name(m.type));
			hvt_msg_fini(&m);
			return;
		}
	}
}

static void *session_main(void *arg)
{
	struct session *ss = arg;
	struct attach_server *s = ss->srv;
	struct hvt_err err = {{0}};

	if (handshake(ss) == 0)
		serve(ss);
	if (ss->armed &&
	    (ss->mode == HVT_MODE_DIRTY_RING ? dirtyring_disarm(s->vm, &err) : dirtylog_disarm(s->vm, &err)))
		fprintf(stderr, "hvmtrace-vmm: %s\n", err.msg);
	if (ss->map)
		munmap(ss->map, ss->map_bytes);
	close(ss->sock);
	hvt_layout_fini(&ss->layout);
	logmsg(s, "session with pid %d ended", (int)ss->peer_pid);
	free(ss);

	pthread_mutex_lock(&s->lock);
	s->session_active = false;
	s->attached = false;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void start_session(struct attach_server *s, int sock, pid_t pid)
{
	struct session *ss = calloc(1, sizeof(*ss));
	int rc;

	if (!ss)
		goto fail;
	ss->srv = s;
	ss->sock = sock;
	ss->peer_pid = pid;
	pthread_mutex_lock(&s->vm->slots_lock);
	rc = vm_layout(s->vm, &ss->layout);
	pthread_mutex_unlock(&s->vm->slots_lock);
	if (rc)
		goto fail;
	pthread_mutex_lock(&s->lock);
	if (s->session_active || s->finishing) {
		pthread_mutex_unlock(&s->lock);
		send_error(sock, "busy", "another tracer is attached to this VM");
		hvt_layout_fini(&ss->layout);
		free(ss);
		close(sock);
		return;
	}
	s->session_active = true;
	pthread_mutex_unlock(&s->lock);
	if (s->session_joinable) {
		pthread_join(s->session_thread, NULL); /* it has ended: it cleared session_active last */
		s->session_joinable = false;
	}
	if (pthread_create(&s->session_thread, NULL, session_main, ss) == 0) {
		s->session_joinable = true;
		return;
	}
	pthread_mutex_lock(&s->lock);
	s->session_active = false;
	pthread_mutex_unlock(&s->lock);
fail:
	send_error(sock, "internal", "out of resources");
	if (ss)
		hvt_layout_fini(&ss->layout);
	free(ss);
	close(sock);
}

static void *accept_main(void *arg)
{
	struct attach_server *s = arg;
	struct pollfd p[2] = {{.fd = s->listen_fd, .events = POLLIN}, {.fd = s->wake_fd, .events = POLLIN}};

	for (;;) {
		struct hvt_err err = {{0}};
		pid_t pid = 0;
		uid_t uid = 0;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		int sock = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (sock < 0)
			continue;
		if (hvt_attach_check_peer(sock, &pid, &uid, &err)) {
			logmsg(s, "refused a connection: %s", err.msg);
			send_error(sock, "permission", "%s", err.msg);
			close(sock);
			continue;
		}
		start_session(s, sock, pid);
	}
	return NULL;
}

int attach_server_start(struct attach_server **out, struct vm *vm, const struct attach_server_config *cfg,
			struct hvt_err *err)
{
	struct attach_server *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (!s)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	s->vm = vm;
	s->cfg = *cfg;
	snprintf(s->path, sizeof(s->path), "%s", cfg->path);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->wake_fd = eventfd(0, EFD_CLOEXEC);
	s->stop_fd = eventfd(0, EFD_CLOEXEC);
	/* A VM on the dirty ring has no dirty bitmaps for KVM_GET_DIRTY_LOG to get. */
	s->modes = HVT_MODE_BIT(vm->ring ? HVT_MODE_DIRTY_RING : HVT_MODE_DIRTY_LOG) |
		   (ad_mode_available(vm) ? HVT_MODE_BIT(HVT_MODE_AD) : 0);
	s->listen_fd = hvt_attach_listen(cfg->path, err);
	if (s->listen_fd < 0 || s->wake_fd < 0 || s->stop_fd < 0) {
		rc = s->listen_fd < 0 ? hvt_err_prefix(err, s->listen_fd, "--listen: ")
				      : hvt_err_set(err, -errno, "eventfd: %s", strerror(errno));
		goto fail;
	}
	rc = pthread_create(&s->accept_thread, NULL, accept_main, s);
	if (rc) {
		rc = hvt_err_set(err, -rc, "starting the accept thread: %s", strerror(rc));
		unlink(s->path);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	free(s);
	return rc;
}

int attach_server_wait_attached(struct attach_server *s, volatile sig_atomic_t *stop)
{
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	while (!s->attached && !*stop) {
		struct timespec ts;

		/* Signals do not wake a condition variable: look at *stop every 50 ms. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&s->cond, &s->lock, &ts);
	}
	if (!s->attached)
		rc = -EINTR;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void attach_server_finish(struct attach_server *s, const char *reason)
{
	uint64_t one = 1;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->finishing = true;
	snprintf(s->final_reason, sizeof(s->final_reason), "%s", reason);
	if (s->session_active) {
		struct timespec ts;
		int rc = 0;

		if (write(s->stop_fd, &one, sizeof(one)) < 0)
			perror("hvmtrace-vmm: eventfd");
		/* A tracer that stops reading must not keep the VMM from exiting. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += FINISH_TIMEOUT_S;
		while (s->session_active && rc != ETIMEDOUT)
			rc = pthread_cond_timedwait(&s->cond, &s->lock, &ts);
		if (s->session_active) {
			pthread_mutex_unlock(&s->lock);
			fprintf(stderr,
				"hvmtrace-vmm: the tracer did not take its final harvest within %d s\n",
				FINISH_TIMEOUT_S);
			unlink(s->path);
			return; /* the process exits next; the session thread still uses s */
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (write(s->wake_fd, &one, sizeof(one)) < 0)
		perror("hvmtrace-vmm: eventfd");
	pthread_join(s->accept_thread, NULL);
	if (s->session_joinable)
		pthread_join(s->session_thread, NULL);
	close(s->listen_fd);
	unlink(s->path);
	close(s->wake_fd);
	close(s->stop_fd);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
