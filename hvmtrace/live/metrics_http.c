// SPDX-License-Identifier: MIT
/*
 * The metrics endpoint: libmicrohttpd on its own thread, on a socket bound here (loopback unless told), that
 * answers GET /metrics and refuses everything else. Each scrape renders from a copy of the figures, so the
 * harvest thread only ever waits for that copy.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <sched.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "metrics_http.h"

#define METRICS_PATH "/metrics"
/* The text formats, as Prometheus negotiates them (its Accept header lists OpenMetrics first). */
#define CT_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define CT_TEXT        "text/plain; version=0.0.4; charset=utf-8"

struct metrics_http {
	struct MHD_Daemon *d;
	metrics_render_fn *render;
	metrics_delivered_fn *delivered;
	void *ctx;
};

/* One request, from its headers to its end (MHD's per-request context). */
struct request {
	bool final; /* its answer holds the final figures */
};

/* "PORT", "ADDR:PORT" or "[ADDR6]:PORT", numeric, into a socket address; 127.0.0.1 when no address. */
int metrics_parse_spec(const char *spec, struct sockaddr_storage *ss, socklen_t *sslen, struct hvt_err *err)
{
	char host[64] = "127.0.0.1", *end;
	const char *port = spec, *colon = strrchr(spec, ':');
	long p;

	memset(ss, 0, sizeof(*ss));
	if (colon) {
		size_t n = (size_t)(colon - spec);

		if (n && spec[0] == '[' && spec[n - 1] == ']') {
			spec++;
			n -= 2;
		}
		if (!n || n >= sizeof(host))
			return hvt_err_set(err, -EINVAL,
					   "--metrics %s: expected PORT, ADDR:PORT or [ADDR6]:PORT", spec);
		memcpy(host, spec, n);
		host[n] = 0;
		port = colon + 1;
	}
	errno = 0;
	p = strtol(port, &end, 10);
	if (errno || end == port || *end || p < 0 || p > 65535)
		return hvt_err_set(err, -EINVAL, "--metrics: '%s' is not a port number (0-65535)", port);
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)p);
		*sslen = sizeof(*v4);
	} else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)p);
		*sslen = sizeof(*v6);
	} else {
		return hvt_err_set(err, -EINVAL, "--metrics: '%s' is not a numeric IPv4 or IPv6 address",
				   host);
	}
	return 0;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *ctype, char *body,
			      size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
	enum MHD_Result ok;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET");
	ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result serve(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			     const char *version, const char *upload, size_t *upload_size, void **ctx)
{
	const struct metrics_http *h = cls;
	static const char not_allowed[] = "only GET " METRICS_PATH "\n",
			  not_found[] = "not found: try " METRICS_PATH "\n";

	static _Thread_local bool idle;

	(void)version, (void)upload;
	if (!idle) {
		/* This thread runs on the tracer's CPU: it gets only what the harvest leaves (SCHED_IDLE
		 * needs no privilege), so a scrape storm cannot delay a harvest. */
		pthread_setschedparam(pthread_self(), SCHED_IDLE, &(struct sched_param){0});
		idle = true;
	}
	if (!*ctx) { /* the headers only: wait for the end of the request before answering */
		*ctx = calloc(1, sizeof(struct request));
		return *ctx ? MHD_YES : MHD_NO;
	}
	if (*upload_size) { /* a body: GET has none; drop it and refuse below */
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_GET))
		return answer(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", (char *)not_allowed,
			      sizeof(not_allowed) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, METRICS_PATH))
		return answer(c, MHD_HTTP_NOT_FOUND, "text/plain", (char *)not_found, sizeof(not_found) - 1,
			      MHD_RESPMEM_PERSISTENT);
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	bool om = accept && strstr(accept, "application/openmetrics-text");
	struct request *req = *ctx;
	size_t len;
	char *text = h->render(h->ctx, om, &len, &req->final);
	if (!text)
		return MHD_NO;
	return answer(c, MHD_HTTP_OK, om ? CT_OPENMETRICS : CT_TEXT, text, len, MHD_RESPMEM_MUST_FREE);
}

/* A request ended: the final figures count as scraped only once their answer was sent whole. */
static void completed(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_RequestTerminationCode toe)
{
	const struct metrics_http *h = cls;
	struct request *req = *ctx;

	(void)c;
	if (req && req->final && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		h->delivered(h->ctx);
	free(req);
	*ctx = NULL;
}

/* The listening socket for spec, its URL written to url; -1 with err set. */
static int listen_at(const char *spec, char *url, size_t urllen, struct hvt_err *err)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	char host[INET6_ADDRSTRLEN];
	int one = 1, fd;

	if (metrics_parse_spec(spec, &ss, &sslen, err))
		return -1;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		hvt_err_set(err, -errno, "--metrics %s: socket: %s", spec, strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sslen) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)&ss, &sslen)) {
		hvt_err_set(err, -errno, "--metrics %s: cannot listen there: %s", spec, strerror(errno));
		close(fd);
		return -1;
	}
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &v4->sin_addr, host, sizeof(host));
		snprintf(url, urllen, "http://%s:%u%s", host, ntohs(v4->sin_port), METRICS_PATH);
	} else {
		struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
		snprintf(url, urllen, "http://[%s]:%u%s", host, ntohs(v6->sin6_port), METRICS_PATH);
	}
	return fd;
}

struct metrics_http *metrics_http_start(const char *spec, metrics_render_fn *render,
					metrics_delivered_fn *delivered, void *ctx, char *url, size_t urllen,
					struct hvt_err *err)
{
	struct metrics_http *h = calloc(1, sizeof(*h));
	int fd;

	if (!h) {
		hvt_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	*h = (struct metrics_http){.render = render, .delivered = delivered, .ctx = ctx};
	fd = listen_at(spec, url, urllen, err);
	if (fd < 0) {
		free(h);
		return NULL;
	}
	/* One thread, a few connections, short timeouts: a scrape storm costs this thread, not the harvest.
	 */
	h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG, 0, NULL,
				NULL, serve, h, MHD_OPTION_NOTIFY_COMPLETED, completed, h,
				MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, 32u,
				MHD_OPTION_CONNECTION_TIMEOUT, 5u, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				(size_t)16384, MHD_OPTION_THREAD_STACK_SIZE, (size_t)(256 * 1024),
				MHD_OPTION_END);
	if (!h->d) {
		hvt_err_set(err, -EIO, "--metrics %s: libmicrohttpd would not start its server", spec);
		close(fd);
		free(h);
		return NULL;
	}
	return h;
}

void metrics_http_stop(struct metrics_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	free(h);
}
