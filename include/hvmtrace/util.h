/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the programs: clocks, durations and sizes with suffixes. */
#ifndef HVMTRACE_UTIL_H
#define HVMTRACE_UTIL_H

#include <stdint.h>

#define HVT_NSEC_PER_SEC 1000000000ull

uint64_t hvt_now_ns(void);     /* CLOCK_MONOTONIC */
int64_t hvt_wall_now_ns(void); /* CLOCK_REALTIME */

/*
 * Parses a duration: a decimal number with a suffix ns, us, ms, s, m or h; a bare number is seconds.
 * "10ms", "1s", "1.5s", "5m". Returns 0 or -EINVAL (zero, negative, overflow or junk are refused).
 */
int hvt_parse_duration(const char *s, uint64_t *ns);

/* Parses a size in bytes with an optional binary suffix K, M, G, T ("512M", "1G"); -EINVAL on junk. */
int hvt_parse_size(const char *s, uint64_t *bytes);

/* Formats a duration the way hvt_parse_duration reads it back ("10ms", "1s", "2.5s"). */
void hvt_format_duration(uint64_t ns, char *buf, unsigned len);

#endif
