// SPDX-License-Identifier: MIT
/*
 * How the probe makes its accesses reach DRAM (docs/hardware-notes.md §5.2): reads flush each line with
 * clflushopt (clflush where the CPU lacks it), fence, then load it — one CAS.RD per line; writes are
 * full-line non-temporal stores (4 × 16 bytes per 64-byte line), fenced — one CAS.WR per line and no RFO
 * read. Both run from a CPU of the socket that owns the memory, so reads cause no directory writes.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/probe.h"
#include "hvmtrace/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

#define LINE 64u

static bool have_clflushopt(void)
{
	unsigned a, b, c, d;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 23 & 1);
}

__attribute__((target("clflushopt"))) static void flush_opt(volatile char *p, uint64_t bytes)
{
	for (uint64_t i = 0; i < bytes; i += LINE)
		_mm_clflushopt((void *)(p + i));
}

static void flush_plain(volatile char *p, uint64_t bytes)
{
	for (uint64_t i = 0; i < bytes; i += LINE)
		_mm_clflush((void *)(p + i));
}

uint64_t hvt_touch_read(volatile void *p, uint64_t bytes, unsigned reps)
{
	static int opt = -1;
	volatile char *c = p;
	uint64_t sum = 0;

	if (opt < 0)
		opt = have_clflushopt();
	for (unsigned r = 0; r < reps; r++) {
		if (opt)
			flush_opt(c, bytes);
		else
			flush_plain(c, bytes);
		_mm_mfence(); /* clflushopt is weakly ordered: the flushes must finish before the loads */
		for (uint64_t i = 0; i < bytes; i += LINE)
			sum += *(volatile uint64_t *)(c + i);
	}
	return sum;
}

void hvt_touch_write(void *p, uint64_t bytes, unsigned reps, uint64_t pattern)
{
	__m128i v = _mm_set1_epi64x((long long)pattern);
	char *c = p;

	for (unsigned r = 0; r < reps; r++) {
		for (uint64_t i = 0; i < bytes; i += LINE) {
			__m128i *line = (__m128i *)(void *)(c + i);
			_mm_stream_si128(line, v);
			_mm_stream_si128(line + 1, v);
			_mm_stream_si128(line + 2, v);
			_mm_stream_si128(line + 3, v);
		}
		_mm_sfence();
	}
}
#else
#error "chanmap's probe loops are written for x86-64"
#endif

int hvt_pin_to_socket(const char *sysfs_root, unsigned socket, int *cpu, struct hvt_err *e)
{
	char dir[512];
	cpu_set_t allowed, want;

	snprintf(dir, sizeof(dir), "%s/devices/system/cpu", sysfs_root ? sysfs_root : "/sys");
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return hvt_err_set(e, -errno, "sched_getaffinity: %s", strerror(errno));
	DIR *d = opendir(dir);
	if (!d)
		return hvt_err_set(e, -errno, "cannot list %s: %s", dir, strerror(errno));
	int best = -1;
	struct dirent *de;
	while ((de = readdir(d))) {
		char path[1024];
		int n, pkg = -1;
		if (sscanf(de->d_name, "cpu%d", &n) != 1 || n < 0 || n >= CPU_SETSIZE ||
		    !CPU_ISSET(n, &allowed))
			continue;
		snprintf(path, sizeof(path), "%s/%s/topology/physical_package_id", dir, de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		if (fscanf(f, "%d", &pkg) == 1 && pkg == (int)socket && (best < 0 || n < best))
			best = n;
		fclose(f);
	}
	closedir(d);
	if (best < 0)
		return hvt_err_set(e, -ENOENT,
				   "no CPU of socket %u is online and allowed to this process (%s)", socket,
				   dir);
	CPU_ZERO(&want);
	CPU_SET(best, &want);
	if (sched_setaffinity(0, sizeof(want), &want))
		return hvt_err_set(e, -errno, "cannot run on CPU %d (socket %u): %s", best, socket,
				   strerror(errno));
	*cpu = best;
	return 0;
}
