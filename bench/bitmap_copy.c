// SPDX-License-Identifier: MIT
/*
 * The limit of any dirty-log harvest: the time to copy a guest's bitmap (one bit per 4 KiB page) once, with
 * memcpy between two resident buffers, on the CPU this runs on. bench/table.sh sets each harvest beside it.
 * usage: bitmap_copy [GUEST_SIZE...]  (sizes in bytes, or with K, M, G, T; default 1G 16G 256G 1T)
 * Prints one line per size: "BITMAP_COPY guest=SIZE bytes=N ns=N" (the median of repeated copies).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/util.h"

#define REPS 21

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* "1G" → 1 << 30; 0 when the text is not a size. */
static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	const char *units = "KMGT";
	const char *u = *end ? strchr(units, *end) : NULL;

	if (end == s || (*end && (!u || end[1])))
		return 0;
	return (uint64_t)v << (u ? 10 * (u - units + 1) : 0);
}

static int measure(const char *text)
{
	uint64_t guest = parse_size(text), bytes = guest / 4096 / 8, t[REPS];
	char *src, *dst;

	if (!bytes) {
		fprintf(stderr,
			"bitmap_copy: %s: not a guest size of at least 32K (bytes, or with K, M, G, T)\n",
			text);
		return 1;
	}
	src = malloc(bytes);
	dst = malloc(bytes);
	if (!src || !dst) {
		fprintf(stderr, "bitmap_copy: %s: out of memory for two %llu-byte bitmaps\n", text,
			(unsigned long long)bytes);
		free(src);
		free(dst);
		return 1;
	}
	memset(src, 0x5a, bytes); /* resident, as KVM's and the memfd's bitmaps are */
	memset(dst, 0, bytes);
	for (int i = 0; i < REPS; i++) {
		uint64_t t0 = hvt_now_ns();

		memcpy(dst, src, bytes);
		t[i] = hvt_now_ns() - t0;
		src[(size_t)i % bytes] ^= dst[bytes - 1]; /* keeps the copies from being elided */
	}
	qsort(t, REPS, sizeof(t[0]), cmp_u64);
	printf("BITMAP_COPY guest=%s bytes=%llu ns=%llu\n", text, (unsigned long long)bytes,
	       (unsigned long long)t[REPS / 2]);
	free(src);
	free(dst);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = {"1G", "16G", "256G", "1T"};
	int rc = 0;

	if (argc < 2)
		for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
			rc |= measure(defaults[i]);
	for (int i = 1; i < argc; i++)
		rc |= measure(argv[i]);
	return rc;
}
