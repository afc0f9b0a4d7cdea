// SPDX-License-Identifier: MIT
/*
 * The channel probe's algorithm (see hvmtrace/probe.h). It only sees windows: what it drove and the CAS
 * counts of every channel over the window, so it runs unchanged on hardware, the model and a replay.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/probe.h"
#include "hvmtrace/error.h"

#define LINE 64u

struct label {
	uint64_t mask[HVT_PROBE_MAX_CHANNELS / 64]; /* the channels the lines went to; none: no signal */
};

/* What the measurements of one block (or one range) said: how many independent measurements were taken
 * and how many showed exactly the channel set decided on. */
struct evidence {
	unsigned seen, agree;
	bool split; /* a vote in which some member of the decided set did not rise in every pair */
};

struct block {
	uint64_t start, size;
	struct label label;
	bool known;
	bool measured;   /* by a window of its own (else its label was filled in from measured neighbours) */
	bool unresolved; /* measured, but its channel set stayed ambiguous, or a second look disagreed */
	struct evidence ev;
};

struct background {
	double mean[HVT_PROBE_MAX_CHANNELS], sd[HVT_PROBE_MAX_CHANNELS];
};

struct run {
	struct hvt_probe_backend *b;
	struct hvt_probe_params p;
	FILE *progress, *log;
	struct hvt_probe_stats *st;
	struct hvt_err *e;
	size_t nch;
	unsigned socket; /* where the toucher runs now */
	struct background rd, wr;
	struct block *blocks;
	size_t nblocks, cap, known;
	uint64_t last_progress;
};

enum verdict { LABELLED, NO_SIGNAL, AMBIGUOUS };

/*
 * The decision rule (docs/chanmap.md states it for users):
 * - a channel rose over a window when its count exceeds the baseline by more than RISE_SIGMA standard
 *   deviations of its background and by 1 % of the CAS driven; the baseline is its calibrated median, or
 *   in a vote the idle window just before (then the spread of a difference: √2 σ);
 * - a first window in which exactly one channel rose, by at least half the CAS driven, names that channel:
 *   other traffic only adds counts, so it cannot hide a member of an interleave set nor invent a lone
 *   channel;
 * - anything else goes to a vote: touch windows each between two idle windows (idle, touch, idle, touch,
 *   idle…), each touch compared with the mean of its two idle neighbours. A channel is in the set when it
 *   rose in VOTE_MARGIN more touches than it did not, out when the reverse; touches are added
 *   (VOTE_MIN_PAIRS to VOTE_MAX_PAIRS) until every channel is decided, else the block is ambiguous. A burst
 *   of someone else's traffic that spans the three windows cancels out; a channel that rose in either
 *   idle neighbour itself (against its calibrated background) votes "out" for that touch only if the
 *   touch window is at its background, else not at all, so a burst lasting several windows can cast at
 *   most one false vote: only one that begins and ends within the touch window can.
 */
#define RISE_SIGMA     6.0
#define VOTE_MIN_PAIRS 3u
#define VOTE_MAX_PAIRS 16u
#define VOTE_MARGIN    3

/* ---- labels ---- */

static void label_add(struct label *l, size_t c)
{
	l->mask[c / 64] |= 1ull << (c % 64);
}

static void label_del(struct label *l, size_t c)
{
	l->mask[c / 64] &= ~(1ull << (c % 64));
}

static bool label_has(const struct label *l, size_t c)
{
	return l->mask[c / 64] >> (c % 64) & 1;
}

static bool label_eq(const struct label *a, const struct label *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static size_t label_count(const struct label *l, size_t nch)
{
	size_t n = 0;
	for (size_t c = 0; c < nch; c++)
		n += label_has(l, c);
	return n;
}

static size_t label_first(const struct label *l, size_t nch)
{
	for (size_t c = 0; c < nch; c++)
		if (label_has(l, c))
			return c;
	return nch;
}

/* ---- windows ---- */

static int window(struct run *r, const char *phase, const struct hvt_probe_touch *t, uint64_t *rd,
		  uint64_t *wr)
{
	int rc = r->b->window(r->b, t, rd, wr, r->e);
	if (rc)
		return rc;
	if (r->log)
		hvt_probe_log_write_window(r->log, r->st->windows, phase, t, rd, wr, r->nch);
	r->st->windows++;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median and 1.4826 × median absolute deviation: a burst of someone else's traffic in an idle window must
 * not inflate the background (a mean and standard deviation would follow it). */
static void robust(double *v, unsigned k, double *mean, double *sd)
{
	qsort(v, k, sizeof(*v), cmp_double);
	double med = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
	for (unsigned i = 0; i < k; i++)
		v[i] = fabs(v[i] - med);
	qsort(v, k, sizeof(*v), cmp_double);
	double mad = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
	*mean = med;
	/* At least one count of spread: a silent channel must not make any single CAS significant. */
	*sd = fmax(1.4826 * mad, 1.0);
}

/* Idle counts that spread by more than a quarter of their level (and 1000 CAS) had someone else's traffic
 * in many of the windows: a burst lasting several windows can outlast the median. */
static bool disturbed(double mean, double sd)
{
	return sd > 0.25 * mean + 1000;
}

/*
 * The background: per channel the median and spread of calibration_windows idle windows. When a channel's
 * looks disturbed, up to CALIBRATION_ROUNDS rounds are taken and every channel keeps its quietest round.
 */
#define CALIBRATION_ROUNDS 3

static int calibrate(struct run *r)
{
	unsigned k = r->p.calibration_windows;
	double *v = calloc(2 * (size_t)k * r->nch, sizeof(double));
	uint64_t rd[HVT_PROBE_MAX_CHANNELS], wr[HVT_PROBE_MAX_CHANNELS];
	struct hvt_probe_touch idle = {HVT_PROBE_IDLE, 0, 0, 0, r->socket, r->p.window_ns};
	bool again = true;
	int rc = 0;

	if (!v)
		return hvt_err_set(r->e, -ENOMEM, "out of memory");
	for (unsigned round = 0; round < CALIBRATION_ROUNDS && again && !rc; round++) {
		/* v: per channel, k reads then k writes. */
		for (unsigned i = 0; i < k && !rc; i++) {
			if ((rc = window(r, "calibrate", &idle, rd, wr)))
				break;
			r->st->calibration++;
			for (size_t c = 0; c < r->nch; c++) {
				v[2 * k * c + i] = (double)rd[c];
				v[2 * k * c + k + i] = (double)wr[c];
			}
		}
		again = false;
		for (size_t c = 0; c < r->nch && !rc; c++) {
			double m, sd;
			robust(&v[2 * k * c], k, &m, &sd);
			if (!round || m + sd < r->rd.mean[c] + r->rd.sd[c])
				r->rd.mean[c] = m, r->rd.sd[c] = sd;
			robust(&v[2 * k * c + k], k, &m, &sd);
			if (!round || m + sd < r->wr.mean[c] + r->wr.sd[c])
				r->wr.mean[c] = m, r->wr.sd[c] = sd;
			again |=
			    disturbed(r->rd.mean[c], r->rd.sd[c]) || disturbed(r->wr.mean[c], r->wr.sd[c]);
		}
	}
	free(v);
	return rc;
}

/* reps so that the expected signal is ≥ 20 σ and ≥ 10× the mean background of every channel. */
static int size_reps(struct run *r)
{
	double need = 1, lines = (double)(r->p.sample_bytes / LINE);
	size_t worst = 0;

	for (size_t c = 0; c < r->nch; c++) {
		double n = fmax(fmax(20 * r->rd.sd[c], 10 * r->rd.mean[c]),
				fmax(20 * r->wr.sd[c], 10 * r->wr.mean[c]));
		if (n > need) {
			need = n;
			worst = c;
		}
	}
	unsigned reps = (unsigned)ceil(need / lines);
	if (reps < 1)
		reps = 1;
	if (r->p.reps) {
		r->st->reps = r->p.reps;
		return 0;
	}
	if (reps > 64)
		return hvt_err_set(
		    r->e, -EAGAIN,
		    "the background is too high to probe: channel %s counts %.0f reads and %.0f writes per %.0f ms idle window (sd %.0f/%.0f); stop other memory load, or raise --sample or --reps",
		    r->b->proto.channels[worst].id, r->rd.mean[worst], r->wr.mean[worst],
		    r->p.window_ns / 1e6, r->rd.sd[worst], r->wr.sd[worst]);
	r->st->reps = reps;
	return 0;
}

/*
 * The channels whose counts d rose over the window against their baseline: the calibrated median, or (base
 * not NULL) the counts of an idle window just before. Returns the sum of the rises.
 */
static double rises(const struct background *bg, const uint64_t *d, const uint64_t *base, size_t nch,
		    double expected, struct label *out)
{
	double total = 0;

	memset(out, 0, sizeof(*out));
	for (size_t c = 0; c < nch; c++) {
		double x = (double)d[c] - (base ? (double)base[c] : bg->mean[c]);
		if (x > fmax(RISE_SIGMA * bg->sd[c] * (base ? M_SQRT2 : 1), 0.01 * expected)) {
			label_add(out, c);
			total += x;
		}
	}
	return total;
}

static unsigned label_socket(const struct run *r, const struct label *l, bool *one)
{
	size_t first = label_first(l, r->nch);
	unsigned s = first < r->nch ? r->b->proto.channels[first].socket : r->socket;

	*one = true;
	for (size_t c = first; c < r->nch; c++)
		if (label_has(l, c) && r->b->proto.channels[c].socket != s)
			*one = false;
	return s;
}

/* The vote (see the decision rule above) after a first window that showed first. */
static int vote(struct run *r, const char *phase, enum hvt_probe_dir dir, uint64_t hpa, uint64_t bytes,
		const struct label *first, struct label *out, enum verdict *v, struct evidence *ev)
{
	uint64_t rd[3][HVT_PROBE_MAX_CHANNELS], wr[3][HVT_PROBE_MAX_CHANNELS], base[HVT_PROBE_MAX_CHANNELS];
	const struct background *bg = dir == HVT_PROBE_WRITE ? &r->wr : &r->rd;
	/* A wide set shares the touch among its members: a bigger touch keeps each member's share at least
	 * what a 4-way set's would be… */
	size_t nset = label_count(first, r->nch);
	unsigned reps = r->st->reps * (unsigned)((nset + 3) / 4);
	/* …and at least 3 × a vote's threshold on the noisiest of them. */
	double sd = 0;
	for (size_t c = 0; c < r->nch; c++)
		if (label_has(first, c))
			sd = fmax(sd, bg->sd[c]);
	double need = 3 * RISE_SIGMA * M_SQRT2 * sd * (double)nset / (double)(bytes / LINE);
	if (need > reps)
		reps = (unsigned)fmin(ceil(need), 64.0 * r->st->reps);
	double expected = (double)(bytes / LINE) * reps;
	int margin[HVT_PROBE_MAX_CHANNELS] = {0};
	unsigned missed[HVT_PROBE_MAX_CHANNELS] = {0};
	struct label pair[VOTE_MAX_PAIRS];
	struct hvt_probe_touch idle = {HVT_PROBE_IDLE, 0, 0, 0, r->socket, r->p.window_ns};
	struct hvt_probe_touch t = {dir, hpa, bytes, reps, r->socket, r->p.window_ns};
	unsigned n = 0;
	bool decided = false;
	char ph[48], phi[48];
	int rc;

	snprintf(ph, sizeof(ph), "%s-vote", phase);
	snprintf(phi, sizeof(phi), "%s-vote-idle", phase);
	/* idle, touch, idle, touch, idle…: every touch window between two idle ones. */
	if ((rc = window(r, phi, &idle, rd[0], wr[0])))
		return rc;
	r->st->retries++;
	while (n < VOTE_MAX_PAIRS && !decided) {
		if ((rc = window(r, ph, &t, rd[1], wr[1])) || (rc = window(r, phi, &idle, rd[2], wr[2])))
			return rc;
		r->st->retries += 2;
		const uint64_t *before = dir == HVT_PROBE_WRITE ? wr[0] : rd[0],
			       *d = dir == HVT_PROBE_WRITE ? wr[1] : rd[1],
			       *after = dir == HVT_PROBE_WRITE ? wr[2] : rd[2];
		struct label busy_before, busy_after, bare; /* above the calibrated background */
		for (size_t c = 0; c < r->nch; c++)
			base[c] = (before[c] + after[c]) / 2;
		rises(bg, d, base, r->nch, expected, &pair[n]);
		rises(bg, before, NULL, r->nch, expected, &busy_before);
		rises(bg, after, NULL, r->nch, expected, &busy_after);
		rises(bg, d, NULL, r->nch, expected, &bare);
		decided = ++n >= VOTE_MIN_PAIRS;
		for (size_t c = 0; c < r->nch; c++) {
			bool up = label_has(&pair[n - 1], c);
			/* Someone else's traffic in an idle window spoils the baseline: only a touch window
			 * at the channel's background still says "not this channel". */
			if ((label_has(&busy_before, c) || label_has(&busy_after, c)) &&
			    (up || label_has(&bare, c))) {
				label_del(&pair[n - 1], c);
				if (label_has(&bare, c))
					label_add(&pair[n - 1], c);
			} else {
				margin[c] += up ? 1 : -1;
				missed[c] += !up;
			}
			decided &= abs(margin[c]) >= VOTE_MARGIN;
		}
		memcpy(rd[0], rd[2], sizeof(rd[0]));
		memcpy(wr[0], wr[2], sizeof(wr[0]));
	}
	memset(out, 0, sizeof(*out));
	bool ambiguous = false;
	for (size_t c = 0; c < r->nch; c++) {
		if (margin[c] >= VOTE_MARGIN)
			label_add(out, c);
		ambiguous |= abs(margin[c]) < VOTE_MARGIN;
	}
	ev->seen += 1 + n;
	ev->agree += label_eq(first, out);
	for (unsigned k = 0; k < n; k++)
		ev->agree += label_eq(&pair[k], out);
	for (size_t c = 0; c < r->nch; c++)
		ev->split |= label_has(out, c) && missed[c];
	*v = ambiguous ? AMBIGUOUS : label_count(out, r->nch) ? LABELLED : NO_SIGNAL;
	return 0;
}

/*
 * Drives [hpa, hpa+bytes) in direction dir and decides which channels its lines went to (the decision rule
 * above). When the lines belong to another socket the window is repeated from a CPU there, so the result
 * never includes remote-access side effects (directory writes). ev gets the measurements and their
 * agreement; *v whether a set was decided (out), nothing arrived, or the set stayed ambiguous.
 */
static int measure(struct run *r, const char *phase, enum hvt_probe_dir dir, uint64_t hpa, uint64_t bytes,
		   struct label *out, enum verdict *v, struct evidence *ev)
{
	uint64_t rd[HVT_PROBE_MAX_CHANNELS], wr[HVT_PROBE_MAX_CHANNELS];
	const struct background *bg = dir == HVT_PROBE_WRITE ? &r->wr : &r->rd;
	bool moved = false;
	char ph[48];

	memset(out, 0, sizeof(*out));
	bytes -= bytes % LINE;
	double expected = (double)(bytes / LINE) * r->st->reps;
	for (unsigned attempt = 0;;) {
		struct hvt_probe_touch t = {dir, hpa, bytes, r->st->reps, r->socket, r->p.window_ns};
		struct label l;
		bool one;
		int rc;

		snprintf(ph, sizeof(ph), "%s%s", phase, attempt ? "-retry" : moved ? "-socket" : "");
		if ((rc = window(r, ph, &t, rd, wr)))
			return rc;
		double total = rises(bg, dir == HVT_PROBE_WRITE ? wr : rd, NULL, r->nch, expected, &l);
		if (label_count(&l, r->nch) && total >= 0.5 * expected) {
			unsigned s = label_socket(r, &l, &one);
			if (one && s != r->socket && !moved) {
				r->socket = s;
				r->st->socket_moves++;
				moved = true;
				continue; /* not a retry: the same question, asked from the right socket */
			}
			if (label_count(&l, r->nch) == 1) {
				*out = l;
				ev->seen++;
				ev->agree++;
				*v = LABELLED;
				return 0;
			}
			return vote(r, phase, dir, hpa, bytes, &l, out, v, ev);
		}
		ev->seen++;
		if (attempt++ >= r->p.max_retries) {
			*v = NO_SIGNAL;
			return 0;
		}
		r->st->retries++;
	}
}

/* ---- blocks ---- */

static int make_blocks(struct run *r)
{
	const uint64_t g = r->p.granule;

	for (size_t i = 0; i < r->b->ntouchable; i++) {
		const struct hvt_range *t = &r->b->touchable[i];
		for (uint64_t a = t->start; a < t->start + t->size;) {
			uint64_t end = (a / g + 1) * g;
			if (end > t->start + t->size)
				end = t->start + t->size;
			if (r->nblocks == r->cap) { /* grown geometrically: a big host has thousands */
				size_t cap = r->cap ? 2 * r->cap : 256;
				struct block *n = realloc(r->blocks, cap * sizeof(*n));
				if (!n)
					return hvt_err_set(r->e, -ENOMEM, "out of memory");
				r->blocks = n;
				r->cap = cap;
			}
			r->blocks[r->nblocks++] = (struct block){.start = a, .size = end - a};
			a = end;
		}
	}
	r->st->blocks = r->nblocks;
	return 0;
}

static void progress(struct run *r, bool force)
{
	if (!r->progress || (!force && r->st->windows - r->last_progress < 256))
		return;
	r->last_progress = r->st->windows;
	fprintf(r->progress,
		"chanmap probe: %zu/%zu blocks of %" PRIu64 " MiB known, %" PRIu64
		" windows (%.1f s at %.0f ms)\n",
		r->known, r->nblocks, r->p.granule >> 20, r->st->windows,
		r->st->windows * (double)r->p.window_ns / 1e9, r->p.window_ns / 1e6);
	fflush(r->progress);
}

static int probe_block(struct run *r, size_t i, const char *phase)
{
	struct block *b = &r->blocks[i];
	uint64_t n = b->size < r->p.sample_bytes ? b->size : r->p.sample_bytes;
	enum verdict v;
	int rc = measure(r, phase, HVT_PROBE_READ, b->start, n, &b->label, &v, &b->ev);

	if (rc)
		return rc;
	b->known = b->measured = true;
	b->unresolved = v == AMBIGUOUS;
	if (b->unresolved)
		memset(&b->label, 0, sizeof(b->label));
	r->known++;
	r->st->blocks_measured++;
	if (!strcmp(phase, "coarse"))
		r->st->coarse++;
	else
		r->st->bisection++;
	progress(r, false);
	return 0;
}

/* Labels the blocks strictly between i and j (both known, in one touchable range): the same label on both
 * sides fills the gap (ranges are contiguous without interleave); a change is bisected. */
static int fill(struct run *r, size_t i, size_t j)
{
	if (j - i <= 1)
		return 0;
	/* An ambiguous end vouches for nothing: bisect towards it. */
	if (!r->blocks[i].unresolved && !r->blocks[j].unresolved &&
	    label_eq(&r->blocks[i].label, &r->blocks[j].label)) {
		for (size_t k = i + 1; k < j; k++) {
			r->blocks[k].label = r->blocks[i].label;
			r->blocks[k].known = true;
		}
		r->known += j - i - 1;
		return 0;
	}
	size_t m = i + (j - i) / 2;
	int rc = probe_block(r, m, "bisect");
	if (!rc)
		rc = fill(r, i, m);
	return rc ? rc : fill(r, m, j);
}

static int probe_range(struct run *r, size_t first, size_t last)
{
	size_t k = r->p.step_bytes / r->p.granule, prev;
	int rc;

	if (k < 1)
		k = 1;
	if ((rc = probe_block(r, first, "coarse")))
		return rc;
	prev = first;
	while (prev < last) {
		size_t next = prev + k < last ? prev + k : last;
		if ((rc = probe_block(r, next, "coarse")) || (rc = fill(r, prev, next)))
			return rc;
		prev = next;
	}
	return 0;
}

/* ---- the map ---- */

static int copy_proto(const struct hvt_chanmap *p, struct hvt_chanmap *m, struct hvt_err *e)
{
	hvt_chanmap_init(m);
	memcpy(m->created, p->created, sizeof(m->created));
	memcpy(m->source, p->source, sizeof(m->source));
	m->host = p->host;
	m->cpu = p->cpu;
	m->sockets = p->sockets;
	m->probe = p->probe;
	for (size_t i = 0; i < p->nchannels; i++) {
		int rc = hvt_chanmap_add_channel(m, &p->channels[i], e);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- the second look ---- */

static bool contiguous(const struct run *r, size_t i)
{
	return i + 1 < r->nblocks && r->blocks[i].start + r->blocks[i].size == r->blocks[i + 1].start;
}

static bool multi(const struct run *r, size_t i)
{
	return !r->blocks[i].unresolved && label_count(&r->blocks[i].label, r->nch) > 1;
}

/* Block i's label is in doubt: it and the blocks whose labels were filled in from it are unresolved. */
static void dispute(struct run *r, size_t i)
{
	r->blocks[i].unresolved = true;
	for (size_t k = i; k > 0 && contiguous(r, k - 1) && !r->blocks[k - 1].measured; k--)
		r->blocks[k - 1].unresolved = true;
	for (size_t k = i; contiguous(r, k) && !r->blocks[k + 1].measured; k++)
		r->blocks[k + 1].unresolved = true;
}

/*
 * The verification pass: every block on either side of a boundary, and the first, middle and last block of
 * every interleaved region, is measured again from scratch; an answer that differs from the first (or
 * stays ambiguous) leaves the block, and what was inferred from it, unresolved.
 */
static int verify(struct run *r)
{
	bool *again = calloc(r->nblocks ? r->nblocks : 1, sizeof(*again));
	int rc = 0;

	if (!again)
		return hvt_err_set(r->e, -ENOMEM, "out of memory");
	for (size_t i = 0; i < r->nblocks; i++) {
		if (contiguous(r, i) && (r->blocks[i].unresolved != r->blocks[i + 1].unresolved ||
					 !label_eq(&r->blocks[i].label, &r->blocks[i + 1].label)))
			again[i] = again[i + 1] = true;
		if (multi(r, i) && (i == 0 || !contiguous(r, i - 1) ||
				    !label_eq(&r->blocks[i - 1].label, &r->blocks[i].label))) {
			size_t last = i;
			while (contiguous(r, last) && multi(r, last + 1) &&
			       label_eq(&r->blocks[last + 1].label, &r->blocks[i].label))
				last++;
			again[i] = again[(i + last) / 2] = again[last] = true;
		}
	}
	for (size_t i = 0; i < r->nblocks && !rc; i++) {
		struct block *b = &r->blocks[i];
		struct label l;
		enum verdict v;

		if (!again[i] || b->unresolved || !label_count(&b->label, r->nch))
			continue;
		rc = measure(r, "verify", HVT_PROBE_READ, b->start,
			     b->size < r->p.sample_bytes ? b->size : r->p.sample_bytes, &l, &v, &b->ev);
		r->st->verified++;
		b->measured = true;
		if (!rc && (v != LABELLED || !label_eq(&l, &b->label)))
			dispute(r, i);
	}
	free(again);
	return rc;
}

/*
 * An interleave that spans sockets, or names a channel with no memory of its own anywhere in the map, is
 * what a burst of other traffic would fake: it stands only if every member rose in every pair of every vote
 * on the region.
 */
static void check_unusual_interleaves(struct run *r)
{
	bool own[HVT_PROBE_MAX_CHANNELS] = {0};

	for (size_t i = 0; i < r->nblocks; i++)
		if (!r->blocks[i].unresolved && label_count(&r->blocks[i].label, r->nch) == 1)
			own[label_first(&r->blocks[i].label, r->nch)] = true;
	for (size_t i = 0; i < r->nblocks;) {
		size_t last = i;
		if (!multi(r, i)) {
			i++;
			continue;
		}
		while (contiguous(r, last) && multi(r, last + 1) &&
		       label_eq(&r->blocks[last + 1].label, &r->blocks[i].label))
			last++;
		bool one, unusual = false, split = false;
		label_socket(r, &r->blocks[i].label, &one);
		unusual = !one;
		for (size_t c = 0; c < r->nch; c++)
			unusual |= label_has(&r->blocks[i].label, c) && !own[c];
		for (size_t k = i; k <= last; k++)
			split |= r->blocks[k].ev.split;
		for (size_t k = i; unusual && split && k <= last; k++)
			r->blocks[k].unresolved = true;
		i = last + 1;
	}
}

/* ---- the map ---- */

/* The share of the measurements in [start, start+size) that showed exactly the reported channel set. */
static double confidence(const struct run *r, uint64_t start, uint64_t size)
{
	unsigned seen = 0, agree = 0;
	for (size_t i = 0; i < r->nblocks; i++)
		if (r->blocks[i].start >= start && r->blocks[i].start < start + size) {
			seen += r->blocks[i].ev.seen;
			agree += r->blocks[i].ev.agree;
		}
	return seen ? (double)agree / seen : 0;
}

static int build_map(struct run *r, struct hvt_chanmap *m)
{
	int rc = copy_proto(&r->b->proto, m, r->e);

	for (size_t i = 0; i < r->nblocks && rc >= 0; i++) {
		const struct block *b = &r->blocks[i];
		size_t n = label_count(&b->label, r->nch);
		if (b->unresolved) {
			if (!r->st->unresolved_bytes)
				r->st->first_unresolved = b->start;
			r->st->unresolved_bytes += b->size;
		} else if (n == 0) {
			if (!r->st->unattributed_bytes)
				r->st->first_unattributed = b->start;
			r->st->unattributed_bytes += b->size;
		} else if (n == 1) {
			rc = hvt_chanmap_add_range(m, label_first(&b->label, r->nch), b->start, b->size);
		} else {
			unsigned ch[HVT_PROBE_MAX_CHANNELS], k = 0;
			for (size_t c = 0; c < r->nch; c++)
				if (label_has(&b->label, c))
					ch[k++] = (unsigned)c;
			rc = hvt_chanmap_add_interleave(m, b->start, b->size, ch, k);
		}
	}
	for (size_t c = 0; c < m->nchannels && rc >= 0; c++)
		for (size_t i = 0; i < m->channels[c].nranges && rc >= 0; i++)
			rc = hvt_chanmap_set_confidence(
			    m, c, i,
			    confidence(r, m->channels[c].ranges[i].start, m->channels[c].ranges[i].size));
	for (size_t i = 0; i < m->ninterleaved; i++)
		m->interleaved[i].confidence =
		    confidence(r, m->interleaved[i].range.start, m->interleaved[i].range.size);
	return rc < 0 ? hvt_err_set(r->e, rc, "out of memory") : 0;
}

static void describe(const struct run *r, const struct label *l, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t c = 0; c < r->nch && used + 2 < len; c++)
		if (label_has(l, c))
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "",
						 r->b->proto.channels[c].id);
	if (!used)
		snprintf(buf, len, "no channel");
}

/*
 * One write window at the start of every channel range about to be reported: the write counters must rise
 * on the channel the reads named. A write check that stays ambiguous leaves its block unresolved.
 */
static int write_checks(struct run *r)
{
	for (size_t i = 0; i < r->nblocks; i++) {
		struct block *b = &r->blocks[i];
		if (b->unresolved || label_count(&b->label, r->nch) != 1 ||
		    (i && contiguous(r, i - 1) && !r->blocks[i - 1].unresolved &&
		     label_eq(&r->blocks[i - 1].label, &b->label)))
			continue;
		size_t c = label_first(&b->label, r->nch);
		struct label l;
		struct evidence ev = {0};
		enum verdict v;
		int rc = measure(r, "write-check", HVT_PROBE_WRITE, b->start,
				 b->size < r->p.sample_bytes ? b->size : r->p.sample_bytes, &l, &v, &ev);
		if (rc)
			return rc;
		r->st->write_checks++;
		if (v == AMBIGUOUS) {
			dispute(r, i);
			continue;
		}
		if (label_count(&l, r->nch) != 1 || label_first(&l, r->nch) != c) {
			char got[256];
			describe(r, &l, got, sizeof(got));
			return hvt_err_set(
			    r->e, -EPROTO,
			    "write check failed: reads of 0x%" PRIx64
			    " rose on %s's counters, non-temporal writes there on %s's: the PMU's read/write events or its channel numbering are inconsistent",
			    b->start, r->b->proto.channels[c].id, got);
		}
	}
	return 0;
}

static void advise(struct hvt_chanmap *m)
{
	bool sockets = false, controllers = false;
	if (!m->ninterleaved)
		return;
	for (size_t i = 0; i < m->ninterleaved; i++) {
		const struct hvt_chanmap_interleave *il = &m->interleaved[i];
		const struct hvt_chanmap_channel *a = &m->channels[il->channels[0]];
		for (size_t j = 1; j < il->nchannels; j++) {
			const struct hvt_chanmap_channel *b = &m->channels[il->channels[j]];
			sockets |= b->socket != a->socket;
			controllers |= b->socket == a->socket && b->controller != a->controller;
		}
	}
	snprintf(
	    m->advice, sizeof(m->advice),
	    "%zu region(s) are interleaved across %s, so their bandwidth cannot be told apart per channel. In the BIOS set %s%s, keep NUMA enabled, then reboot and probe again.",
	    m->ninterleaved,
	    sockets       ? "sockets"
	    : controllers ? "memory controllers"
			  : "the channels of a controller",
	    sockets ? "NUMA on (no socket/node interleave), " : "",
	    controllers || sockets
		? "IMC (memory controller) interleaving to 1-way and channel interleaving to 1-way"
		: "channel interleaving to 1-way");
}

void hvt_probe_default_params(struct hvt_probe_params *p)
{
	*p = (struct hvt_probe_params){
	    .window_ns = 20000000,
	    .sample_bytes = 2ull << 20,
	    .step_bytes = 1ull << 30,
	    .granule = HVT_CHANMAP_GRANULE,
	    .calibration_windows = 20,
	    .reps = 0,
	    .max_retries = 3,
	    .write_check = true,
	};
}

static int check_params(const struct hvt_probe_params *p, struct hvt_err *e)
{
	if (!p->window_ns || !p->calibration_windows || p->calibration_windows > 10000)
		return hvt_err_set(e, -EINVAL,
				   "the window length and calibration windows (1-10000) must be set");
	if (p->granule < 4096 || p->granule & (p->granule - 1))
		return hvt_err_set(e, -EINVAL, "granule %" PRIu64 " is not a power of two ≥ 4 KiB",
				   p->granule);
	if (p->sample_bytes < LINE || p->sample_bytes > p->granule || p->sample_bytes % LINE)
		return hvt_err_set(e, -EINVAL,
				   "sample %" PRIu64
				   " bytes must be a multiple of 64 and at most the granule (%" PRIu64 ")",
				   p->sample_bytes, p->granule);
	if (p->step_bytes < p->granule || p->step_bytes % p->granule)
		return hvt_err_set(e, -EINVAL, "step %" PRIu64 " must be a multiple of the granule %" PRIu64,
				   p->step_bytes, p->granule);
	return 0;
}

int hvt_probe_run(struct hvt_probe_backend *b, const struct hvt_probe_params *params, FILE *prog, FILE *log,
		  struct hvt_chanmap *out, struct hvt_probe_stats *st, struct hvt_err *e)
{
	struct run *r = calloc(1, sizeof(*r));
	int rc;

	hvt_chanmap_init(out);
	memset(st, 0, sizeof(*st));
	if (!r)
		return hvt_err_set(e, -ENOMEM, "out of memory");
	*r = (struct run){.b = b,
			  .p = b->fixed_params ? *b->fixed_params : *params,
			  .progress = prog,
			  .log = log,
			  .st = st,
			  .e = e,
			  .nch = b->proto.nchannels};
	if ((rc = check_params(&r->p, e)))
		goto out;
	if (r->nch == 0 || r->nch > HVT_PROBE_MAX_CHANNELS) {
		rc = hvt_err_set(e, -EINVAL, "%s has %zu channels (1-%d supported)", b->proto.source, r->nch,
				 HVT_PROBE_MAX_CHANNELS);
		goto out;
	}
	if (b->ntouchable == 0) {
		rc = hvt_err_set(e, -ENOENT, "%s offers no memory to probe", b->proto.source);
		goto out;
	}
	if (log && (rc = hvt_probe_log_write_header(log, b, &r->p)))
		goto out;
	if ((rc = make_blocks(r)) || (rc = calibrate(r)) || (rc = size_reps(r)))
		goto out;
	if (prog)
		fprintf(
		    prog,
		    "chanmap probe: %s; %zu channels, %zu blocks; background calibrated over %u windows; driving %" PRIu64
		    " KiB × %u per block\n",
		    b->proto.source, r->nch, r->nblocks, r->p.calibration_windows, r->p.sample_bytes >> 10,
		    st->reps);
	for (size_t i = 0, first = 0; i < r->nblocks; i++) {
		bool range_ends =
		    i + 1 == r->nblocks || r->blocks[i].start + r->blocks[i].size != r->blocks[i + 1].start;
		if (!range_ends)
			continue;
		if ((rc = probe_range(r, first, i)))
			goto out;
		first = i + 1;
	}
	progress(r, true);
	if ((rc = verify(r)) || (r->p.write_check && (rc = write_checks(r))))
		goto out;
	check_unusual_interleaves(r);
	if ((rc = build_map(r, out)))
		goto out;
	advise(out);
	st->implied_seconds = st->windows * (double)r->p.window_ns / 1e9;
	out->probe.window_ns = r->p.window_ns;
	out->probe.sample_bytes = r->p.sample_bytes;
	out->probe.step_bytes = r->p.step_bytes;
	out->probe.granule_bytes = r->p.granule;
	out->probe.reps = st->reps;
	out->probe.calibration_windows = r->p.calibration_windows;
	out->probe.windows = st->windows;
	out->probe.implied_seconds = st->implied_seconds;
	for (size_t i = 0; i < b->ntouchable; i++)
		out->probe.probed_bytes += b->touchable[i].size;
	rc = hvt_chanmap_validate(out, e);
out:
	if (rc)
		hvt_chanmap_free(out);
	free(r->blocks);
	free(r);
	return rc;
}
