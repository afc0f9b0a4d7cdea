// SPDX-License-Identifier: MIT
/*
 * check_array_report: holds `hvmtrace report --json` of a trace of the array payload (tests/vmm/script.c:
 * "copy" writes c reading a, then "add" writes c reading a and b) to its phase log (tests/tools/qemu_phases),
 * the analyses' e2e truth in mode ad (docs/analyses.md, "Tested against truth").
 *
 *   check_array_report range --phase-log LOG --trace TRACE
 *       prints "FIRST LAST": the seqs of the intervals that lie wholly inside the two phases (from the copy
 *       phase's confirmed start to the earliest the payload can have stopped), for report --from/--to.
 *   check_array_report check --phase-log LOG --trace TRACE --report ALL.json --pages PAGES.json
 *       ALL.json: report --json of the whole trace; PAGES.json: report --json --pages over the range above.
 *       Holds that every page of c is write-heavy and every page of a read-mostly (at the thresholds
 *       PAGES.json states), and that .phases.accessed has a boundary within one interval of the logged
 *       copy→add switch: the switch happened in [E, T] (the log's t_earliest_ns, t_ns), and a boundary k
 *       (a new level from interval k on) counts when m(E) <= k <= m(T) + 1, m(t) being the first interval
 *       that ends after t (the interval the switch falls into, or the one after the gap it falls into).
 *
 * The intervals' times come from the trace (report's are relative to its start; the log's, like the
 * trace's, are CLOCK_MONOTONIC). The arrays are read from the log's script line: a = copy's read range, c =
 * copy's write range of the same length (the other write is the ack page), b = add's read range other than a.
 * Prints one summary line last. Exit 0 when all holds, 1 when something does not, 2 on bad input.
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "hvmtrace/options.h"
#include "hvmtrace/trace.h"

struct range {
	uint64_t first, count;
};

struct log {
	struct range a, b, c;
	uint64_t copy_t;             /* the copy phase surely ran from here */
	uint64_t switch_e, switch_t; /* the add phase began in [switch_e, switch_t] */
	uint64_t done_e;             /* the payload ran its phases at least until here */
	bool copy, add, done;
};

struct ivl {
	uint64_t seq, t_start, t_end; /* ns */
};

__attribute__((noreturn, format(printf, 2, 3))) static void bad(const char *file, const char *fmt, ...);
static void bad(const char *file, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "check_array_report: %s: ", file);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static struct json_object *get(struct json_object *o, const char *key, const char *file)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		bad(file, "no \"%s\"", key);
	return v;
}

/* The ranges [[first, count(, stride 1)], …] of a phase's list. */
static size_t ranges(struct json_object *arr, struct range *out, size_t cap, const char *file)
{
	size_t n = arr ? json_object_array_length(arr) : 0;

	if (n > cap)
		bad(file, "a phase of the array payload has more than %zu ranges", cap);
	for (size_t i = 0; i < n; i++) {
		struct json_object *r = json_object_array_get_idx(arr, i);

		if (json_object_array_length(r) < 2 ||
		    (json_object_array_length(r) > 2 &&
		     json_object_get_int64(json_object_array_get_idx(r, 2)) != 1))
			bad(file, "a range of the array payload is not [first, count(, 1)]");
		out[i].first = (uint64_t)json_object_get_int64(json_object_array_get_idx(r, 0));
		out[i].count = (uint64_t)json_object_get_int64(json_object_array_get_idx(r, 1));
	}
	return n;
}

static void script_arrays(struct json_object *o, struct log *lg, const char *file)
{
	struct json_object *phases = get(o, "phases", file), *p0, *p1, *v;
	struct range w[4], r0[4], r1[4];
	size_t nw, nr0, nr1, found = 0;

	if (json_object_array_length(phases) != 2)
		bad(file, "not the array payload's log (it has two phases, copy and add)");
	p0 = json_object_array_get_idx(phases, 0);
	p1 = json_object_array_get_idx(phases, 1);
	nw = ranges(json_object_object_get_ex(p0, "write", &v) ? v : NULL, w, 4, file);
	nr0 = ranges(json_object_object_get_ex(p0, "read", &v) ? v : NULL, r0, 4, file);
	nr1 = ranges(json_object_object_get_ex(p1, "read", &v) ? v : NULL, r1, 4, file);
	if (nr0 != 1 || nr1 != 2)
		bad(file, "not the array payload's log (copy reads a, add reads a and b)");
	lg->a = r0[0];
	for (size_t i = 0; i < nw; i++)
		if (w[i].count == lg->a.count) {
			lg->c = w[i];
			found++;
		}
	for (size_t i = 0; i < nr1; i++)
		if (r1[i].first != lg->a.first)
			lg->b = r1[i];
	if (found != 1 || !lg->b.count || lg->b.count != lg->a.count)
		bad(file, "not the array payload's log (arrays a, b and c of one size)");
}

static uint64_t u64(struct json_object *o, const char *key, const char *file)
{
	return (uint64_t)json_object_get_int64(get(o, key, file));
}

static void read_log(const char *file, struct log *lg)
{
	FILE *f = fopen(file, "r");
	char *buf = NULL;
	size_t cap = 0;
	bool script = false;

	if (!f)
		bad(file, "cannot open it");
	memset(lg, 0, sizeof(*lg));
	while (getline(&buf, &cap, f) > 0) {
		struct json_object *o = json_tokener_parse(buf), *v;
		const char *type;

		if (!o || !json_object_object_get_ex(o, "type", &v))
			bad(file, "a line that is not a phase-log object");
		type = json_object_get_string(v);
		if (!strcmp(type, "script")) {
			script_arrays(o, lg, file);
			script = true;
		} else if (!strcmp(type, "phase") || !strcmp(type, "done")) {
			uint64_t t = u64(o, "t_ns", file), e = t;

			if (json_object_object_get_ex(o, "t_earliest_ns", &v))
				e = (uint64_t)json_object_get_int64(v);
			if (!strcmp(type, "done")) {
				lg->done_e = e;
				lg->done = true;
			} else if (u64(o, "index", file) == 0) {
				lg->copy_t = t;
				lg->copy = true;
			} else {
				lg->switch_e = e;
				lg->switch_t = t;
				lg->add = true;
			}
		}
		json_object_put(o);
	}
	free(buf);
	fclose(f);
	if (!script || !lg->copy || !lg->add || !lg->done)
		bad(file, "the run did not log its script, both phases and its end");
}

static struct json_object *read_json(const char *file)
{
	struct json_object *o = json_object_from_file(file);

	if (!o)
		bad(file, "not JSON");
	return o;
}

/* The trace's intervals, times as recorded; n set. */
static struct ivl *intervals(const char *file, size_t *n)
{
	struct hvt_trace_reader *r;
	struct hvt_err err = {{0}};
	struct ivl *v;

	if (hvt_trace_open(&r, file, &err))
		bad(file, "%s", err.msg);
	*n = hvt_trace_interval_count(r);
	if (!*n || !(v = calloc(*n, sizeof(*v))))
		bad(file, "no intervals");
	for (size_t i = 0; i < *n; i++) {
		struct hvt_interval iv;

		if (hvt_trace_read_interval(r, i, &iv, &err))
			bad(file, "%s", err.msg);
		v[i] = (struct ivl){iv.seq, iv.t_start_ns, iv.t_end_ns};
		hvt_interval_fini(&iv);
	}
	hvt_trace_reader_close(r);
	return v;
}

/* The first interval that ends after t ns; UINT64_MAX if none. */
static uint64_t interval_at(const struct ivl *v, size_t n, uint64_t t)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].t_end > t)
			return v[i].seq;
	return UINT64_MAX;
}

static int range_cmd(const struct log *lg, const struct ivl *v, size_t n)
{
	uint64_t first = UINT64_MAX, last = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i].t_start >= lg->copy_t && v[i].t_end <= lg->done_e) {
			first = first < v[i].seq ? first : v[i].seq;
			last = v[i].seq;
		}
	if (first == UINT64_MAX) {
		fprintf(stderr,
			"check_array_report: no interval lies wholly inside the copy and add phases\n");
		return 1;
	}
	printf("%" PRIu64 " %" PRIu64 "\n", first, last);
	return 0;
}

/* How many pages of r are not of class want in the report's page runs [[first, count, class], …]. */
static uint64_t not_class(struct json_object *runs, struct range r, const char *want)
{
	uint64_t ok = 0;

	for (size_t i = 0; i < json_object_array_length(runs); i++) {
		struct json_object *run = json_object_array_get_idx(runs, i);
		uint64_t first = (uint64_t)json_object_get_int64(json_object_array_get_idx(run, 0));
		uint64_t end = first + (uint64_t)json_object_get_int64(json_object_array_get_idx(run, 1));
		uint64_t lo = first > r.first ? first : r.first;
		uint64_t hi = end < r.first + r.count ? end : r.first + r.count;

		if (lo < hi && !strcmp(json_object_get_string(json_object_array_get_idx(run, 2)), want))
			ok += hi - lo;
	}
	return r.count - ok;
}

static int check_cmd(const struct log *lg, const struct ivl *v, size_t n, struct json_object *all,
		     struct json_object *pages, const char *all_file, const char *pages_file)
{
	struct json_object *classes = get(pages, "classes", pages_file);
	struct json_object *th = get(classes, "thresholds", pages_file);
	struct json_object *runs = get(classes, "page_runs", pages_file);
	struct json_object *bounds = get(get(all, "phases", all_file), "accessed", all_file);
	uint64_t c_bad = not_class(runs, lg->c, "write-heavy"), a_bad = not_class(runs, lg->a, "read-mostly");
	uint64_t lo = interval_at(v, n, lg->switch_e), hi = interval_at(v, n, lg->switch_t);
	bool found = false;
	double at = 0;
	char list[256] = "";
	size_t len = 0;

	if (json_object_is_type(bounds, json_type_null))
		bad(all_file, "no accessed sets (phases.accessed is null): mode ad is needed");
	if (lo == UINT64_MAX)
		bad(all_file, "no interval ends after the copy→add switch");
	if (hi == UINT64_MAX)
		hi = v[n - 1].seq;
	for (size_t i = 0; i < n; i++) /* how far into its interval the switch fell (at the earliest) */
		if (v[i].seq == lo && v[i].t_end > v[i].t_start)
			at = lg->switch_e <= v[i].t_start ? 0
							  : (double)(lg->switch_e - v[i].t_start) /
								(double)(v[i].t_end - v[i].t_start);
	for (size_t i = 0; i < json_object_array_length(bounds); i++) {
		uint64_t k = (uint64_t)json_object_get_int64(json_object_array_get_idx(bounds, i));

		found |= lo <= k && k <= hi + 1;
		if (len < sizeof(list) - 24)
			len +=
			    (size_t)snprintf(list + len, sizeof(list) - len, "%s%" PRIu64, i ? "," : "", k);
	}
	if (c_bad || a_bad)
		printf("MISMATCH %" PRIu64 " pages of c (gfn %" PRIu64 "+%" PRIu64
		       ") not write-heavy, %" PRIu64 " pages of a (gfn %" PRIu64 "+%" PRIu64
		       ") not read-mostly\n",
		       c_bad, lg->c.first, lg->c.count, a_bad, lg->a.first, lg->a.count);
	if (!found)
		printf("MISMATCH no accessed-set phase boundary in intervals %" PRIu64 "..%" PRIu64
		       " (the copy→add switch lies in interval %" PRIu64 "..%" PRIu64 "); boundaries: [%s]\n",
		       lo, hi + 1, lo, hi, list);
	printf("array: c %s (%" PRIu64 "/%" PRIu64 " pages write-heavy at >= %.2f), a %s (%" PRIu64
	       "/%" PRIu64
	       " read-mostly at >= %.2f accessed, <= %.2f written); copy→add at %.2f of interval %" PRIu64
	       "%s, accessed phases at [%s]: %s\n",
	       c_bad ? "FAIL" : "ok", lg->c.count - c_bad, lg->c.count,
	       json_object_get_double(get(th, "write_heavy", pages_file)), a_bad ? "FAIL" : "ok",
	       lg->a.count - a_bad, lg->a.count, json_object_get_double(get(th, "read_mostly", pages_file)),
	       json_object_get_double(get(th, "read_mostly_write", pages_file)), at, lo, hi != lo ? "+" : "",
	       list, found ? "ok" : "FAIL");
	return c_bad || a_bad || !found;
}

int main(int argc, char **argv)
{
	enum verb { RANGE, CHECK };
	static const struct hvt_opt_choice verbs[] = {{"range", RANGE}, {"check", CHECK}, {NULL, 0}};
	const char *log_file = NULL, *trace_file = NULL, *all_file = NULL, *pages_file = NULL;
	enum verb verb = RANGE;
	const struct hvt_option opts[] = {
	    HVT_OPT_CHOICE(0, NULL, &verb, verbs, "VERB", "range or check", .required = true),
	    HVT_OPT_PATH(0, "phase-log", &log_file, "FILE", "the array payload's phase log (qemu_phases)",
			 .required = true),
	    HVT_OPT_PATH(0, "trace", &trace_file, "FILE", "the trace", .required = true),
	    HVT_OPT_PATH(0, "report", &all_file, "FILE", "check: hvmtrace report --json of the whole trace"),
	    HVT_OPT_PATH(0, "pages", &pages_file, "FILE", "check: report --json --pages over the range"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {.prog = "check_array_report",
					.synopsis =
					    "range|check --phase-log FILE --report FILE [--pages FILE]",
					.options = opts,
					.usage_status = 2};
	struct json_object *all, *pages;
	struct ivl *v;
	struct log lg;
	size_t n;
	int rc = hvt_opts_parse(&cmd, argc, argv);

	if (rc != HVT_OPTS_RUN)
		return rc;
	if (verb == CHECK && (!all_file || !pages_file)) {
		fprintf(stderr, "check_array_report: check needs --report FILE and --pages FILE\n");
		return 2;
	}
	read_log(log_file, &lg);
	v = intervals(trace_file, &n);
	if (verb == RANGE) {
		rc = range_cmd(&lg, v, n);
	} else {
		all = read_json(all_file);
		pages = read_json(pages_file);
		rc = check_cmd(&lg, v, n, all, pages, all_file, pages_file);
		json_object_put(pages);
		json_object_put(all);
	}
	free(v);
	return rc;
}
