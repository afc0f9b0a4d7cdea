// SPDX-License-Identifier: MIT
/*
 * hvmtrace export --pcm-csv (export_pcm.h). pcm-memory numbers a socket's channels 0, 1, ... in the order
 * of its memory controllers and their channels, counting only the channels it found (pcm's
 * ServerUncorePMUs: channels per controller pushed controller by controller), and writes as many for every
 * socket as socket 0 has (PCM::getMCChannelsPerSocket); a channel without traffic gets empty cells.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export_pcm.h"
#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/trace_meta.h"

/* The channels pcm-memory counts per memory controller, by our generation names (pcm's cpucounters.cpp:
 * MCRegisterLocation for the PCI ones, numChannels for ICX's MMIO route, SPR's discovery); and these are
 * the generations whose pcm-memory -csv has a "P. Write (T/s)" column per socket (metrics PartialWrites,
 * its default without Optane: not GNR/SRF/GRR, not with HBM). */
static const struct {
	const char *gen;
	unsigned per_controller;
} pcm_gens[] = {{"snbep", 4}, {"ivt", 4}, {"hsx", 4}, {"bdx", 4},
		{"skx", 3},   {"icx", 2}, {"snr", 2}, {"spr", 2}};

struct loc {
	int32_t socket, controller, channel;
};

struct pcm_csv {
	uint32_t nsock, per_socket;
	bool pwrite;
	int *cell;          /* [socket * per_socket + index]: the trace's channel there, or -1 */
	struct loc *loc;    /* per trace channel */
	bool *measured;     /* per socket: a channel of the VM is there */
	uint32_t nchannels; /* the trace's */
};

__attribute__((format(printf, 2, 3))) static int fail(const char *path, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hvmtrace export: %s: --pcm-csv ", path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

/* Socket, controller and channel of a trace's channel: its fields, or its id "s0.mc1.ch0". */
static bool locate(const struct hvt_meta_channel *c, struct loc *l)
{
	const uint64_t all =
	    (1ull << HVT_MCH_SOCKET) | (1ull << HVT_MCH_CONTROLLER) | (1ull << HVT_MCH_CHANNEL);
	int end = 0;

	if ((c->present & all) == all) {
		*l = (struct loc){c->socket, c->controller, c->channel};
		return l->socket >= 0 && l->controller >= 0 && l->channel >= 0;
	}
	return sscanf(c->id, "s%" SCNd32 ".mc%" SCNd32 ".ch%" SCNd32 "%n", &l->socket, &l->controller,
		      &l->channel, &end) == 3 &&
	       !c->id[end] && l->socket >= 0 && l->controller >= 0 && l->channel >= 0;
}

static unsigned per_controller(const char *gen, bool *pwrite)
{
	for (size_t i = 0; i < sizeof(pcm_gens) / sizeof(pcm_gens[0]); i++)
		if (gen && !strcmp(gen, pcm_gens[i].gen)) {
			*pwrite = true;
			return pcm_gens[i].per_controller;
		}
	*pwrite = false;
	return 0;
}

static int cmp_loc(const void *a, const void *b)
{
	const struct loc *x = a, *y = b;

	if (x->controller != y->controller)
		return x->controller < y->controller ? -1 : 1;
	return (x->channel > y->channel) - (x->channel < y->channel);
}

/* pcm's index of l among the map's channels of its socket that pcm counts (cap per controller, 0: all), or
 * -1 when pcm does not count it; *n: how many it counts on that socket. */
static int map_index(const struct hvt_chanmap *m, struct loc l, unsigned cap, uint32_t *n)
{
	struct loc *v = calloc(m->nchannels + 1, sizeof(*v));
	int idx = -1;

	*n = 0;
	if (!v)
		return -2;
	for (size_t i = 0; i < m->nchannels; i++)
		if ((int32_t)m->channels[i].socket == l.socket && (!cap || m->channels[i].channel < cap))
			v[(*n)++] = (struct loc){l.socket, (int32_t)m->channels[i].controller,
						 (int32_t)m->channels[i].channel};
	qsort(v, *n, sizeof(*v), cmp_loc);
	for (uint32_t i = 0; i < *n; i++)
		if (v[i].controller == l.controller && v[i].channel == l.channel)
			idx = (int)i;
	free(v);
	return idx;
}

static int32_t top_channel(const struct pcm_csv *p)
{
	int32_t top = 0;

	for (uint32_t i = 0; i < p->nchannels; i++)
		if (p->loc[i].channel > top)
			top = p->loc[i].channel;
	return top;
}

/* Each trace channel's pcm index (-1: no column), from the map, or by pcm's rule without it. */
static int number(struct pcm_csv *p, int *index, const struct hvt_chanmap *map, unsigned cap,
		  const char *path, const char *map_path, const struct hvt_trace_meta *m)
{
	for (uint32_t i = 0; i < p->nchannels; i++) {
		struct loc l = p->loc[i];
		uint32_t n;

		if (map) {
			char id[48];

			snprintf(id, sizeof(id), "s%d.mc%d.ch%d", l.socket, l.controller, l.channel);
			if (hvt_chanmap_find(map, id) < 0)
				return fail(path, "--chanmap %s has no channel %s", map_path,
					    m->channels.v[i].id);
			index[i] = map_index(map, l, cap, &n);
			if (index[i] == -2)
				return fail(path, "out of memory");
		} else {
			/* without the map, every controller before this one is taken as full */
			index[i] =
			    cap && (unsigned)l.channel >= cap
				? -1
				: l.controller * (int)(cap ? cap : (unsigned)top_channel(p) + 1) + l.channel;
		}
	}
	return 0;
}

struct pcm_csv *pcm_csv_new(const struct hvt_trace_meta *m, const char *path, const char *map_path)
{
	struct pcm_csv *p = calloc(1, sizeof(*p));
	struct hvt_chanmap map;
	struct hvt_err err = {{0}};
	const char *gen = NULL;
	int *index = NULL;
	unsigned cap;
	int rc = -1;

	hvt_chanmap_init(&map);
	if (!p)
		return NULL;
	if (!m->bandwidth_available || !m->channels.n) {
		fail(path, "needs bandwidth, and this trace has none");
		goto out;
	}
	if (m->bandwidth_source == HVT_BW_SOURCE_RESCTRL_TOTAL) {
		fail(path, "needs reads and writes apart; this trace has resctrl totals");
		goto out;
	}
	p->nchannels = m->channels.n;
	p->loc = calloc(p->nchannels, sizeof(*p->loc));
	index = calloc(p->nchannels, sizeof(int));
	if (!p->loc || !index)
		goto out;
	for (uint32_t i = 0; i < p->nchannels; i++)
		if (!locate(&m->channels.v[i], &p->loc[i])) {
			fail(path,
			     "needs channels named by socket, controller and channel (s0.mc1.ch0); %s is not",
			     m->channels.v[i].id);
			goto out;
		}
	if (map_path && hvt_chanmap_read(map_path, &map, &err)) {
		fprintf(stderr, "hvmtrace export: --chanmap %s: %s\n", map_path, err.msg);
		goto out;
	}
	gen = map_path ? map.cpu.generation : m->channels.v[0].source;
	cap = per_controller(gen, &p->pwrite);
	if (number(p, index, map_path ? &map : NULL, cap, path, map_path, m))
		goto out;
	for (uint32_t i = 0; i < p->nchannels; i++) {
		if (p->loc[i].socket + 1 > (int32_t)p->nsock)
			p->nsock = (uint32_t)p->loc[i].socket + 1;
		if (index[i] >= 0 && (uint32_t)index[i] + 1 > p->per_socket)
			p->per_socket = (uint32_t)index[i] + 1;
	}
	if (map_path) {
		if (p->nsock > map.sockets) {
			fail(path, "--chanmap %s has fewer sockets than the trace's channels name", map_path);
			goto out;
		}
		p->nsock = map.sockets;
		map_index(&map, (struct loc){0, -1, -1}, cap, &p->per_socket); /* socket 0's, for all */
	}
	p->cell = malloc((size_t)p->nsock * p->per_socket * sizeof(int) + sizeof(int));
	p->measured = calloc(p->nsock + 1, sizeof(bool));
	if (!p->cell || !p->measured)
		goto out;
	for (size_t k = 0; k < (size_t)p->nsock * p->per_socket; k++)
		p->cell[k] = -1;
	for (uint32_t i = 0; i < p->nchannels; i++) {
		int *c;

		p->measured[p->loc[i].socket] = true;
		if (index[i] < 0 || (uint32_t)index[i] >= p->per_socket) {
			fprintf(
			    stderr,
			    "hvmtrace export: %s: --pcm-csv: pcm-memory shows no channel %s; its bytes count in "
			    "the socket's and the system's columns only\n",
			    path, m->channels.v[i].id);
			continue;
		}
		c = &p->cell[(size_t)p->loc[i].socket * p->per_socket + (size_t)index[i]];
		if (*c >= 0) {
			fail(path, "channels %s and %s fall in one pcm-memory column", m->channels.v[*c].id,
			     m->channels.v[i].id);
			goto out;
		}
		*c = (int)i;
	}
	if (!map_path) {
		fprintf(
		    stderr,
		    "hvmtrace export: %s: --pcm-csv without --chanmap: columns Ch0-Ch%u of each socket, up to "
		    "the trace's last channel",
		    path, p->per_socket - 1);
		if (!cap)
			fprintf(stderr, " (pcm's channels per controller are unknown for '%s': taken as %d)",
				gen ? gen : "?", top_channel(p) + 1);
		fprintf(stderr,
			"; pcm-memory lists every channel of the host: --chanmap FILE gives them all\n");
	}
	rc = 0;
out:
	free(index);
	hvt_chanmap_free(&map);
	if (rc) {
		pcm_csv_free(p);
		return NULL;
	}
	return p;
}

void pcm_csv_free(struct pcm_csv *p)
{
	if (!p)
		return;
	free(p->cell);
	free(p->loc);
	free(p->measured);
	free(p);
}

void pcm_csv_header(FILE *f, const struct pcm_csv *p)
{
	/* first row: each column's socket; second: its name (pcm-memory's display_bandwidth_csv) */
	for (int row = 0; row < 2; row++) {
		fputs(row ? "Date,Time," : ",,", f);
		for (uint32_t s = 0; s < p->nsock; s++) {
			for (uint32_t c = 0; c < p->per_socket; c++)
				if (row)
					fprintf(f, "Ch%uRead,Ch%uWrite,", c, c);
				else
					fprintf(f, "SKT%u,SKT%u,", s, s);
			if (row)
				fprintf(f, "Mem Read (MB/s),Mem Write (MB/s),%sMemory (MB/s),",
					p->pwrite ? "P. Write (T/s)," : "");
			else
				for (int k = 0; k < 3 + p->pwrite; k++)
					fprintf(f, "SKT%u,", s);
		}
		fputs(row ? "Read,Write,Memory\n" : "System,System,System\n", f);
	}
}

/* n cells of MB/s, each `width` wide and followed by a comma (the row's last by its newline); empty
 * without data, as pcm-memory leaves a channel it has no figure for. */
static void cells(FILE *f, bool have, int width, const double *v, int n, bool row_end)
{
	for (int k = 0; k < n; k++) {
		if (have)
			fprintf(f, "%*.2f", width, v[k]);
		fputs(row_end && k == n - 1 ? "\n" : ",", f);
	}
}

void pcm_csv_interval(FILE *f, const struct pcm_csv *p, const struct hvt_interval *iv)
{
	double secs = (iv->t_end_ns - iv->t_start_ns) / 1e9, srd = 0, swr = 0;
	int64_t wall = iv->wall_start_ns + (int64_t)(iv->t_end_ns - iv->t_start_ns);
	time_t tt = (time_t)(wall / 1000000000);
	struct tm tm;
	bool have = (iv->flags & HVT_IV_BANDWIDTH) && secs > 0;

	localtime_r(&tt, &tm); /* pcm-memory prints local time */
	fprintf(f, "%04d-%02d-%02d,%02d:%02d:%02d.%03d,", 1900 + tm.tm_year, 1 + tm.tm_mon, tm.tm_mday,
		tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(wall % 1000000000 / 1000000));
	for (uint32_t s = 0; s < p->nsock; s++) {
		double rd = 0, wr = 0;

		for (uint32_t i = 0; have && i < iv->nchannels; i++) {
			uint32_t ch = iv->channels[i].channel;

			if (ch < p->nchannels && (uint32_t)p->loc[ch].socket == s) {
				rd += iv->channels[i].read_bytes / 1e6 / secs; /* MB = 10^6 bytes, as pcm */
				wr += iv->channels[i].write_bytes / 1e6 / secs;
			}
		}
		for (uint32_t c = 0; c < p->per_socket; c++) {
			int ch = p->cell[(size_t)s * p->per_socket + c];
			double v[2] = {0, 0};

			for (uint32_t i = 0; have && ch >= 0 && i < iv->nchannels; i++)
				if (iv->channels[i].channel == (uint32_t)ch) {
					v[0] = iv->channels[i].read_bytes / 1e6 / secs;
					v[1] = iv->channels[i].write_bytes / 1e6 / secs;
				}
			cells(f, have && ch >= 0, 8, v, 2, false);
		}
		cells(f, have && p->measured[s], 8, (const double[]){rd, wr}, 2, false);
		if (p->pwrite)
			fputc(',', f); /* partial writes are not counted: no figure */
		cells(f, have && p->measured[s], 8, (const double[]){rd + wr}, 1, false);
		srd += rd;
		swr += wr;
	}
	cells(f, have, 10, (const double[]){srd, swr, srd + swr}, 3, true);
}
