// SPDX-License-Identifier: MIT
/*
 * check_array: checks a trace of a Linux guest running tests/guest/array against the guest's console log
 * as stamp_lines recorded it (host CLOCK_MONOTONIC ns before each line). In every interval that lies
 * inside the copy phase, and in every one inside the add phase (with --margin on either side for console
 * latency), the written set must contain every guest-physical page of c (the program printed them) and
 * hold fewer than --slack (default 10 %) more pages than c. Each phase needs --min-intervals such
 * intervals. Exit 0 when all holds, 1 if not, 2 on bad input.
 */
#include <inttypes.h>
#include <roaring/roaring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "hvmtrace/options.h"
#include "hvmtrace/trace.h"

static int bad(const char *what)
{
	fprintf(stderr, "check_array: %s\n", what);
	return 2;
}

static int fraction_arg(const struct hvt_option *opt, const char *v, char *problem, size_t len)
{
	char *end;
	double x = strtod(v, &end);

	if (!*v || *end || !(x >= 0 && x <= 10)) {
		snprintf(problem, len, "not a fraction (e.g. 0.1 for 10 %%)");
		return -1;
	}
	*(double *)opt->value = x;
	return 0;
}

int main(int argc, char **argv)
{
	const char *trace = NULL, *console = NULL;
	uint64_t margin_ms = 100, copy = 0, add = 0, done = 0, c_pages = 0;
	double slack = 0.10;
	int min_iv = 2, in_copy = 0, in_add = 0, failures = 0;
	const struct hvt_option opts[] = {
	    HVT_OPT_PATH(0, "trace", &trace, "FILE", "the trace", .required = true),
	    HVT_OPT_PATH(0, "console", &console, "STAMPED-LOG", "the console log as stamp_lines wrote it",
			 .required = true),
	    HVT_OPT_INT(0, "margin-ms", &margin_ms, 0, 3600000, "N", "console latency allowed (default 100)"),
	    HVT_OPT_INT(0, "min-intervals", &min_iv, 0, INT32_MAX, "N",
			"intervals each phase needs (default 2)"),
	    HVT_OPT_CALLBACK(0, "slack", &slack, fraction_arg, "F",
			     "extra pages allowed over c (default 0.1)"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {.prog = "check_array", .options = opts, .usage_status = 2};
	int rc = hvt_opts_parse(&cmd, argc, argv);
	uint64_t margin;
	roaring_bitmap_t *c;
	char line[512];
	FILE *f;

	if (rc != HVT_OPTS_RUN)
		return rc;
	margin = margin_ms * 1000000;
	c = roaring_bitmap_create();
	f = fopen(console, "r");
	if (!f)
		return bad("cannot open the console log");
	while (fgets(line, sizeof(line), f)) {
		unsigned long long t, a, b;
		char word[32];

		if (sscanf(line, "%llu HVT C-RUN %llu %llu", &t, &a, &b) == 3)
			roaring_bitmap_add_range(c, a, a + b);
		else if (sscanf(line, "%llu HVT C-PAGES %llu", &t, &a) == 2)
			c_pages = a;
		else if (sscanf(line, "%llu HVT PHASE %31s", &t, word) == 2)
			*(!strcmp(word, "copy") ? &copy : !strcmp(word, "add") ? &add : &done) = t;
	}
	fclose(f);
	if (!c_pages || roaring_bitmap_get_cardinality(c) != c_pages || !copy || !add || !done)
		return bad("the console log lacks the program's C-PAGES/C-RUN/PHASE lines (did it run?)");

	struct hvt_trace_reader *r;
	struct hvt_err err = {{0}};
	if (hvt_trace_open(&r, trace, &err))
		return bad(err.msg);
	for (uint64_t i = 0, n = hvt_trace_interval_count(r); i < n; i++) {
		struct hvt_interval iv;
		const struct hvt_layout *l;
		const char *phase = NULL;

		if (hvt_trace_read_interval(r, i, &iv, &err))
			return bad(err.msg);
		if (iv.t_start_ns > copy + margin && iv.t_end_ns + margin < add)
			phase = "copy", in_copy++;
		else if (iv.t_start_ns > add + margin && iv.t_end_ns + margin < done)
			phase = "add", in_add++;
		if (phase) {
			roaring_bitmap_t *w = roaring_bitmap_create();
			uint64_t pos;
			struct hvt_run run;

			l = hvt_trace_layout(r, iv.generation);
			for (uint32_t s = 0; s < l->nslots; s++)
				for (pos = 0; hvt_pageset_next_run(&iv.written[s], &pos, &run);)
					roaring_bitmap_add_range(
					    w, hvt_memslot_first_gfn(l, &l->slots[s]) + run.first,
					    hvt_memslot_first_gfn(l, &l->slots[s]) + run.first + run.count);
			uint64_t nw = roaring_bitmap_get_cardinality(w);
			bool holds_c = roaring_bitmap_is_subset(c, w);
			bool few_extra = nw < c_pages * (1 + slack);

			printf("interval %" PRIu64 " (%s): %" PRIu64 " written, c has %" PRIu64 ": %s%s\n",
			       iv.seq, phase, nw, c_pages, holds_c ? "holds c" : "MISSES PAGES OF c",
			       few_extra ? "" : ", TOO MANY EXTRA PAGES");
			failures += !holds_c || !few_extra;
			roaring_bitmap_free(w);
		}
		hvt_interval_fini(&iv);
	}
	hvt_trace_reader_close(r);
	roaring_bitmap_free(c);
	if (in_copy < min_iv || in_add < min_iv) {
		printf("only %d copy and %d add intervals (need %d each)\n", in_copy, in_add, min_iv);
		failures++;
	}
	printf("%d copy intervals, %d add intervals, %d failures\n", in_copy, in_add, failures);
	return failures ? 1 : 0;
}
