// SPDX-License-Identifier: MIT
/* Parsing a selection: --from/--to (an interval or a time) and --range GFN-GFN (analysis.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/analysis.h"
#include "hvmtrace/error.h"

static const struct {
	const char *suffix;
	double ns;
} time_units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};

int hvt_point_parse(struct hvt_point *p, const char *s, struct hvt_err *err)
{
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return hvt_err_set(err, -EINVAL,
				   "'%s' is neither an interval number nor a time such as 30s or 250ms",
				   s ? s : "");
	errno = 0;
	unsigned long long seq = strtoull(s, &end, 10);
	if (!*end && !errno) {
		*p = (struct hvt_point){HVT_POINT_INTERVAL, seq};
		return 0;
	}
	double v = strtod(s, &end);
	for (size_t i = 0; end != s && i < sizeof(time_units) / sizeof(time_units[0]); i++) {
		double ns = v * time_units[i].ns;

		if (strcmp(end, time_units[i].suffix))
			continue;
		if (!isfinite(ns) || ns < 0 || ns >= 0x1p63)
			break;
		*p = (struct hvt_point){HVT_POINT_TIME, (uint64_t)llround(ns)};
		return 0;
	}
	return hvt_err_set(
	    err, -EINVAL,
	    "'%s' is neither an interval number nor a time such as 30s or 250ms (units ns, us, ms, "
	    "s, m, h)",
	    s);
}

static int parse_gfn(const char *s, const char *stop, uint64_t *v)
{
	char *end;

	if (s == stop || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end != stop ? -1 : 0;
}

int hvt_gfn_range_parse(struct hvt_selection *sel, const char *s, struct hvt_err *err)
{
	const char *dash = s ? strchr(s, '-') : NULL;
	uint64_t first, last;

	if (!dash || parse_gfn(s, dash, &first) || parse_gfn(dash + 1, dash + 1 + strlen(dash + 1), &last))
		return hvt_err_set(
		    err, -EINVAL,
		    "--range '%s': expected FIRST-LAST, two guest page frame numbers (decimal or "
		    "0x-hex)",
		    s ? s : "");
	if (first > last)
		return hvt_err_set(err, -EINVAL, "--range '%s': the first GFN is above the last", s);
	sel->gfns_given = true;
	sel->gfn_first = first;
	sel->gfn_last = last;
	return 0;
}
