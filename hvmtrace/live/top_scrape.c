// SPDX-License-Identifier: MIT
/*
 * One scrape of a recorder's endpoint for hvmtrace top: an HTTP/1.0 GET over a socket to a numeric address
 * (the only kind record --metrics binds), and the Prometheus text format's sample lines it needs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hvmtrace/util.h"
#include "top_scrape.h"

#define MAX_BODY (1 << 20)

static int split_url(const char *url, char *host, size_t hlen, unsigned *port)
{
	const char *p = strncmp(url, "http://", 7) ? url : url + 7, *colon, *end;

	if (*p == '[') {
		end = strchr(p, ']');
		if (!end || end[1] != ':')
			return -1;
		snprintf(host, hlen, "%.*s", (int)(end - p - 1), p + 1);
		colon = end + 1;
	} else {
		colon = strchr(p, ':');
		if (!colon)
			return -1;
		snprintf(host, hlen, "%.*s", (int)(colon - p), p);
	}
	return sscanf(colon + 1, "%u", port) == 1 && *port < 65536 ? 0 : -1;
}

/* Waits for fd to be ready for events until deadline; false on timeout or error. */
static bool ready(int fd, short events, uint64_t deadline)
{
	uint64_t now = hvt_now_ns();
	struct pollfd p = {.fd = fd, .events = events};

	return now < deadline && poll(&p, 1, (int)((deadline - now) / 1000000) + 1) == 1;
}

static char *fetch(const char *url, int timeout_ms, char *why, unsigned whylen)
{
	uint64_t deadline = hvt_now_ns() + (uint64_t)timeout_ms * 1000000;
	struct sockaddr_storage ss = {0};
	socklen_t sslen;
	char host[64], req[160];
	unsigned port;
	size_t len = 0;
	char *buf;
	int fd;

	if (split_url(url, host, sizeof(host), &port)) {
		snprintf(why, whylen, "not an http://ADDR:PORT/metrics address");
		return NULL;
	}
	struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
		sslen = sizeof(*v4);
	} else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		sslen = sizeof(*v6);
	} else {
		snprintf(why, whylen, "%s is not a numeric address", host);
		return NULL;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int soerr = ETIMEDOUT;
	socklen_t elen = sizeof(soerr);
	if (fd < 0 || (connect(fd, (struct sockaddr *)&ss, sslen) && errno != EINPROGRESS))
		soerr = errno;
	else if (ready(fd, POLLOUT, deadline) && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &elen))
		soerr = errno;
	if (soerr) {
		snprintf(why, whylen, "cannot connect: %s", strerror(soerr));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	int n = snprintf(req, sizeof(req), "GET /metrics HTTP/1.0\r\nHost: %s:%u\r\n\r\n", host, port);
	if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n || !(buf = malloc(MAX_BODY + 1))) {
		snprintf(why, whylen, "cannot send the request");
		close(fd);
		return NULL;
	}
	while (len < MAX_BODY && ready(fd, POLLIN, deadline)) {
		ssize_t got = read(fd, buf + len, MAX_BODY - len);
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	buf[len] = 0;
	char *body = strstr(buf, "\r\n\r\n");
	if (strncmp(buf, "HTTP/1.", 7) || strncmp(buf + 8, " 200", 4) || !body) {
		snprintf(why, whylen, "no metrics there (%.40s)", len ? buf : "no answer");
		free(buf);
		return NULL;
	}
	memmove(buf, body + 4, len - (size_t)(body + 4 - buf) + 1);
	return buf;
}

/* The value of label `name` in a {…} label list, unescaped enough for ids and names. */
static void label(const char *labels, const char *name, char *out, size_t len)
{
	char key[40];
	const char *p;

	snprintf(key, sizeof(key), "%s=\"", name);
	out[0] = 0;
	p = strstr(labels, key);
	if (!p)
		return;
	p += strlen(key);
	size_t o = 0;
	for (; *p && *p != '"' && o + 1 < len; p++) {
		if (*p == '\\' && p[1])
			p++;
		out[o++] = *p;
	}
	out[o] = 0;
}

int top_scrape(const char *url, int timeout_ms, struct top_figures *f, char *why, unsigned whylen)
{
	char *text = fetch(url, timeout_ms, why, whylen), *save = NULL;

	if (!text)
		return -1;
	memset(f, 0, sizeof(*f));
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[96], labels[512] = "";
		double v;

		if (line[0] == '#')
			continue;
		size_t n = strcspn(line, "{ ");
		if (n >= sizeof(name))
			continue;
		memcpy(name, line, n);
		name[n] = 0;
		const char *rest = line + n;
		if (*rest == '{') {
			const char *close = strstr(rest, "} ");
			if (!close || (size_t)(close - rest) >= sizeof(labels))
				continue;
			memcpy(labels, rest, (size_t)(close - rest + 1));
			labels[close - rest + 1] = 0;
			rest = close + 1;
		}
		if (sscanf(rest, " %lf", &v) != 1)
			continue;
		if (!strcmp(name, "hvmtrace_info")) {
			label(labels, "vm", f->vm, sizeof(f->vm));
			label(labels, "mode", f->mode, sizeof(f->mode));
		} else if (!strcmp(name, "hvmtrace_interval_seconds")) {
			f->interval_s = v;
		} else if (!strcmp(name, "hvmtrace_intervals_total")) {
			f->intervals = v;
		} else if (!strcmp(name, "hvmtrace_recorded_seconds_total")) {
			f->covered_s = v;
		} else if (!strcmp(name, "hvmtrace_missed_deadlines_total")) {
			f->missed = v;
		} else if (!strcmp(name, "hvmtrace_written_pages_total")) {
			f->written = v;
		} else if (!strcmp(name, "hvmtrace_accessed_pages_total")) {
			f->accessed = v;
			f->accessed_available = true;
		} else if (!strcmp(name, "hvmtrace_written_working_set_bytes")) {
			f->written_wss = v;
		} else if (!strcmp(name, "hvmtrace_accessed_working_set_bytes")) {
			f->accessed_wss = v;
		} else if (!strcmp(name, "hvmtrace_tracer_cpu_seconds_total")) {
			f->cpu_s = v;
		} else if (!strcmp(name, "hvmtrace_dram_read_bytes_total") ||
			   !strcmp(name, "hvmtrace_dram_write_bytes_total")) {
			char id[32];
			unsigned i;

			label(labels, "channel", id, sizeof(id));
			for (i = 0; i < f->nch && strcmp(f->ch[i].id, id); i++)
				;
			if (i == f->nch && f->nch < TOP_MAX_CHANNELS)
				snprintf(f->ch[f->nch++].id, sizeof(f->ch[0].id), "%s", id);
			if (i < f->nch)
				*(strstr(name, "read") ? &f->ch[i].rd : &f->ch[i].wr) = v;
		}
	}
	free(text);
	if (!f->vm[0] && !f->interval_s) {
		snprintf(why, whylen, "not an hvmtrace endpoint");
		return -1;
	}
	return 0;
}
