// SPDX-License-Identifier: MIT
/*
 * The runs of a picture that compares traces (`hvmtrace plot wss|cdf A.hvt B.hvt`): each trace loaded over
 * the same selection as a picture of one loads it, in the order given (a glob of a domain's traces reads
 * as its runs in turn), and a subtitle naming them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot.h"
#include "hvmtrace/trace_input.h"

int plot_runs_load(struct plot_runs *r, const struct plot_args *a, series_hook hook, void **ctx)
{
	*r = (struct plot_runs){.s = calloc(a->traces.n, sizeof(*r->s))};
	if (!r->s) {
		fprintf(stderr, "hvmtrace plot: out of memory\n");
		return TRACE_OUTPUT_FAILED;
	}
	for (size_t i = 0; i < a->traces.n; i++) {
		int rc =
		    trace_series_load(&r->s[i], "plot", a->traces.v[i], &a->sel, hook, ctx ? ctx[i] : NULL);

		if (rc && rc != TRACE_INCOMPLETE) {
			trace_series_fini(&r->s[i]);
			plot_runs_fini(r);
			return rc;
		}
		r->incomplete |= rc == TRACE_INCOMPLETE;
		r->n++;
	}
	return 0;
}

void plot_runs_fini(struct plot_runs *r)
{
	for (size_t i = 0; i < r->n; i++)
		trace_series_fini(&r->s[i]);
	free(r->s);
	*r = (struct plot_runs){0};
}

const char *plot_run_name(const struct trace_series *s)
{
	const char *slash = strrchr(s->path, '/');

	return slash ? slash + 1 : s->path;
}

void plot_runs_describe(const struct plot_runs *r, const struct hvt_selection *sel, char *buf, int len)
{
	int at;

	if (r->n == 1) {
		plot_describe(&r->s[0], sel, buf, len);
		return;
	}
	at = snprintf(buf, len, "%zu runs, each from its own start", r->n);
	if (sel->gfns_given)
		at += snprintf(buf + at, at < len ? len - at : 0, ", GFNs 0x%" PRIx64 "-0x%" PRIx64,
			       sel->gfn_first, sel->gfn_last);
	for (size_t i = 0; i < r->n && at < len; i++)
		at += snprintf(buf + at, len - at, "%s%s (mode %s, intervals %" PRIu64 "-%" PRIu64 ")%s",
			       i ? ", " : ": ", plot_run_name(&r->s[i]), hvt_mode_name(r->s[i].meta->mode),
			       r->s[i].iv[0].seq, r->s[i].iv[r->s[i].niv - 1].seq,
			       r->s[i].incomplete ? " INCOMPLETE" : "");
}
