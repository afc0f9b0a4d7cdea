/* SPDX-License-Identifier: MIT */
/*
 * record --metrics: the run's figures as Prometheus metrics over HTTP (docs/metrics.md). The harvest thread
 * adds each interval (metrics_add, a short critical section); a separate server thread answers scrapes from
 * a copy, so scrapes never wait for a harvest nor delay one.
 */
#ifndef HVT_LIVE_METRICS_H
#define HVT_LIVE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hvt_err;
struct hvt_interval;
struct hvt_layout;
struct hvt_meta_channels;

struct metrics;

/* What stays fixed for the run, from the trace's metadata (channels: ids and sockets, in interval order). */
struct metrics_run {
	const char *vm, *vmm, *mode;
	uint64_t interval_ns;
	uint32_t page_size;
	bool accessed_available;
	const struct hvt_meta_channels *channels; /* may be empty */
};

/*
 * Parses "PORT", "ADDR:PORT" or "[ADDR6]:PORT" (numeric addresses; 127.0.0.1 when none is given), binds and
 * listens (port 0: any free one), and starts the server thread. The address actually bound is written to
 * url ("http://127.0.0.1:9464/metrics").
 */
struct metrics *metrics_start(const char *spec, const struct metrics_run *run, char *url, size_t urllen,
			      struct hvt_err *err);

/* Checks a --metrics value without binding: 0, or -EINVAL with the reason. */
int metrics_check_spec(const char *spec, struct hvt_err *err);

/* Adds one recorded interval; trace_bytes is the trace file's size after it. */
void metrics_add(struct metrics *m, const struct hvt_interval *iv, const struct hvt_layout *l,
		 uint64_t trace_bytes);

/* The run has ended: the figures are final, and scrapes say so to metrics_linger. */
void metrics_finish(struct metrics *m);

enum metrics_linger_end {
	METRICS_SCRAPED,  /* an answer with the final figures was sent whole */
	METRICS_LINGERED, /* linger_ns passed without one */
	METRICS_STOPPED,  /* stop_fd became readable (a signal, through record's signalfd) */
};

/* After metrics_finish: keeps serving until the final figures have been scraped once, linger_ns passes, or
 * stop_fd is readable (-1: none), so a scraper gets the last intervals of a run that ended between scrapes.
 */
enum metrics_linger_end metrics_linger(struct metrics *m, uint64_t linger_ns, int stop_fd);

/* Stops the server thread and frees everything. NULL is fine. */
void metrics_stop(struct metrics *m);

#endif
