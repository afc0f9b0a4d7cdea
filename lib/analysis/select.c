// SPDX-License-Identifier: MIT
/* Parsing a selection: --from/--to (an interval or a time) and --range FIRST-LAST (select.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/select.h"
#include "hvmtrace/util.h"

static const struct {
	const char *suffix;
	double ns;
} time_units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};

static const char digits[] = "0123456789";

/* A decimal number with a unit: ns since the trace's start, below 2^63. */
static int parse_time(const char *s, uint64_t *ns)
{
	size_t whole = strspn(s, digits), frac = s[whole] == '.' ? strspn(s + whole + 1, digits) : 0;
	size_t len = whole + (s[whole] == '.') + frac;
	char num[64];

	if (!whole && !frac)
		return -EINVAL;
	if (len >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, len);
	num[len] = '\0';
	for (size_t i = 0; i < sizeof(time_units) / sizeof(time_units[0]); i++) {
		double v = strtod(num, NULL) * time_units[i].ns;

		if (strcmp(s + len, time_units[i].suffix))
			continue;
		if (!isfinite(v) || v >= 0x1p63)
			return -EINVAL;
		*ns = (uint64_t)llround(v);
		return 0;
	}
	return -EINVAL;
}

int hvt_point_parse(struct hvt_point *p, const char *s, struct hvt_err *err)
{
	uint64_t v;

	if (s && *s && !s[strspn(s, digits)]) {
		errno = 0;
		v = strtoull(s, NULL, 10);
		if (!errno) {
			*p = (struct hvt_point){HVT_POINT_INTERVAL, v};
			return 0;
		}
	} else if (s && !parse_time(s, &v)) {
		*p = (struct hvt_point){HVT_POINT_TIME, v};
		return 0;
	}
	return hvt_err_set(
	    err, -EINVAL,
	    "'%s' is neither an interval number nor a time such as 30s or 250ms (units ns, us, ms, s, m, h)",
	    s ? s : "");
}

/* A GFN of [s, stop): decimal digits, or 0x and hex digits. */
static int parse_gfn(const char *s, const char *stop, uint64_t *v)
{
	bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	const char *p = hex ? s + 2 : s;
	size_t n = strspn(p, hex ? "0123456789abcdefABCDEF" : digits);
	char *end;

	if (!n || p + n != stop)
		return -1;
	errno = 0;
	*v = strtoull(p, &end, hex ? 16 : 10);
	return errno || end != stop ? -1 : 0;
}

int hvt_gfn_range_parse(struct hvt_selection *sel, const char *s, struct hvt_err *err)
{
	const char *dash = s ? strchr(s, '-') : NULL;
	uint64_t first, last;

	if (!dash || parse_gfn(s, dash, &first) || parse_gfn(dash + 1, dash + 1 + strlen(dash + 1), &last))
		return hvt_err_set(err, -EINVAL,
				   "'%s' is not GFN-GFN with first <= last: two guest page frame numbers, "
				   "decimal or 0x-hex (e.g. 0x1000-0x1fff)",
				   s ? s : "");
	if (first > last)
		return hvt_err_set(err, -EINVAL,
				   "'%s' is not GFN-GFN with first <= last: the first is above the last", s);
	sel->gfns_given = true;
	sel->gfn_first = first;
	sel->gfn_last = last;
	return 0;
}

/* An option callback's answer: the parser's message is the problem. */
static int as_option(int rc, const struct hvt_err *err, char *problem, size_t len)
{
	if (rc)
		snprintf(problem, len, "%s", err->msg);
	return rc ? -1 : 0;
}

int hvt_select_opt_point(const struct hvt_option *opt, const char *arg, char *problem, size_t len)
{
	struct hvt_err err = {{0}};

	return as_option(hvt_point_parse(opt->value, arg, &err), &err, problem, len);
}

int hvt_select_opt_range(const struct hvt_option *opt, const char *arg, char *problem, size_t len)
{
	struct hvt_err err = {{0}};

	return as_option(hvt_gfn_range_parse(opt->value, arg, &err), &err, problem, len);
}

bool hvt_select_takes(const struct hvt_selection *sel, uint64_t seq, uint64_t start_ns, uint64_t end_ns,
		      bool *past)
{
	*past = (sel->to.kind == HVT_POINT_INTERVAL && seq > sel->to.value) ||
		(sel->to.kind == HVT_POINT_TIME && start_ns >= sel->to.value);
	if (*past)
		return false;
	if (sel->from.kind == HVT_POINT_INTERVAL && seq < sel->from.value)
		return false;
	if (sel->from.kind == HVT_POINT_TIME && end_ns <= sel->from.value)
		return false;
	return true;
}

/* A point as the user wrote it, near enough: "100" or "2500ms". */
static void point_text(const struct hvt_point *p, char *buf, unsigned len)
{
	if (p->kind == HVT_POINT_INTERVAL)
		snprintf(buf, len, "%llu", (unsigned long long)p->value);
	else if (p->value)
		hvt_format_duration(p->value, buf, len);
	else
		snprintf(buf, len, "0s");
}

int hvt_select_check(const struct hvt_selection *sel, struct hvt_err *err)
{
	char from[32], to[32];

	if (sel->from.kind == HVT_POINT_NONE || sel->from.kind != sel->to.kind ||
	    sel->from.value <= sel->to.value)
		return 0;
	point_text(&sel->from, from, sizeof(from));
	point_text(&sel->to, to, sizeof(to));
	return hvt_err_set(err, -EINVAL,
			   "--from %s --to %s select no interval: --from is after --to (reversed)", from, to);
}
