// SPDX-License-Identifier: MIT
/*
 * buildload: a build-like load for a Linux guest, for --seconds: a "make" forks --jobs "compilers" at a
 * time; each reads a generated source file, works on a private heap (parse trees: allocate, fill, walk),
 * and writes an object file; after every round a "linker" reads all objects and writes one binary. Files
 * live in tmpfs (/tmp), so the memory traffic is the page cache's and the processes' own, like a kernel
 * build's. It prints "HVT PHASE build" at the start and "HVT PHASE done" at the end, with the rounds done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void write_file(const char *path, const char *buf, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

/* One "compilation": source in, a heap worked over, an object out. */
static void compile(int unit, size_t src_bytes, size_t heap_bytes)
{
	char src[64], obj[64];
	char *buf = malloc(src_bytes), *heap = malloc(heap_bytes);
	unsigned long sum = 0;
	FILE *f;

	snprintf(src, sizeof(src), "/tmp/build/u%d.c", unit);
	snprintf(obj, sizeof(obj), "/tmp/build/u%d.o", unit);
	f = fopen(src, "r");
	if (!f || !buf || !heap || fread(buf, 1, src_bytes, f) != src_bytes) {
		perror(src);
		exit(1);
	}
	fclose(f);
	for (size_t i = 0; i < heap_bytes; i += 64)
		heap[i] = buf[i % src_bytes];
	for (size_t i = 0; i < heap_bytes; i += 64)
		sum += (unsigned char)heap[(i * 7919) % heap_bytes];
	memset(buf, (int)(sum & 0xff), src_bytes / 2);
	write_file(obj, buf, src_bytes / 2);
	_exit(0);
}

int main(int argc, char **argv)
{
	int jobs = 4, units = 64;
	double seconds = 10;
	size_t src_bytes = 256 << 10, heap_bytes = 4 << 20;
	unsigned rounds = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--jobs"))
			jobs = atoi(argv[i + 1]);
	}
	char *buf = malloc(src_bytes * 2);
	if (!buf || (system("mkdir -p /tmp/build") != 0)) {
		perror("buildload: setup");
		return 1;
	}
	for (int u = 0; u < units; u++) {
		char path[64];

		for (size_t i = 0; i < src_bytes; i++)
			buf[i] = (char)('a' + (i * 31 + (size_t)u) % 26);
		snprintf(path, sizeof(path), "/tmp/build/u%d.c", u);
		write_file(path, buf, src_bytes);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("HVT PHASE build\n");
	for (double end = now() + seconds; now() < end; rounds++) {
		int running = 0;

		for (int u = 0; u < units; u++) {
			if (running == jobs) {
				wait(NULL);
				running--;
			}
			if (fork() == 0)
				compile(u, src_bytes, heap_bytes);
			running++;
		}
		while (running-- > 0)
			wait(NULL);
		/* link: read every object, write the binary */
		FILE *out = fopen("/tmp/build/a.out", "w");
		for (int u = 0; out && u < units; u++) {
			char path[64];
			FILE *f;
			size_t n;

			snprintf(path, sizeof(path), "/tmp/build/u%d.o", u);
			f = fopen(path, "r");
			while (f && (n = fread(buf, 1, src_bytes * 2, f)) > 0)
				fwrite(buf, 1, n, out);
			if (f)
				fclose(f);
		}
		if (!out || fclose(out)) {
			perror("buildload: link");
			return 1;
		}
	}
	printf("HVT PHASE done %u rounds\n", rounds);
	return 0;
}
