// SPDX-License-Identifier: MIT
/*
 * Measures both page-set codecs on the sets this tool produces: per slot size (1 GiB, 64 GiB of 4 KiB pages)
 * and access pattern, the encoded size and the encode and decode time. Prints a Markdown table (the one in
 * docs/formats.md comes from here). Figures only: nothing is asserted about time.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvmtrace/error.h"
#include "hvmtrace/pageset.h"
#include "hvmtrace/util.h"

#define TARGET_NS 200000000ull /* time spent per measurement */
#define MAX_REPS  2000

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void)
{
	return hvt_splitmix64(&rng_state); /* fixed seed: every run measures the same sets */
}

static double rng_unit(void)
{
	return (double)(rng_next() >> 11) * 0x1p-53;
}

/* Geometric length >= 1 with the given mean. */
static uint64_t rng_geometric(double mean)
{
	double u = 1.0 - rng_unit();

	return 1 + (uint64_t)floor(log(u) / log(1.0 - 1.0 / mean));
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fill_uniform(struct hvt_pageset *s, double p)
{
	for (uint64_t i = 0; i < s->npages; i++)
		if (rng_unit() < p)
			hvt_pageset_set(s, i);
}

static void fill_clustered(struct hvt_pageset *s, double mean_run, double mean_gap)
{
	uint64_t pos = rng_geometric(mean_gap);

	while (pos < s->npages) {
		uint64_t len = rng_geometric(mean_run);

		hvt_pageset_set_range(s, pos, len);
		pos += len + rng_geometric(mean_gap);
	}
}

static void fill_pattern(struct hvt_pageset *s, int pattern)
{
	uint64_t n = s->npages;

	switch (pattern) {
	case 0: /* empty */
		break;
	case 1: /* full */
		hvt_pageset_set_range(s, 0, n);
		break;
	case 2: /* one block: a quarter of the slot */
		hvt_pageset_set_range(s, n / 3, n / 4);
		break;
	case 3: /* a few blocks of different sizes */
		for (int b = 0; b < 6; b++)
			hvt_pageset_set_range(s, n / 7 * (uint64_t)b + (uint64_t)b * 97,
					      n / (16u << (b % 3)));
		break;
	case 4: /* one page in every 64 */
		for (uint64_t i = 0; i < n; i += 64)
			hvt_pageset_set(s, i);
		break;
	case 5:
		fill_uniform(s, 0.001);
		break;
	case 6:
		fill_uniform(s, 0.01);
		break;
	case 7:
		fill_uniform(s, 0.10);
		break;
	case 8:
		fill_uniform(s, 0.50);
		break;
	case 9: /* runs of mean 16 pages, 10 % of the slot */
		fill_clustered(s, 16, 144);
		break;
	}
}

static const char *const pattern_names[] = {
    "empty",       "full",      "one block 25%", "6 blocks",   "stride-64",
    "random 0.1%", "random 1%", "random 10%",    "random 50%", "clustered 10%",
};
#define NPATTERNS (int)(sizeof(pattern_names) / sizeof(pattern_names[0]))

struct result {
	size_t bytes;
	double enc_ns, dec_ns;
};

/* Best of as many repetitions as fit in TARGET_NS: the least disturbed figure. */
static int measure(const struct hvt_pageset *s, enum hvt_codec c, struct result *res)
{
	struct hvt_pageset back;
	struct hvt_err err = {{0}};
	uint8_t *buf = NULL;
	size_t len = 0;
	uint64_t t, best_enc = UINT64_MAX, best_dec = UINT64_MAX, spent = 0;
	int rc = hvt_pageset_init(&back, s->npages);

	for (int rep = 0; !rc && rep < MAX_REPS && spent < TARGET_NS; rep++) {
		free(buf);
		t = now_ns();
		rc = hvt_pageset_encode(s, c, &buf, &len);
		t = now_ns() - t;
		spent += t;
		best_enc = t < best_enc ? t : best_enc;
		if (rc)
			break;
		t = now_ns();
		rc = hvt_pageset_decode(&back, c, buf, len, &err);
		t = now_ns() - t;
		spent += t;
		best_dec = t < best_dec ? t : best_dec;
	}
	if (!rc && !hvt_pageset_equal(s, &back)) {
		fprintf(stderr, "pageset_codec: %s does not round-trip\n", hvt_codec_name(c));
		rc = -1;
	} else if (rc) {
		fprintf(stderr, "pageset_codec: %s: error %d %s\n", hvt_codec_name(c), rc, err.msg);
	}
	res->bytes = len;
	res->enc_ns = (double)best_enc;
	res->dec_ns = (double)best_dec;
	free(buf);
	hvt_pageset_fini(&back);
	return rc;
}

static int bench_slot(const char *slot_name, uint64_t npages)
{
	static const enum hvt_codec codecs[] = {HVT_CODEC_ROARING, HVT_CODEC_ZSTD_RUNS};
	double bitmap_mb = (double)npages / 8 / 1e6;

	for (int p = 0; p < NPATTERNS; p++) {
		struct hvt_pageset s;
		uint64_t count;

		if (hvt_pageset_init(&s, npages))
			return -1;
		fill_pattern(&s, p);
		count = hvt_pageset_count(&s);
		for (size_t c = 0; c < sizeof(codecs) / sizeof(codecs[0]); c++) {
			struct result r;

			if (measure(&s, codecs[c], &r)) {
				hvt_pageset_fini(&s);
				return -1;
			}
			printf("| %-6s | %-13s | %9llu | %-9s | %10zu | ", slot_name, pattern_names[p],
			       (unsigned long long)count, hvt_codec_name(codecs[c]), r.bytes);
			if (count)
				printf("%8.4f | ", (double)r.bytes / (double)count);
			else
				printf("%8s | ", "-");
			printf("%9.1f | %9.1f | %8.0f | %8.0f |\n", r.enc_ns / 1e3, r.dec_ns / 1e3,
			       bitmap_mb / (r.enc_ns / 1e9), bitmap_mb / (r.dec_ns / 1e9));
		}
		hvt_pageset_fini(&s);
	}
	return 0;
}

int main(void)
{
	printf("page-set codecs: encoded size and best-of-N time per set; MB/s are of the raw bitmap\n"
	       "(1 GiB slot: 262144 pages, 32 KiB bitmap; 64 GiB slot: 16777216 pages, 2 MiB bitmap)\n\n");
	printf(
	    "| slot   | pattern       | pages set | codec     |      bytes | B/page   |   enc µs  |   dec µs  | enc MB/s | dec MB/s |\n");
	printf(
	    "|--------|---------------|----------:|-----------|-----------:|---------:|----------:|----------:|---------:|---------:|\n");
	if (bench_slot("1 GiB", 262144) || bench_slot("64 GiB", 16777216))
		return 1;
	return 0;
}
