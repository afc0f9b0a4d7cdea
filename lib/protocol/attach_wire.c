// SPDX-License-Identifier: MIT
/*
 * The attach protocol's transport: frames (u32 LE length + JSON) over an AF_UNIX stream socket, file
 * descriptors with SCM_RIGHTS on the sendmsg that carries a frame's first byte, peer credentials, and the
 * listening and connecting sockets.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "attach_json.h"
#include "hvmtrace/attach.h"
#include "hvmtrace/error.h"
#include "hvmtrace/util.h"

/* ---- sending ---- */

/* Waits until sock can take more bytes (only a non-blocking socket ever needs this). */
static int wait_writable(int sock)
{
	struct pollfd p = {.fd = sock, .events = POLLOUT};

	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int hvt_msg_send(int sock, const struct hvt_msg *m, struct hvt_err *err)
{
	const char *type = hvt_msg_type_name(m->type);
	union {
		char buf[CMSG_SPACE(sizeof(int) * HVT_ATTACH_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	struct json_object *o;
	uint8_t hdr[4];
	struct iovec iov[2];
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};
	const char *text;
	size_t len;
	int rc;

	if (m->nfds < 0 || m->nfds > HVT_ATTACH_MAX_FDS)
		return hvt_err_set(err, -EINVAL, "%s message: %d file descriptors (at most %d)", type,
				   m->nfds, HVT_ATTACH_MAX_FDS);
	if (hvt_attach_check_nfds(m, m->nfds, err))
		return hvt_err_prefix(err, -EINVAL, "refusing to send: ");
	o = hvt_attach_msg_to_json(m, &rc, err);
	if (!o)
		return rc;
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	len = strlen(text);
	if (len > HVT_ATTACH_MAX_FRAME) {
		json_object_put(o);
		return hvt_err_set(err, -EMSGSIZE, "%s message: %zu bytes of JSON (a frame holds at most %u)",
				   type, len, HVT_ATTACH_MAX_FRAME);
	}
	for (int i = 0; i < 4; i++)
		hdr[i] = (uint8_t)(len >> (8 * i));
	iov[0] = (struct iovec){hdr, 4};
	iov[1] = (struct iovec){(void *)text, len};
	if (m->nfds > 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)m->nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)m->nfds);
		memcpy(CMSG_DATA(c), m->fds, sizeof(int) * (size_t)m->nfds);
	}

	rc = 0;
	while (mh.msg_iovlen > 0) {
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				if ((rc = wait_writable(sock)))
					break;
				continue;
			}
			rc = (errno == EPIPE || errno == ECONNRESET) ? -EPIPE : -errno;
			break;
		}
		/* The fds went with the first byte; a partial send continues without them. */
		mh.msg_control = NULL;
		mh.msg_controllen = 0;
		while (mh.msg_iovlen > 0 && (size_t)n >= mh.msg_iov[0].iov_len) {
			n -= (ssize_t)mh.msg_iov[0].iov_len;
			mh.msg_iov++;
			mh.msg_iovlen--;
		}
		if (mh.msg_iovlen > 0) {
			mh.msg_iov[0].iov_base = (char *)mh.msg_iov[0].iov_base + n;
			mh.msg_iov[0].iov_len -= (size_t)n;
		}
	}
	json_object_put(o);
	if (rc == -EPIPE)
		return hvt_err_set(err, rc, "sending %s message: the peer closed the connection", type);
	if (rc)
		return hvt_err_set(err, rc, "sending %s message: %s", type, strerror(-rc));
	return 0;
}

/* ---- receiving ---- */

/* The descriptors received so far for one frame; all closed if the frame fails. */
struct fdbag {
	int n;
	int fds[HVT_ATTACH_MAX_FDS];
	bool overflow; /* more than HVT_ATTACH_MAX_FDS, or the kernel cut the control data */
};

static void fdbag_close(struct fdbag *b)
{
	for (int i = 0; i < b->n; i++)
		close(b->fds[i]);
	b->n = 0;
}

static void fdbag_take(struct fdbag *b, struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (b->n < HVT_ATTACH_MAX_FDS) {
				b->fds[b->n++] = fd;
			} else {
				close(fd);
				b->overflow = true;
			}
		}
	}
	if (mh->msg_flags & MSG_CTRUNC)
		b->overflow = true;
}

struct reader {
	int sock;
	uint64_t deadline_ns;    /* for a frame's first byte; 0: wait forever */
	uint64_t frame_start_ns; /* when its first byte arrived */
	uint64_t last_piece_ns;  /* when its latest piece arrived */
	size_t frame_bytes;      /* of the current frame, read so far */
	struct fdbag fds;
};

/* A frame once begun is read whole across pauses, within the protocol's bounds (a peer that stalls
 * mid-frame must not hang us); the caller's deadline only bounds the wait for its first byte. */
static uint64_t reader_deadline(const struct reader *r)
{
	uint64_t pause, whole;

	if (!r->frame_bytes)
		return r->deadline_ns;
	pause = r->last_piece_ns + HVT_ATTACH_FRAME_PAUSE_MS * 1000000ull;
	whole = r->frame_start_ns + HVT_ATTACH_FRAME_MS * 1000000ull;
	return pause < whole ? pause : whole;
}

/* Reads exactly len bytes of the current frame. */
static int read_exact(struct reader *r, void *buf, size_t len)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * HVT_ATTACH_MAX_FDS)];
		struct cmsghdr align;
	} ctl;
	size_t got = 0;

	while (got < len) {
		struct pollfd p = {.fd = r->sock, .events = POLLIN};
		uint64_t deadline = reader_deadline(r);
		int timeout = -1;

		if (deadline) {
			uint64_t now = hvt_now_ns();

			/* Past the deadline, still take what has already arrived (timeout 0 = poll once). */
			timeout = now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
		}
		int pr = poll(&p, 1, timeout);
		if (pr < 0) {
			/* A signal is reported only while no byte of a frame has been consumed. */
			if (errno == EINTR && r->frame_bytes == 0)
				return -EINTR;
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pr == 0) {
			if (deadline && hvt_now_ns() >= deadline)
				return r->frame_bytes ? -ETIME : -ETIMEDOUT;
			continue;
		}

		struct iovec iov = {(char *)buf + got, len - got};
		struct msghdr mh = {.msg_iov = &iov,
				    .msg_iovlen = 1,
				    .msg_control = ctl.buf,
				    .msg_controllen = sizeof(ctl.buf)};
		ssize_t n = recvmsg(r->sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			if (errno == ECONNRESET)
				return r->frame_bytes ? -ECONNRESET : -EPIPE;
			return -errno;
		}
		fdbag_take(&r->fds, &mh);
		if (n == 0)
			return r->frame_bytes ? -ECONNRESET : -EPIPE;
		r->last_piece_ns = hvt_now_ns();
		if (!r->frame_bytes)
			r->frame_start_ns = r->last_piece_ns;
		got += (size_t)n;
		r->frame_bytes += (size_t)n;
	}
	return 0;
}

/* Whether text is the JSON literal null, with only whitespace around it. */
static bool is_json_null(const char *text, size_t len)
{
	size_t i = 0;

	while (i < len && strchr(" \t\r\n", text[i]) && text[i])
		i++;
	if (len - i < 4 || memcmp(text + i, "null", 4))
		return false;
	for (i += 4; i < len && text[i] && strchr(" \t\r\n", text[i]);)
		i++;
	return i == len;
}

/* Parses the whole payload as one strict UTF-8 JSON value, nothing but whitespace after it. */
static struct json_object *parse_frame(const char *text, size_t len, struct hvt_err *err)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;
	size_t end;

	if (!tok) {
		hvt_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, text, (int)len);
	end = json_tokener_get_parse_end(tok);
	if (!o && json_tokener_get_error(tok) == json_tokener_continue) {
		/* A bare number may go on; a terminating NUL tells the tokener the input is complete. */
		o = json_tokener_parse_ex(tok, "", 1);
		end = len;
	}
	if (!o && json_tokener_get_error(tok) == json_tokener_success) {
		/* JSON null parses to NULL with no error; so does a value json-c ran out of memory for. */
		json_tokener_free(tok);
		if (is_json_null(text, len))
			hvt_err_set(err, -EPROTO, "frame holds JSON null, not an object");
		else
			hvt_err_set(err, -ENOMEM, "out of memory for a frame of %zu bytes", len);
		return NULL;
	}
	if (!o) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		hvt_err_set(err, -EPROTO, "frame of %zu bytes is not JSON: %s", len,
			    e == json_tokener_continue ? "unexpected end of data"
						       : json_tokener_error_desc(e));
		json_tokener_free(tok);
		return NULL;
	}
	json_tokener_free(tok);
	while (end < len && (text[end] == ' ' || text[end] == '\n' || text[end] == '\r' || text[end] == '\t'))
		end++;
	if (end != len) {
		json_object_put(o);
		hvt_err_set(err, -EPROTO, "frame of %zu bytes has data after its JSON value (at byte %zu)",
			    len, end);
		return NULL;
	}
	return o;
}

static int recv_frame(struct reader *r, struct hvt_msg *m, struct hvt_err *err)
{
	uint8_t hdr[4];
	uint32_t len;
	char *text;
	struct json_object *o;
	int rc;

	rc = read_exact(r, hdr, 4);
	if (rc)
		return rc;
	len = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;
	if (len == 0 || len > HVT_ATTACH_MAX_FRAME)
		return hvt_err_set(err, -EPROTO, "bad frame length %u (1 to %u allowed)", len,
				   HVT_ATTACH_MAX_FRAME);
	text = malloc(len);
	if (!text)
		return hvt_err_set(err, -ENOMEM, "out of memory for a frame of %u bytes", len);
	rc = read_exact(r, text, len);
	if (rc) {
		free(text);
		return rc;
	}
	o = parse_frame(text, len, err);
	free(text);
	if (!o)
		return -EPROTO;
	rc = hvt_attach_msg_from_json(m, o, err);
	json_object_put(o);
	if (rc)
		return rc;
	if (r->fds.overflow)
		rc = hvt_err_set(err, -EPROTO, "%s message carries more than %d file descriptors",
				 hvt_msg_type_name(m->type), HVT_ATTACH_MAX_FDS);
	else
		rc = hvt_attach_check_nfds(m, r->fds.n, err);
	if (rc) {
		hvt_msg_fini(m);
		return rc;
	}
	m->nfds = r->fds.n;
	memcpy(m->fds, r->fds.fds, sizeof(m->fds[0]) * (size_t)r->fds.n);
	for (int i = r->fds.n; i < HVT_ATTACH_MAX_FDS; i++)
		m->fds[i] = -1;
	r->fds.n = 0; /* now owned by m */
	return 0;
}

int hvt_msg_recv(int sock, struct hvt_msg *m, int timeout_ms, struct hvt_err *err)
{
	struct reader r = {.sock = sock};
	int rc;

	memset(m, 0, sizeof(*m));
	if (timeout_ms >= 0)
		r.deadline_ns = hvt_now_ns() + (uint64_t)timeout_ms * 1000000 + 1;
	rc = recv_frame(&r, m, err);
	fdbag_close(&r.fds);
	if (rc) {
		memset(m, 0, sizeof(*m));
		switch (rc) {
		case -EPIPE:
			return hvt_err_set(err, rc, "the peer closed the connection");
		case -ECONNRESET:
			return hvt_err_set(
			    err, rc,
			    "the peer closed the connection in the middle of a frame (%zu bytes read)",
			    r.frame_bytes);
		case -ETIMEDOUT:
			return hvt_err_set(err, rc, "no complete message within %d ms", timeout_ms);
		case -ETIME:
			return hvt_err_set(
			    err, -EPROTO,
			    "the peer stalled in the middle of a frame (%zu bytes read; a frame must follow its first byte within %d ms, with pauses under %d ms)",
			    r.frame_bytes, HVT_ATTACH_FRAME_MS, HVT_ATTACH_FRAME_PAUSE_MS);
		case -EINTR:
			return hvt_err_set(err, rc, "interrupted by a signal");
		case -EPROTO:
		case -ENOMEM:
			return rc; /* the message is already set */
		default:
			return hvt_err_set(err, rc, "receiving a message: %s", strerror(-rc));
		}
	}
	return 0;
}

/* ---- sockets ---- */

int hvt_attach_check_peer(int sock, pid_t *pid, uid_t *uid, struct hvt_err *err)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return hvt_err_set(err, -errno, "reading the peer's credentials: %s", strerror(errno));
	if (pid)
		*pid = cred.pid;
	if (uid)
		*uid = cred.uid;
	if (cred.uid != 0 && cred.uid != geteuid())
		return hvt_err_set(err, -EACCES,
				   "peer pid %d runs as uid %u, which is neither root nor our uid %u",
				   (int)cred.pid, (unsigned)cred.uid, (unsigned)geteuid());
	return 0;
}

static int fill_addr(struct sockaddr_un *a, const char *path, struct hvt_err *err)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (!path || !*path)
		return hvt_err_set(err, -EINVAL, "empty socket path");
	if (strlen(path) >= sizeof(a->sun_path))
		return hvt_err_set(err, -ENAMETOOLONG, "socket path %s is longer than %zu bytes", path,
				   sizeof(a->sun_path) - 1);
	memcpy(a->sun_path, path, strlen(path) + 1);
	return 0;
}

int hvt_attach_connect(const char *path, struct hvt_err *err)
{
	struct sockaddr_un a;
	int fd, rc;

	if ((rc = fill_addr(&a, path, err)))
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hvt_err_set(err, -errno, "socket: %s", strerror(errno));
	while (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (errno == EINTR)
			continue;
		rc = -errno;
		close(fd);
		return hvt_err_set(err, rc, "connecting to %s: %s", path, strerror(-rc));
	}
	return fd;
}

/* A socket file nobody listens on is left over from a VMM that died; one that answers is in use. */
static int remove_stale_socket(const char *path, const struct sockaddr_un *a, struct hvt_err *err)
{
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return hvt_err_set(err, -errno, "%s: %s", path, strerror(errno));
	}
	if (!S_ISSOCK(st.st_mode))
		return hvt_err_set(err, -EEXIST, "%s exists and is not a socket; refusing to replace it",
				   path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hvt_err_set(err, -errno, "socket: %s", strerror(errno));
	rc = connect(fd, (const struct sockaddr *)a, sizeof(*a));
	close(fd);
	if (rc == 0)
		return hvt_err_set(err, -EADDRINUSE, "%s is in use by another listening process", path);
	if (unlink(path) < 0 && errno != ENOENT)
		return hvt_err_set(err, -errno, "removing the stale socket %s: %s", path, strerror(errno));
	return 0;
}

/*
 * The socket is bound, listening and given its mode under a temporary name beside path, then renamed into
 * place: whoever finds path finds a socket that listens with its final mode (one bound at path itself was
 * there before listen(), and a peer that connected then was refused). A path too long for the temporary
 * name beside it is bound in place, listening before its mode is widened.
 */
int hvt_attach_listen(const char *path, struct hvt_err *err)
{
	struct sockaddr_un a, b;
	char staged[sizeof(a.sun_path)];
	const char *bound = path;
	struct stat st;
	mode_t old_mask;
	int fd, rc;

	if ((rc = fill_addr(&a, path, err)) || (rc = remove_stale_socket(path, &a, err)))
		return rc;
	if ((size_t)snprintf(staged, sizeof(staged), "%s.%ld~", path, (long)getpid()) < sizeof(staged)) {
		bound = staged;
		unlink(staged); /* left by a killed process of the same pid */
	}
	fill_addr(&b, bound, err);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return hvt_err_set(err, -errno, "socket: %s", strerror(errno));
	/* The umask closes the window between bind() and chmod() in which others could connect. */
	old_mask = umask(0177);
	rc = bind(fd, (struct sockaddr *)&b, sizeof(b));
	umask(old_mask);
	if (rc < 0) {
		rc = -errno;
		close(fd);
		return hvt_err_set(err, rc, "binding %s: %s", bound, strerror(-rc));
	}
	if (listen(fd, 8) < 0 || chmod(bound, HVT_ATTACH_SOCKET_MODE) < 0 || lstat(bound, &st) < 0) {
		rc = -errno;
		goto fail;
	}
	if (!S_ISSOCK(st.st_mode) || (st.st_mode & 07777) != HVT_ATTACH_SOCKET_MODE) {
		rc = hvt_err_set(err, -EPERM, "%s has mode %04o after chmod, not %04o", bound,
				 (unsigned)(st.st_mode & 07777), HVT_ATTACH_SOCKET_MODE);
		unlink(bound);
		close(fd);
		return rc;
	}
	if (bound != path && renameat2(AT_FDCWD, bound, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
		/* EINVAL: a file system without RENAME_NOREPLACE */
		rc = errno == EINVAL && rename(bound, path) == 0 ? 0 : -errno;
		if (rc == -EEXIST) {
			unlink(bound);
			close(fd);
			return hvt_err_set(err, -EADDRINUSE, "%s appeared while this socket was set up",
					   path);
		}
		if (rc)
			goto fail;
	}
	return fd;
fail:
	unlink(bound);
	close(fd);
	return hvt_err_set(err, rc, "setting up %s: %s", path, strerror(-rc));
}
