// SPDX-License-Identifier: MIT
/*
 * check_deadlines: checks that a trace accounts for every harvest deadline (tests/integration/storm_*.sh).
 *
 * `record --interval I` has deadlines at t0 + k·I, t0 being the first interval's t_start (when tracking was
 * armed). An interval (t_start, t_end] that spans n deadlines was harvested for one of them and must say
 * that it missed the others: missed_deadlines >= n - 1, or it would merge n intervals silently. Intervals
 * must also be numbered 1, 2, 3 … with none lost, and follow each other in time.
 * Prints one line: intervals, deadlines missed, intervals that missed some, the longest interval.
 * Exit 0 when all holds, 1 (naming the interval) when not, 2 on bad input.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "hvmtrace/error.h"
#include "hvmtrace/options.h"
#include "hvmtrace/trace.h"

int main(int argc, char **argv)
{
	const char *path = NULL;
	uint64_t iv_ns = 0, t0 = 0, prev_end = 0, missed = 0, longest = 0, with_missed = 0, n;
	const struct hvt_option opts[] = {
	    HVT_OPT_PATH(0, "trace", &path, "FILE", "the trace", .required = true),
	    HVT_OPT_DURATION(0, "interval", &iv_ns, 1, "DUR", "record's --interval", .required = true),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {.prog = "check_deadlines", .options = opts, .usage_status = 2};
	struct hvt_trace_reader *r;
	struct hvt_err err = {{0}};
	int rc = hvt_opts_parse(&cmd, argc, argv), bad = 0;

	if (rc != HVT_OPTS_RUN)
		return rc;
	if (hvt_trace_open(&r, path, &err)) {
		fprintf(stderr, "check_deadlines: %s\n", err.msg);
		return 2;
	}
	n = hvt_trace_interval_count(r);
	for (uint64_t i = 0; i < n && !bad; i++) {
		struct hvt_interval iv;
		uint64_t spans;

		if (hvt_trace_read_interval(r, i, &iv, &err)) {
			fprintf(stderr, "check_deadlines: %s\n", err.msg);
			hvt_trace_reader_close(r);
			return 2;
		}
		if (i == 0)
			t0 = iv.t_start_ns;
		/* deadlines t0 + k·I with t_start < deadline <= t_end */
		spans = (iv.t_end_ns - t0) / iv_ns - (iv.t_start_ns - t0) / iv_ns;
		if (iv.seq != i + 1) {
			printf("interval %" PRIu64 " has seq %" PRIu64 ": an interval is missing\n", i + 1,
			       iv.seq);
			bad = 1;
		} else if (iv.t_start_ns < prev_end || iv.t_end_ns < iv.t_start_ns || iv.t_start_ns < t0) {
			printf("interval %" PRIu64 ": [%" PRIu64 ", %" PRIu64
			       "] does not follow the previous one "
			       "(ended %" PRIu64 ")\n",
			       iv.seq, iv.t_start_ns, iv.t_end_ns, prev_end);
			bad = 1;
		} else if (spans > (uint64_t)iv.missed_deadlines + 1) {
			printf("interval %" PRIu64 " spans %" PRIu64
			       " deadlines (%.1f ms at %.1f ms) but says it "
			       "missed %u: intervals merged silently\n",
			       iv.seq, spans, (iv.t_end_ns - iv.t_start_ns) / 1e6, iv_ns / 1e6,
			       iv.missed_deadlines);
			bad = 1;
		}
		prev_end = iv.t_end_ns;
		missed += iv.missed_deadlines;
		with_missed += iv.missed_deadlines > 0;
		if (iv.t_end_ns - iv.t_start_ns > longest)
			longest = iv.t_end_ns - iv.t_start_ns;
		hvt_interval_fini(&iv);
	}
	hvt_trace_reader_close(r);
	printf("%" PRIu64 " intervals, %" PRIu64 " deadlines missed, %" PRIu64
	       " intervals missed some, longest %.1f ms\n",
	       n, missed, with_missed, longest / 1e6);
	return bad;
}
