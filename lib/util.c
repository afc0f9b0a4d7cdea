// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvmtrace/util.h"

uint64_t hvt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * HVT_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

int64_t hvt_wall_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * (int64_t)HVT_NSEC_PER_SEC + ts.tv_nsec;
}

/* Reads "<decimal><suffix>" where the suffix must be one of the table's; the scale of "" is given. */
static int parse_scaled(const char *s, const char *const *suffixes, const double *scales, size_t n,
			double empty_scale, double *out)
{
	char *end;
	double v, scale = -1;

	if (!s || !*s || isspace((unsigned char)*s) || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v <= 0)
		return -EINVAL;
	if (!*end) {
		scale = empty_scale;
	} else {
		for (size_t i = 0; i < n; i++)
			if (!strcmp(end, suffixes[i]))
				scale = scales[i];
	}
	if (scale < 0)
		return -EINVAL;
	*out = v * scale;
	return 0;
}

int hvt_parse_duration(const char *s, uint64_t *ns)
{
	static const char *const suffixes[] = {"ns", "us", "ms", "s", "m", "h"};
	static const double scales[] = {1, 1e3, 1e6, 1e9, 60e9, 3600e9};
	double v;

	if (parse_scaled(s, suffixes, scales, 6, 1e9, &v) || v < 1 || v > 1e18)
		return -EINVAL;
	*ns = (uint64_t)llround(v);
	return 0;
}

int hvt_parse_size(const char *s, uint64_t *bytes)
{
	static const char *const suffixes[] = {"K", "M", "G", "T", "KiB", "MiB", "GiB", "TiB"};
	static const double scales[] = {0x1p10, 0x1p20, 0x1p30, 0x1p40, 0x1p10, 0x1p20, 0x1p30, 0x1p40};
	double v;

	if (parse_scaled(s, suffixes, scales, 8, 1, &v) || v >= 0x1p63 || v != floor(v))
		return -EINVAL;
	*bytes = (uint64_t)v;
	return 0;
}

void hvt_format_duration(uint64_t ns, char *buf, unsigned len)
{
	if (ns % HVT_NSEC_PER_SEC == 0)
		snprintf(buf, len, "%llus", (unsigned long long)(ns / HVT_NSEC_PER_SEC));
	else if (ns % 1000000 == 0)
		snprintf(buf, len, "%llums", (unsigned long long)(ns / 1000000));
	else if (ns % 1000 == 0)
		snprintf(buf, len, "%lluus", (unsigned long long)(ns / 1000));
	else
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
}
