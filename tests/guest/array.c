// SPDX-License-Identifier: MIT
/*
 * array: the seed paper's array program, run inside a Linux guest. Three arrays of doubles a, b, c of
 * --size bytes each; for --phase seconds c[i] = a[i] (copy), then for --phase seconds c[i] = a[i] + b[i]
 * (add). Before the phases it prints where c lives in guest-physical memory (from /proc/self/pagemap,
 * so it must run as root), so a host-side test can check page by page that every copy or add interval of
 * the trace holds c. With --notify PID it then sends PID (the guest agent, hvmtrace-guest --every) SIGUSR1,
 * which asks for a snapshot of the pages' owners at once: one with the arrays in it, early in the copy.
 * Output lines, all starting with "HVT ":
 *   HVT C-PAGES <n>                    pages of c
 *   HVT C-RUN <first_gfn> <count>      runs of c's guest-physical pages
 *   HVT PHASE copy | add | done <ns>   when each phase begins (and when the program ends), <ns> the guest's
 *                                      CLOCK_REALTIME, the clock of the agent's snapshots
 * Built static, it needs nothing but a kernel.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void print_phase(const char *name)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	printf("HVT PHASE %s %llu\n", name,
	       (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
}

static void print_runs(const void *p, size_t bytes)
{
	long psz = sysconf(_SC_PAGESIZE);
	int fd = open("/proc/self/pagemap", O_RDONLY);
	uint64_t first = 0, count = 0;

	if (fd < 0) {
		perror("array: /proc/self/pagemap");
		exit(1);
	}
	printf("HVT C-PAGES %zu\n", bytes / psz);
	for (size_t off = 0; off < bytes; off += psz) {
		uint64_t e;
		off_t at = (off_t)(((uintptr_t)p + off) / psz * sizeof(e));

		if (pread(fd, &e, sizeof(e), at) != sizeof(e) || !(e >> 63)) {
			fprintf(stderr, "array: page %zu of c is not present\n", off / psz);
			exit(1);
		}
		uint64_t pfn = e & ((1ull << 55) - 1);
		if (count && pfn == first + count) {
			count++;
			continue;
		}
		if (count)
			printf("HVT C-RUN %llu %llu\n", (unsigned long long)first, (unsigned long long)count);
		first = pfn;
		count = 1;
	}
	if (count)
		printf("HVT C-RUN %llu %llu\n", (unsigned long long)first, (unsigned long long)count);
	close(fd);
}

int main(int argc, char **argv)
{
	size_t bytes = 32u << 20;
	double phase = 5;
	long notify = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--size"))
			bytes = strtoull(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--phase"))
			phase = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--notify"))
			notify = atol(argv[i + 1]);
	}
	size_t n = bytes / sizeof(double);
	double *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);

	if (!a || !b || !c || mlockall(MCL_CURRENT) < 0) {
		perror("array: allocating and locking the arrays");
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		a[i] = (double)i;
		b[i] = 2.0 * (double)i;
		c[i] = 0;
	}
	print_runs(c, n * sizeof(double));
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (notify > 0 && kill((pid_t)notify, SIGUSR1) < 0)
		perror("array: --notify"); /* the snapshots on the agent's clock still come */

	print_phase("copy");
	for (double end = now() + phase; now() < end;)
		for (size_t i = 0; i < n; i++)
			c[i] = a[i];
	print_phase("add");
	for (double end = now() + phase; now() < end;)
		for (size_t i = 0; i < n; i++)
			c[i] = a[i] + b[i];
	print_phase("done");
	return c[n - 1] == a[n - 1] + b[n - 1] ? 0 : 1;
}
