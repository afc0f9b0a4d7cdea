// SPDX-License-Identifier: MIT
/* chanmap show: a channel map as a table, one line per range. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/util.h"
#include "hvmtrace/options.h"

/* chanmap show's exit statuses, as its --help lists them. */
enum show_exit {
	SHOW_OK = 0,
	SHOW_USAGE = 2, /* bad arguments, or MAP is not a readable channel map */
};

static uint64_t channel_bytes(const struct hvt_chanmap_channel *c)
{
	uint64_t n = 0;
	for (size_t r = 0; r < c->nranges; r++)
		n += c->ranges[r].size;
	return n;
}

/* Whether channel ci holds memory of an interleaved region. */
static bool interleaved_in(const struct hvt_chanmap *m, size_t ci)
{
	for (size_t i = 0; i < m->ninterleaved; i++)
		for (size_t j = 0; j < m->interleaved[i].nchannels; j++)
			if (m->interleaved[i].channels[j] == ci)
				return true;
	return false;
}

/* "0.97", or "-" when the map does not record it (maps from before the probe did). */
static void format_confidence(double c, char *buf, size_t len)
{
	if (c < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.2f", c);
}

static void print_header(const struct hvt_chanmap *m, const char *path)
{
	printf("map      %s (schema %d, created %s)\n", path, HVT_CHANMAP_VERSION, m->created);
	printf("source   %s\n", m->source);
	printf("host     %s, kernel %s\n", m->host.hostname, m->host.kernel);
	printf("cpu      %s (%s family %u model 0x%x, generation %s), %u socket(s)\n", m->cpu.name,
	       m->cpu.vendor, m->cpu.family, m->cpu.model, m->cpu.generation, m->sockets);
	if (m->probe.windows) {
		char sz[32];
		hvt_format_size(m->probe.probed_bytes, sz, sizeof(sz));
		printf("probe    %s of %s memory; %" PRIu64 " windows of %.0f ms (%.1f s), %" PRIu64
		       " KiB × %u per block, bisected to %" PRIu64 " MiB\n",
		       sz, m->probe.memory, m->probe.windows, m->probe.window_ns / 1e6,
		       m->probe.implied_seconds, m->probe.sample_bytes >> 10, m->probe.reps,
		       m->probe.granule_bytes >> 20);
	}
	putchar('\n');
}

int cmd_show(int argc, char **argv)
{
	static const struct hvt_exit_status exits[] = {
	    {SHOW_OK, "the map was shown"},
	    {SHOW_USAGE, "bad arguments, or MAP is not a readable channel map"},
	    {0, NULL},
	};
	const char *path = CHANMAP_DEFAULT_MAP;
	const struct hvt_option opts[] = {
	    HVT_OPT_OPERAND(&path, "MAP", "the channel map (default " CHANMAP_DEFAULT_MAP ")"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "chanmap show",
	    .synopsis = "[MAP]",
	    .about = "Prints a channel map as a table, one line per range.",
	    .options = opts,
	    .exits = exits,
	    .usage_status = SHOW_USAGE,
	};
	struct hvt_chanmap m;
	struct hvt_err err;
	int rc = hvt_opts_parse(&cmd, argc, argv);

	if (rc != HVT_OPTS_RUN)
		return rc;
	if (hvt_chanmap_read(path, &m, &err)) {
		fprintf(stderr, "chanmap show: %s\n", err.msg);
		return SHOW_USAGE;
	}
	print_header(&m, path);
	printf("%-14s %-18s %-38s %-10s %s\n", "CHANNEL", "PMU", "RANGE", "SIZE", "CONFIDENCE");
	for (size_t i = 0; i < m.nchannels; i++) {
		const struct hvt_chanmap_channel *ch = &m.channels[i];
		char pmu[80], sz[32], conf[16];
		snprintf(pmu, sizeof(pmu), "%s%s", ch->pmu, ch->inferred ? " (inferred)" : "");
		if (!ch->nranges)
			printf("%-14s %-18s %-38s %s\n", ch->id, pmu, "-",
			       interleaved_in(&m, i) ? "only interleaved memory (see INTERLEAVED)"
						     : "no memory found");
		for (size_t r = 0; r < ch->nranges; r++) {
			char range[64];
			snprintf(range, sizeof(range), "0x%" PRIx64 "-0x%" PRIx64, ch->ranges[r].start,
				 ch->ranges[r].start + ch->ranges[r].size - 1);
			hvt_format_size(ch->ranges[r].size, sz, sizeof(sz));
			format_confidence(hvt_chanmap_confidence(ch, r), conf, sizeof(conf));
			printf("%-14s %-18s %-38s %-10s %s\n", r ? "" : ch->id, r ? "" : pmu, range, sz,
			       conf);
		}
		if (ch->nranges && interleaved_in(&m, i))
			printf("%-14s %-18s %-38s %s\n", "", "", "",
			       "and interleaved memory (see INTERLEAVED)");
		if (ch->nranges > 1) {
			hvt_format_size(channel_bytes(ch), sz, sizeof(sz));
			printf("%-14s %-18s %-38s %s in all\n", "", "", "", sz);
		}
	}
	for (size_t i = 0; i < m.ninterleaved; i++) {
		const struct hvt_chanmap_interleave *il = &m.interleaved[i];
		char sz[32], conf[16];
		hvt_format_size(il->range.size, sz, sizeof(sz));
		format_confidence(il->confidence, conf, sizeof(conf));
		printf("INTERLEAVED    0x%" PRIx64 "-0x%" PRIx64 " (%s) over", il->range.start,
		       il->range.start + il->range.size - 1, sz);
		for (size_t j = 0; j < il->nchannels; j++)
			printf("%s%s", j ? "," : " ", m.channels[il->channels[j]].id);
		printf("; confidence %s\n", conf);
	}
	if (m.advice[0])
		printf("\nadvice   %s\n", m.advice);
	hvt_chanmap_free(&m);
	return SHOW_OK;
}
