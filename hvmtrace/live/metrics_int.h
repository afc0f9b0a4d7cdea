/* SPDX-License-Identifier: MIT */
/* Between metrics.c (the figures and their text) and metrics_http.c (the server that serves them). */
#ifndef HVT_LIVE_METRICS_INT_H
#define HVT_LIVE_METRICS_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <sys/socket.h>

struct metrics;
struct MHD_Daemon;
struct hvt_err;

/* A --metrics value as a socket address (metrics_http.c). */
int metrics_parse_spec(const char *spec, struct sockaddr_storage *ss, socklen_t *sslen, struct hvt_err *err);

/* The exposition text: OpenMetrics 1.0 when openmetrics, else Prometheus text 0.0.4. malloc'd; NULL when
 * out of memory. */
char *metrics_render(struct metrics *m, bool openmetrics, size_t *len);

/* The server of metrics_http.c, kept in struct metrics. */
struct MHD_Daemon *metrics_http_start(const char *spec, struct metrics *m, char *url, size_t urllen,
				      struct hvt_err *err);
void metrics_http_stop(struct MHD_Daemon *d);

#endif
