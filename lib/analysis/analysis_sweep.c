// SPDX-License-Identifier: MIT
/*
 * The per-page sweep of the analyses (analysis_sweep.h).
 *
 * Touching a run of pages sets each page's state to (count + 1, this interval's stamp) and counts the
 * touched pages by their previous stamp. Pages touched together were mostly touched together before, so they
 * come in segments of one previous stamp. A run is taken 16 pages at a time: one vector step updates them and
 * checks that all had the current segment's stamp, with no branch on the run's length (lanes past the run's
 * end are written back as they were read); only a step where the stamp changes goes page by page. Run lengths
 * vary, so branches on them were most of the cost of a page-at-a-time loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_X86_SIMD 1
#endif

#include "analysis_sweep.h"
#include "hvmtrace/pageset.h"

#define PREFETCH_AHEAD 16 /* runs */
#define CHUNK          16 /* pages per step */

/*
 * The states are swept at scattered places once per run: on 4 KiB pages nearly every run also misses the
 * TLB. Transparent huge pages where the kernel offers them (madvise) cut that; anonymous mmap is zeroed.
 */
static void *big_calloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without THP it fails, and that is fine */
	return p;
}

/* A step reads and writes back up to CHUNK - 1 pages past a run's end: room for them after the last page. */
static size_t state_bytes(uint64_t npages)
{
	return (npages + CHUNK) * sizeof(uint32_t);
}

static bool impl_available(enum hvt_sweep_impl impl)
{
	switch (impl) {
	case HVT_SWEEP_SCALAR:
		return true;
#ifdef HAVE_X86_SIMD
	case HVT_SWEEP_SSE2:
		return true;
	case HVT_SWEEP_AVX2:
		return __builtin_cpu_supports("avx2");
#endif
	default:
		return false;
	}
}

int hvt_sweep_init(struct hvt_sweep *s, uint64_t npages, unsigned kinds, uint32_t window,
		   const struct hvt_sweep_tuning *t)
{
	/* the newest stamp, epoch - 1 + window, must fit in 16 bits */
	uint32_t fit = 65536u - window < HVT_SWEEP_MAX_EPOCH ? 65536u - window : HVT_SWEEP_MAX_EPOCH;
	uint32_t epoch = t ? t->epoch : 0;

	memset(s, 0, sizeof(*s));
	s->impl = t ? t->impl : HVT_SWEEP_BEST;
	if (s->impl == HVT_SWEEP_BEST)
		s->impl = impl_available(HVT_SWEEP_AVX2)   ? HVT_SWEEP_AVX2
			  : impl_available(HVT_SWEEP_SSE2) ? HVT_SWEEP_SSE2
							   : HVT_SWEEP_SCALAR;
	if (!window || window > 65535 || !impl_available(s->impl))
		return -EINVAL;
	s->npages = npages;
	s->window = window;
	s->epoch = epoch && epoch < fit ? epoch : fit;
	for (int k = 0; k < 2; k++) {
		if (!(kinds & (1u << k)))
			continue;
		s->kind[k] = true;
		s->state[k] = big_calloc(state_bytes(npages));
		s->gap[k] = calloc(window, sizeof(uint64_t));
		if (!s->state[k] || !s->gap[k]) {
			hvt_sweep_fini(s);
			return -ENOMEM;
		}
	}
	return 0;
}

void hvt_sweep_fini(struct hvt_sweep *s)
{
	for (int k = 0; k < 2; k++) {
		if (s->state[k])
			munmap(s->state[k], state_bytes(s->npages));
		free(s->total[k]);
		free(s->gap[k]);
	}
	memset(s, 0, sizeof(*s));
}

/* Adds the epoch's counts to the totals and moves the stamps into the next epoch's numbering. */
static int flush(struct hvt_sweep *s)
{
	for (int k = 0; k < 2; k++) {
		uint32_t *st = s->state[k], *t;

		if (!s->kind[k])
			continue;
		if (!s->total[k] && !(s->total[k] = calloc(s->npages ? s->npages : 1, sizeof(uint32_t))))
			return -ENOMEM;
		t = s->total[k];
		for (uint64_t i = 0; i < s->npages; i++) {
			uint32_t stamp = st[i] >> 16;

			t[i] += st[i] & 0xffff;
			/* interval j of this epoch is j - epoch in the next; one older than the window is
			 * never counted again, and 0 says just that */
			st[i] = (stamp > s->epoch ? stamp - s->epoch : 0) << 16;
		}
	}
	s->flushes++;
	s->k = 0;
	return 0;
}

int hvt_sweep_begin(struct hvt_sweep *s)
{
	if (s->k == s->epoch && flush(s))
		return -ENOMEM;
	s->k++;
	return 0;
}

/* A segment of pages with one previous stamp ends: they count at their gap if it is inside the window. */
static inline void end_segment(uint32_t stamp, uint32_t old, uint64_t pages, uint32_t w, uint64_t *gap)
{
	uint32_t d = stamp - old; /* the stamp grows by one per interval; old < stamp */

	if (d < w)
		gap[d] += pages;
}

/* Where a run is swept: its pages' states, this interval's stamp, and the segment being counted. */
struct sweep_at {
	uint32_t stamp, w;
	uint64_t *gap;
	uint32_t old; /* the segment's previous stamp */
	uint64_t seg; /* its pages so far */
};

/* Pages [0, n) of p one at a time; prev: their states before, or NULL to read them from p. */
static inline void touch_pages(uint32_t *p, const uint32_t *prev, int n, struct sweep_at *at)
{
	for (int i = 0; i < n; i++) {
		uint32_t old = prev ? prev[i] : p[i] >> 16;

		if (!prev)
			p[i] = (p[i] & 0xffff) + (at->stamp << 16 | 1);
		if (old != at->old) {
			end_segment(at->stamp, at->old, at->seg, at->w, at->gap);
			at->old = old;
			at->seg = 0;
		}
		at->seg++;
	}
}

#ifdef HAVE_X86_SIMD
static const int32_t lane_index[CHUNK]
    __attribute__((aligned(32))) = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

/*
 * One step over pages [0, n) of p, n <= CHUNK: each gets (count + 1, stamp); the lanes from n on are
 * written back unchanged. True when every page had the previous stamp old; else prev[] holds each one's.
 */
static inline __attribute__((always_inline)) bool step_sse2(uint32_t *p, int n, uint32_t stamp, uint32_t old,
							    uint32_t *prev)
{
	const __m128i low = _mm_set1_epi32(0xffff), add = _mm_set1_epi32((int)(stamp << 16 | 1));
	const __m128i vn = _mm_set1_epi32(n), vold = _mm_set1_epi32((int)old);
	__m128i other = _mm_setzero_si128();

	for (int j = 0; j < CHUNK; j += 4) {
		__m128i in = _mm_cmplt_epi32(_mm_load_si128((const __m128i *)&lane_index[j]), vn);
		__m128i v = _mm_loadu_si128((const __m128i *)(p + j));
		__m128i nv = _mm_add_epi32(_mm_and_si128(v, low), add);
		__m128i pv = _mm_srli_epi32(v, 16);

		_mm_storeu_si128((__m128i *)(p + j),
				 _mm_or_si128(_mm_and_si128(in, nv), _mm_andnot_si128(in, v)));
		_mm_storeu_si128((__m128i *)(prev + j), pv);
		other = _mm_or_si128(other, _mm_andnot_si128(_mm_cmpeq_epi32(pv, vold), in));
	}
	return !_mm_movemask_epi8(other);
}

__attribute__((target("avx2"))) static inline bool step_avx2(uint32_t *p, int n, uint32_t stamp, uint32_t old,
							     uint32_t *prev)
{
	const __m256i low = _mm256_set1_epi32(0xffff), add = _mm256_set1_epi32((int)(stamp << 16 | 1));
	const __m256i vn = _mm256_set1_epi32(n), vold = _mm256_set1_epi32((int)old);
	__m256i other = _mm256_setzero_si256();

	for (int j = 0; j < CHUNK; j += 8) {
		__m256i in = _mm256_cmpgt_epi32(vn, _mm256_load_si256((const __m256i *)&lane_index[j]));
		__m256i v = _mm256_loadu_si256((const __m256i *)(p + j));
		__m256i nv = _mm256_add_epi32(_mm256_and_si256(v, low), add);
		__m256i pv = _mm256_srli_epi32(v, 16);

		_mm256_storeu_si256((__m256i *)(p + j), _mm256_blendv_epi8(v, nv, in));
		_mm256_storeu_si256((__m256i *)(prev + j), pv);
		other = _mm256_or_si256(other, _mm256_andnot_si256(_mm256_cmpeq_epi32(pv, vold), in));
	}
	return _mm256_testz_si256(other, other);
}
#endif

typedef bool step_fn(uint32_t *p, int n, uint32_t stamp, uint32_t old, uint32_t *prev);

/* The sweep of an interval's runs, step by step; inlined into one copy per step (and so per instruction set).
 */
static inline __attribute__((always_inline)) void sweep_runs(uint32_t *st, const struct hvt_run *v,
							     size_t nruns, uint64_t base, struct sweep_at *at,
							     step_fn *step)
{
	for (size_t r = 0; r < nruns; r++) {
		uint32_t *p = &st[v[r].first - base];
		uint64_t count = v[r].count;

		/* runs lie far apart: ask for the lines of a run some runs ahead while this one is swept */
		if (r + PREFETCH_AHEAD < nruns) {
			const uint32_t *q = &st[v[r + PREFETCH_AHEAD].first - base];

			__builtin_prefetch(q, 1);
			__builtin_prefetch(q + 16, 1);
		}
		at->old = p[0] >> 16;
		at->seg = 0;
		for (uint64_t i = 0; i < count; i += CHUNK) {
			int n = count - i < CHUNK ? (int)(count - i) : CHUNK;
			uint32_t prev[CHUNK];

			if (step(p + i, n, at->stamp, at->old, prev))
				at->seg += (uint64_t)n;
			else
				touch_pages(p + i, prev, n, at);
		}
		end_segment(at->stamp, at->old, at->seg, at->w, at->gap);
	}
}

static void sweep_scalar(uint32_t *st, const struct hvt_run *v, size_t nruns, uint64_t base,
			 struct sweep_at *at)
{
	for (size_t r = 0; r < nruns; r++) {
		uint32_t *p = &st[v[r].first - base];

		at->old = p[0] >> 16;
		at->seg = 0;
		for (uint64_t i = 0; i < v[r].count; i += CHUNK)
			touch_pages(p + i, NULL, v[r].count - i < CHUNK ? (int)(v[r].count - i) : CHUNK, at);
		end_segment(at->stamp, at->old, at->seg, at->w, at->gap);
	}
}

#ifdef HAVE_X86_SIMD
static void sweep_sse2(uint32_t *st, const struct hvt_run *v, size_t nruns, uint64_t base,
		       struct sweep_at *at)
{
	sweep_runs(st, v, nruns, base, at, step_sse2);
}

__attribute__((target("avx2"))) static void sweep_avx2(uint32_t *st, const struct hvt_run *v, size_t nruns,
						       uint64_t base, struct sweep_at *at)
{
	sweep_runs(st, v, nruns, base, at, step_avx2);
}
#endif

void hvt_sweep_touch(struct hvt_sweep *s, int kind, const struct hvt_run *v, size_t n, uint64_t base)
{
	struct sweep_at at = {.stamp = s->k - 1 + s->window, .w = s->window, .gap = s->gap[kind]};

	switch (s->impl) {
#ifdef HAVE_X86_SIMD
	case HVT_SWEEP_AVX2:
		sweep_avx2(s->state[kind], v, n, base, &at);
		break;
	case HVT_SWEEP_SSE2:
		sweep_sse2(s->state[kind], v, n, base, &at);
		break;
#endif
	default:
		sweep_scalar(s->state[kind], v, n, base, &at);
	}
}

uint32_t *hvt_sweep_counts(struct hvt_sweep *s, int kind)
{
	const uint32_t *st = s->state[kind];
	uint32_t *c;

	if (!s->kind[kind])
		return NULL;
	c = s->total[kind] ? s->total[kind] : malloc((s->npages ? s->npages : 1) * sizeof(*c));
	if (!c)
		return NULL;
	if (s->total[kind])
		for (uint64_t i = 0; i < s->npages; i++)
			c[i] += st[i] & 0xffff;
	else
		for (uint64_t i = 0; i < s->npages; i++)
			c[i] = st[i] & 0xffff;
	s->total[kind] = NULL; /* the caller's now */
	return c;
}
