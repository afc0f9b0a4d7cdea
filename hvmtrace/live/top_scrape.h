/* SPDX-License-Identifier: MIT */
/* hvmtrace top's reading of one recorder's metrics endpoint (hvmtrace/live/metrics.c writes what it reads).
 */
#ifndef HVT_LIVE_TOP_SCRAPE_H
#define HVT_LIVE_TOP_SCRAPE_H

#include <stdbool.h>
#include <stdint.h>

#define TOP_MAX_CHANNELS 16

struct top_figures {
	char vm[64], mode[16];
	double interval_s;
	double intervals, covered_s, missed, written, accessed, cpu_s; /* counters */
	double written_wss, accessed_wss;                              /* gauges, bytes */
	bool accessed_available;
	unsigned nch;
	struct {
		char id[32];
		double rd, wr; /* bytes, counters */
	} ch[TOP_MAX_CHANNELS];
};

/* GETs url ("http://127.0.0.1:9464/metrics" or "127.0.0.1:9464"; numeric addresses) within timeout_ms and
 * reads the figures; 0, or -1 with a reason in why. */
int top_scrape(const char *url, int timeout_ms, struct top_figures *f, char *why, unsigned whylen);

#endif
