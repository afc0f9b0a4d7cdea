// SPDX-License-Identifier: MIT
/* The devmem helper: hands an unprivileged QEMU the fds of the memory and iomem it may map (devmem_helper.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "claims.h"
#include "devmem_helper.h"
#include "hvmtrace/attach.h"
#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/iomem.h"
#include "libvirt_domain.h"

#define REQUEST_MAX  65536
#define READ_TIMEOUT 5000 /* ms for the whole request, once connected */

int devmem_helper_listen(const struct hvt_lv_domain *d, const char *sock, struct hvt_err *e)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int s;

	if (strlen(sock) >= sizeof(a.sun_path))
		return hvt_err_set(e, -ENAMETOOLONG, "socket path %s is too long", sock);
	strcpy(a.sun_path, sock);
	unlink(sock);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) || chmod(sock, 0600) ||
	    (d->uid >= 0 && chown(sock, (uid_t)d->uid, (gid_t)d->gid)) || listen(s, 1)) {
		int rc = hvt_err_set(e, -errno, "devmem helper socket %s: %s", sock, strerror(errno));
		if (s >= 0)
			close(s);
		return rc;
	}
	return s;
}

/* Reads the request ("hvmtrace-devmem 1", "extent PHYS SIZE"…, "end") into extents. */
static int read_request(int c, struct hvt_range **x, size_t *n, struct hvt_err *e)
{
	char *buf = malloc(REQUEST_MAX + 1), *line, *save = NULL;
	size_t len = 0;
	int rc = 0;

	*x = NULL;
	*n = 0;
	if (!buf)
		return -ENOMEM;
	while (len < REQUEST_MAX && !(len >= 4 && strstr(buf, "\nend\n"))) {
		struct pollfd p = {.fd = c, .events = POLLIN};
		ssize_t r;

		if (poll(&p, 1, READ_TIMEOUT) <= 0) {
			rc = hvt_err_set(e, -ETIMEDOUT, "no complete request within %d s",
					 READ_TIMEOUT / 1000);
			goto out;
		}
		r = read(c, buf + len, REQUEST_MAX - len);
		if (r <= 0) {
			rc = hvt_err_set(e, -EPROTO, "the request ends early");
			goto out;
		}
		len += r;
		buf[len] = 0;
	}
	buf[len] = 0;
	line = strtok_r(buf, "\n", &save);
	if (!line || strcmp(line, "hvmtrace-devmem 1")) {
		rc = hvt_err_set(e, -EPROTO, "not a version 1 devmem request");
		goto out;
	}
	while ((line = strtok_r(NULL, "\n", &save)) && strcmp(line, "end")) {
		unsigned long long p, s;
		struct hvt_range *v;

		if (sscanf(line, "extent %llx %llx", &p, &s) != 2 ||
		    !(v = realloc(*x, (*n + 1) * sizeof(*v)))) {
			rc = hvt_err_set(e, -EPROTO, "bad request line '%.60s'", line);
			goto out;
		}
		*x = v;
		(*x)[(*n)++] = (struct hvt_range){p, s};
	}
out:
	free(buf);
	return rc;
}

static int send_reply(int c, const char *text, const int *fds, int nfds)
{
	char control[CMSG_SPACE(2 * sizeof(int))] = {0};
	struct iovec iov = {.iov_base = (void *)text, .iov_len = strlen(text)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};

	if (nfds) {
		struct cmsghdr *cm;

		m.msg_control = control;
		m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	return sendmsg(c, &m, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* The checks before any fd leaves this process: the peer, the extents it asks for, and the iomem. */
static int grant(const struct hvt_lv_domain *d, int c, int fds[2], struct hvt_err *e)
{
	struct hvt_range *want = NULL, *got = NULL;
	size_t nwant = 0, ngot = 0;
	struct hvt_iomem io;
	uid_t uid;
	int rc;

	rc = hvt_attach_check_peer(c, NULL, &uid, e);
	if (rc == -EACCES && d->uid >= 0 && uid == (uid_t)d->uid)
		rc = 0;
	else if (!rc && uid != 0 && d->uid >= 0 && uid != (uid_t)d->uid)
		rc = hvt_err_set(e, -EACCES, "peer uid %u is not the domain's QEMU user %ld", (unsigned)uid,
				 d->uid);
	if (rc)
		return rc;
	rc = hvt_lv_extents(d, &want, &nwant, e);
	if (!rc)
		rc = read_request(c, &got, &ngot, e);
	if (!rc && (ngot != nwant || (nwant && memcmp(got, want, nwant * sizeof(*want)))))
		rc = hvt_err_set(
		    e, -EPERM,
		    "QEMU asks for %zu extent(s) starting 0x%llx, the domain's <hvmtrace:ram> grants %zu "
		    "starting 0x%llx",
		    ngot, ngot ? (unsigned long long)got[0].start : 0ull, nwant,
		    nwant ? (unsigned long long)want[0].start : 0ull);
	if (!rc && !(rc = hvt_iomem_read(d->t.iomem, &io, e))) {
		for (size_t i = 0; i < nwant && !rc; i++)
			rc = hvt_iomem_check_extent(&io, want[i].start, want[i].size, e);
		hvt_iomem_free(&io);
	}
	/* Write-back mapping: no O_SYNC (docs/hardware-notes.md §7.3). */
	if (!rc && (fds[0] = open(d->t.mem_path, O_RDWR | O_CLOEXEC)) < 0)
		rc = hvt_err_set(e, -errno, "%s: %s", d->t.mem_path, strerror(errno));
	if (!rc && (fds[1] = open(d->t.iomem, O_RDONLY | O_CLOEXEC)) < 0)
		rc = hvt_err_set(e, -errno, "%s: %s", d->t.iomem, strerror(errno));
	free(want);
	free(got);
	return rc;
}

int devmem_helper_serve(const struct hvt_lv_domain *d, int lsock, int timeout_ms, struct hvt_err *e)
{
	struct pollfd p = {.fd = lsock, .events = POLLIN};
	int fds[2] = {-1, -1}, c, rc;
	char reply[600];

	if (poll(&p, 1, timeout_ms) <= 0)
		return hvt_err_set(e, -ETIMEDOUT, "no QEMU asked within %d s", timeout_ms / 1000);
	c = accept4(lsock, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return hvt_err_set(e, -errno, "accept: %s", strerror(errno));
	rc = grant(d, c, fds, e);
	/* From here the memory is QEMU's: it owns the claim, so that the claim is stale once it is gone. */
	if (!rc) {
		struct ucred cred;
		socklen_t clen = sizeof(cred);

		if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &clen))
			rc = hvt_err_set(e, -errno, "SO_PEERCRED: %s", strerror(errno));
		else
			rc = hvt_lv_claim_owner(d, cred.pid, e);
	}
	if (rc) {
		snprintf(reply, sizeof(reply), "error: %s\n", e->msg);
		send_reply(c, reply, NULL, 0);
	} else if ((rc = send_reply(c, "ok\n", fds, 2))) {
		hvt_err_set(e, rc, "sending the fds: %s", strerror(-rc));
	}
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close(c);
	return rc;
}
