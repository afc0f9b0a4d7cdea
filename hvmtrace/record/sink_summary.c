// SPDX-License-Identifier: MIT
/* One line per interval on a terminal: time since the trace began, written pages and MiB. */
#include <stdint.h>
#include <stdlib.h>

#include "hvmtrace/layout.h"
#include "hvmtrace/trace.h"
#include "sink.h"

struct summary_sink {
	struct sink k;
	FILE *f;
	uint64_t t0_ns;
};

static int summary_layout(struct sink *k, const struct hvt_layout *l, struct hvt_err *err)
{
	struct summary_sink *s = (struct summary_sink *)k;

	(void)err;
	fprintf(s->f, "layout generation %llu: %u slots, %llu pages\n", (unsigned long long)l->generation,
		l->nslots, (unsigned long long)hvt_layout_total_pages(l));
	return 0;
}

static int summary_interval(struct sink *k, const struct hvt_interval *iv, const struct hvt_layout *l,
			    struct hvt_err *err)
{
	struct summary_sink *s = (struct summary_sink *)k;

	(void)err;
	if (!s->t0_ns)
		s->t0_ns = iv->t_start_ns;
	fprintf(s->f, "%10.3f s", (iv->t_end_ns - s->t0_ns) / 1e9);
	if (iv->flags & HVT_IV_WRITTEN) {
		uint64_t pages = hvt_interval_count_pages(iv->written, iv->nslots);

		fprintf(s->f, "  written %9llu pages %10.1f MiB", (unsigned long long)pages,
			pages * (double)l->page_size / (1 << 20));
	}
	if (iv->flags & HVT_IV_ACCESSED)
		fprintf(s->f, "  accessed %9llu pages",
			(unsigned long long)hvt_interval_count_pages(iv->accessed, iv->nslots));
	if (iv->missed_deadlines)
		fprintf(s->f, "  (%u deadlines missed)", iv->missed_deadlines);
	if (iv->flags & HVT_IV_FINAL)
		fprintf(s->f, "  (final)");
	fputc('\n', s->f);
	return 0;
}

static int summary_close(struct sink *k, struct hvt_err *err)
{
	(void)err;
	free(k);
	return 0;
}

struct sink *sink_summary_open(FILE *f)
{
	struct summary_sink *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->f = f;
	s->k = (struct sink){.name = "summary",
			     .layout = summary_layout,
			     .interval = summary_interval,
			     .close = summary_close};
	return &s->k;
}
