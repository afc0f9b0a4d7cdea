/* SPDX-License-Identifier: MIT */
/*
 * The metrics endpoint (metrics_http.c): an HTTP server that answers GET /metrics with the text a render
 * callback gives it. It knows nothing of the figures: metrics.c hands it the callback.
 */
#ifndef HVT_LIVE_METRICS_HTTP_H
#define HVT_LIVE_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include <sys/socket.h>

struct hvt_err;
struct metrics_http;

/* The exposition text of one scrape: OpenMetrics 1.0 when openmetrics, else Prometheus text 0.0.4.
 * malloc'd (the server frees it); NULL when out of memory. *final: these are the run's final figures.
 * Called on the server's thread. */
typedef char *metrics_render_fn(void *ctx, bool openmetrics, size_t *len, bool *final);
/* An answer holding the final figures was sent whole (not merely queued). On the server's thread. */
typedef void metrics_delivered_fn(void *ctx);

/* A --metrics value, "PORT", "ADDR:PORT" or "[ADDR6]:PORT", as a socket address. */
int metrics_parse_spec(const char *spec, struct sockaddr_storage *ss, socklen_t *sslen, struct hvt_err *err);

/* Binds to spec, writes the URL bound to url, and serves render(ctx) on a thread of its own; delivered(ctx)
 * follows each answer of final figures sent whole. */
struct metrics_http *metrics_http_start(const char *spec, metrics_render_fn *render,
					metrics_delivered_fn *delivered, void *ctx, char *url, size_t urllen,
					struct hvt_err *err);
/* Stops the server. NULL is fine. */
void metrics_http_stop(struct metrics_http *h);

#endif
