// SPDX-License-Identifier: MIT
/* Phase detection (analysis.h): where a series changes level. */
#include <math.h>

#include "hvmtrace/analysis.h"

const struct hvt_phase_opts hvt_phase_defaults = {.span = 3, .rel = 0.3, .floor = 1};

/* Mean of up to span valid values walking from k by step (-1: before k, +1: from k on); NAN if none. */
static double side_mean(const uint64_t *x, uint64_t n, uint64_t k, int step, uint32_t span)
{
	double sum = 0;
	uint32_t got = 0;

	for (int64_t i = step < 0 ? (int64_t)k - 1 : (int64_t)k; i >= 0 && (uint64_t)i < n && got < span;
	     i += step)
		if (x[i] != HVT_NA) {
			sum += (double)x[i];
			got++;
		}
	return got ? sum / got : NAN;
}

/* The change between the span before k and the span from `from` on, or 0 when it is not one by the rules. */
static double change(const uint64_t *x, uint64_t n, uint64_t k, uint64_t from, const struct hvt_phase_opts *o)
{
	double before = side_mean(x, n, k, -1, o->span), after = side_mean(x, n, from, +1, o->span), d;

	if (isnan(before) || isnan(after))
		return 0;
	d = fabs(after - before);
	return d >= o->rel * fmax(before, after) && d >= o->floor && d > 0 ? d : 0;
}

/* A new level from k on: the change from the span before k to the span from k on (0: none). */
static double step_at(const uint64_t *x, uint64_t n, uint64_t k, const struct hvt_phase_opts *o)
{
	return k < n && x[k] != HVT_NA ? change(x, n, k, k, o) : 0;
}

/*
 * The level change at k, or 0 when it is not one by the rules: a step at k, or else a level that changed
 * during interval k, which then holds a value between the old level and the new. Such an interval sits in
 * the span of both k and k + 1 and can dilute either change below `rel` (a step from 2 to 3 arrays' pages,
 * the array program's copy→add, went unseen when the interval of the switch accessed 20–70 % of the new
 * array's pages), so when neither k nor k + 1 is a step, k is compared as a transition: the span before it
 * against the span after it.
 */
static double score(const uint64_t *x, uint64_t n, uint64_t k, const struct hvt_phase_opts *o)
{
	double s = step_at(x, n, k, o), before, after, v;

	if (s > 0 || x[k] == HVT_NA || step_at(x, n, k + 1, o) > 0)
		return s;
	before = side_mean(x, n, k, -1, o->span);
	after = side_mean(x, n, k + 1, +1, o->span);
	v = (double)x[k];
	if (!(fmin(before, after) < v && v < fmax(before, after))) /* false with a NAN side */
		return 0;
	return change(x, n, k, k + 1, o);
}

uint64_t hvt_phases_detect(const uint64_t *series, uint64_t n, const struct hvt_phase_opts *o, uint64_t *out)
{
	uint64_t found = 0;
	uint32_t span;

	o = o ? o : &hvt_phase_defaults;
	span = o->span ? o->span : 1;
	for (uint64_t k = 1; k < n; k++) {
		double s = score(series, n, k, o);
		bool best = s > 0;

		/* the largest change within span of k; ties go to the earliest */
		for (uint64_t j = k > span - 1 ? k - (span - 1) : 1; best && j < k + span && j < n; j++)
			if (j != k && (score(series, n, j, o) > s || (j < k && score(series, n, j, o) == s)))
				best = false;
		if (best)
			out[found++] = k;
	}
	return found;
}
