// SPDX-License-Identifier: MIT
/*
 * The per-page sweep of the analyses (analysis_sweep.h).
 *
 * Touching a run of pages sets each page's state to (count + 1, this interval's stamp) and counts the
 * touched pages by their previous stamp. Pages touched together were mostly touched together before, so they
 * come in segments of one previous stamp. A run is taken 16 pages at a time: one vector step updates them and
 * checks that all had the current segment's stamp, with no branch on the run's length (lanes past the run's
 * end are written back as they were read); only a step where the stamp changes goes page by page. Run lengths
 * vary, so branches on them were most of the cost of a page-at-a-time loop. A run is cut where it crosses
 * from one chunk into the next; the gaps count pages, so the pieces add up to what the whole run gives.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_X86_SIMD 1
#endif

#include "analysis_sweep.h"
#include "hvmtrace/pageset.h"

#define CHUNK          SWEEP_CHUNK_PAD /* pages per step: it reads and writes back up to CHUNK - 1 past a run */
#define PREFETCH_AHEAD 16              /* runs */
#define SHORT_PIECE    2               /* pages: shorter pieces (single pages) are swept alone */

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
	if (window > 65535 || !impl_available(s->impl))
		return -EINVAL;
	if (chunk_table_init(&s->chunks, npages, t && t->hash))
		return -ENOMEM;
	s->npages = npages;
	s->window = window;
	s->epoch = epoch && epoch < fit ? epoch : fit;
	for (int k = 0; k < 2; k++) {
		if (!(kinds & (1u << k)))
			continue;
		s->kind[k] = true;
		if (window && !(s->gap[k] = calloc(window, sizeof(uint64_t)))) {
			hvt_sweep_fini(s);
			return -ENOMEM;
		}
	}
	return 0;
}

void hvt_sweep_fini(struct hvt_sweep *s)
{
	chunk_table_fini(&s->chunks);
	for (int k = 0; k < 2; k++)
		free(s->gap[k]);
	memset(s, 0, sizeof(*s));
}

/* Adds the epoch's counts to the totals and moves the stamps into the next epoch's numbering. */
static int flush(struct hvt_sweep *s)
{
	for (size_t c = 0; c < s->chunks.n; c++)
		for (int k = 0; k < 2; k++) {
			struct sweep_chunk *ch = &s->chunks.v[c];
			uint32_t *st = ch->state[k], *t;

			if (!st)
				continue;
			if (!ch->total[k] && !(ch->total[k] = calloc(HVT_COUNT_CHUNK, sizeof(uint32_t))))
				return -ENOMEM;
			t = ch->total[k];
			for (uint32_t i = 0; i < HVT_COUNT_CHUNK; i++) {
				uint32_t stamp = st[i] >> 16;

				t[i] += st[i] & 0xffff;
				/* interval j of this epoch is j - epoch in the next; one older than the
				 * window is never counted again, and 0 says just that */
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

/* The sweep of count pages from p, the piece of a run inside one chunk, step by step; inlined into one copy
 * per step (and so per instruction set). */
static inline __attribute__((always_inline)) void sweep_piece(uint32_t *p, uint64_t count,
							      struct sweep_at *at, step_fn *step)
{
	at->old = p[0] >> 16;
	at->seg = 0;
	/* a step would read and write back a whole vector for one page; for a few pages, a loop branching on
	 * their count costs more than the step (runs with locality, many of 2-3 pages: 8 % more CPU) */
	if (count < SHORT_PIECE) {
		touch_pages(p, NULL, (int)count, at);
		end_segment(at->stamp, at->old, at->seg, at->w, at->gap);
		return;
	}
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

static inline __attribute__((always_inline)) void piece_scalar(uint32_t *p, uint64_t count,
							       struct sweep_at *at, step_fn *step)
{
	(void)step;
	at->old = p[0] >> 16;
	at->seg = 0;
	for (uint64_t i = 0; i < count; i += CHUNK)
		touch_pages(p + i, NULL, count - i < CHUNK ? (int)(count - i) : CHUNK, at);
	end_segment(at->stamp, at->old, at->seg, at->w, at->gap);
}

/* The states of kind at page i, in its chunk (made, with the kind's states, when there is none); NULL:
 * -ENOMEM. */
static inline uint32_t *states_at(struct hvt_sweep *s, int kind, uint64_t i)
{
	ptrdiff_t c;
	struct sweep_chunk *ch;

	if (s->chunks.dir && s->chunks.states_dir[kind][i / HVT_COUNT_CHUNK]) /* the common case, one load */
		return s->chunks.states_dir[kind][i / HVT_COUNT_CHUNK] + i % HVT_COUNT_CHUNK;
	if ((c = chunk_table_get(&s->chunks, i)) < 0)
		return NULL;
	ch = &s->chunks.v[c];
	if (!ch->state[kind] && !(ch->state[kind] = chunk_table_states(&s->chunks)))
		return NULL;
	if (s->chunks.dir)
		s->chunks.states_dir[kind][i / HVT_COUNT_CHUNK] = ch->state[kind];
	return ch->state[kind] + (i - ch->first);
}

typedef void piece_fn(uint32_t *p, uint64_t count, struct sweep_at *at, step_fn *step);

/*
 * An interval's runs, each cut where it crosses into the next chunk. Runs lie far apart: the states of the
 * run PREFETCH_AHEAD on are found and asked for while this one is swept. Inlined into one copy per piece
 * and step (and so per instruction set).
 */
static inline __attribute__((always_inline)) int sweep_runs(struct hvt_sweep *s, int kind,
							    const struct hvt_run *v, size_t n, uint64_t base,
							    const struct sweep_at *where, piece_fn *piece,
							    step_fn *step)
{
	struct sweep_at here = *where, *at = &here; /* a copy of its own, kept in registers */
	uint32_t *ahead[PREFETCH_AHEAD];

	for (size_t r = 0; r < n && r < PREFETCH_AHEAD; r++)
		if (!(ahead[r] = states_at(s, kind, v[r].first - base)))
			return -ENOMEM;
	for (size_t r = 0; r < n; r++) {
		uint64_t i = v[r].first - base, end = i + v[r].count;
		uint32_t *p = ahead[r % PREFETCH_AHEAD];

		if (r + PREFETCH_AHEAD < n) {
			uint32_t *q = states_at(s, kind, v[r + PREFETCH_AHEAD].first - base);

			if (!q)
				return -ENOMEM;
			__builtin_prefetch(q, 1);
			__builtin_prefetch(q + 16, 1);
			ahead[r % PREFETCH_AHEAD] = q;
		}
		for (;;) {
			uint64_t stop = (i / HVT_COUNT_CHUNK + 1) * HVT_COUNT_CHUNK;

			stop = stop < end ? stop : end;
			piece(p, stop - i, at, step);
			if ((i = stop) == end)
				break;
			if (!(p = states_at(s, kind, i)))
				return -ENOMEM;
		}
	}
	return 0;
}

/* Counts only (no window): each page's count goes up by one, its stamp stays 0. A count stays below 65536
 * within an epoch, so the add never reaches the stamp's bits. */
static inline __attribute__((always_inline)) void piece_count(uint32_t *p, uint64_t count,
							      struct sweep_at *at, step_fn *step)
{
	(void)at;
	(void)step;
	for (uint64_t i = 0; i < count; i++)
		p[i]++;
}

static int sweep_count(struct hvt_sweep *s, int kind, const struct hvt_run *v, size_t n, uint64_t base,
		       struct sweep_at *at)
{
	return sweep_runs(s, kind, v, n, base, at, piece_count, NULL);
}

static int sweep_scalar(struct hvt_sweep *s, int kind, const struct hvt_run *v, size_t n, uint64_t base,
			struct sweep_at *at)
{
	return sweep_runs(s, kind, v, n, base, at, piece_scalar, NULL);
}

#ifdef HAVE_X86_SIMD
static int sweep_sse2(struct hvt_sweep *s, int kind, const struct hvt_run *v, size_t n, uint64_t base,
		      struct sweep_at *at)
{
	return sweep_runs(s, kind, v, n, base, at, sweep_piece, step_sse2);
}

__attribute__((target("avx2"))) static int sweep_avx2(struct hvt_sweep *s, int kind, const struct hvt_run *v,
						      size_t n, uint64_t base, struct sweep_at *at)
{
	return sweep_runs(s, kind, v, n, base, at, sweep_piece, step_avx2);
}
#endif

void hvt_sweep_own(struct hvt_sweep *s, uint32_t mask, uint32_t nblocks, uint64_t block)
{
	s->mask = mask;
	s->nblocks = nblocks;
	s->block = block;
}

static int sweep_all(struct hvt_sweep *s, int kind, const struct hvt_run *v, size_t n, uint64_t base,
		     struct sweep_at *at)
{
	if (!n)
		return 0;
	if (!s->window)
		return sweep_count(s, kind, v, n, base, at);
	switch (s->impl) {
#ifdef HAVE_X86_SIMD
	case HVT_SWEEP_AVX2:
		return sweep_avx2(s, kind, v, n, base, at);
	case HVT_SWEEP_SSE2:
		return sweep_sse2(s, kind, v, n, base, at);
#endif
	default:
		return sweep_scalar(s, kind, v, n, base, at);
	}
}

/* The first of runs [i, n) that begins at or past page end (relative to base); n if none. */
static size_t first_from(const struct hvt_run *v, size_t i, size_t n, uint64_t base, uint64_t end)
{
	while (i < n) {
		size_t mid = i + (n - i) / 2;

		if (v[mid].first - base < end)
			i = mid + 1;
		else
			n = mid;
	}
	return i;
}

/*
 * The runs block by block, the blocks s owns swept: the runs that begin in a block are found by a binary
 * search, so skipping another part's blocks costs one search each, not a branch per run. A run that
 * crosses into the next block is swept to the block's end here and from there on with that block.
 */
static int sweep_owned(struct hvt_sweep *s, int kind, const struct hvt_run *v, size_t n, uint64_t base,
		       struct sweep_at *at)
{
	size_t i = 0;
	uint64_t cur = n ? v[0].first - base : 0; /* where run i's pages not yet handed out begin */
	int rc;

	while (i < n) {
		uint64_t block = cur / s->block, bend = (block + 1) * s->block;
		size_t j = first_from(v, i + 1, n, base, bend); /* runs [i, j) begin in this block */
		uint64_t last_end = v[j - 1].first - base + v[j - 1].count;

		if (s->mask >> (block % s->nblocks) & 1) {
			uint64_t i_end = v[i].first - base + v[i].count;
			struct hvt_run head = {base + cur, (i_end < bend ? i_end : bend) - cur};

			if ((rc = sweep_all(s, kind, &head, 1, base, at)))
				return rc;
			if (j - i > 1) {
				struct hvt_run tail = v[j - 1];

				tail.count = (last_end < bend ? last_end : bend) - (tail.first - base);
				if ((rc = sweep_all(s, kind, v + i + 1, j - i - 2, base, at)) ||
				    (rc = sweep_all(s, kind, &tail, 1, base, at)))
					return rc;
			}
		}
		if (last_end > bend) {
			i = j - 1;
			cur = bend;
		} else if ((i = j) < n) {
			cur = v[i].first - base;
		}
	}
	return 0;
}

int hvt_sweep_touch(struct hvt_sweep *s, int kind, const struct hvt_run *v, size_t n, uint64_t base)
{
	struct sweep_at at = {.stamp = s->k - 1 + s->window, .w = s->window, .gap = s->gap[kind]};

	return s->nblocks ? sweep_owned(s, kind, v, n, base, &at) : sweep_all(s, kind, v, n, base, &at);
}

static int by_first(const void *x, const void *y)
{
	const struct hvt_count_chunk *a = x, *b = y;

	return a->first < b->first ? -1 : a->first > b->first;
}

int hvt_sweep_take(struct hvt_sweep *s, struct hvt_count_chunk **out, uint64_t *n)
{
	struct hvt_count_chunk *v = malloc((s->chunks.n ? s->chunks.n : 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t c = 0; c < s->chunks.n; c++) {
		struct sweep_chunk *ch = &s->chunks.v[c];

		v[c] = (struct hvt_count_chunk){.first = ch->first};
		for (int k = 0; k < 2; k++) {
			uint32_t *st = ch->state[k];

			if (!st)
				continue;
			if (!(v[c].count[k] = malloc(HVT_COUNT_CHUNK * sizeof(uint32_t)))) {
				for (size_t d = 0; d <= c; d++)
					for (int m = 0; m < 2; m++)
						free(v[d].count[m]);
				free(v);
				return -ENOMEM;
			}
			for (uint32_t i = 0; i < HVT_COUNT_CHUNK; i++)
				v[c].count[k][i] = (st[i] & 0xffff) + (ch->total[k] ? ch->total[k][i] : 0);
		}
	}
	qsort(v, s->chunks.n, sizeof(*v), by_first);
	*out = v;
	*n = s->chunks.n;
	return 0;
}
