// SPDX-License-Identifier: MIT
/*
 * hvmtrace bw: a live view of every memory channel's DRAM read/write bandwidth per socket, with socket and
 * system totals (like pcm-memory, but through perf's uncore PMUs), optionally as CSV and JSON Lines.
 * Without a memory-controller PMU it refuses and says why: it never substitutes another source.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "hvmtrace/json_number.h"
#include "hvmtrace/error.h"
#include "hvmtrace/interval_json.h"
#include "hvmtrace/options.h"
#include "hvmtrace/pmu.h"
#include "hvmtrace/util.h"

#define MB 1e6 /* decimal MB/s, as pcm-memory and perf's bandwidth metrics */

struct bw_opts {
	uint64_t interval_ns;
	uint64_t count; /* 0: until stopped */
	const char *csv, *jsonl, *sysfs_root;
	bool quiet;
};

struct bw_out {
	FILE *csv, *jsonl, *table;
};

/* One window's figures, summed per socket and over the system. */
struct bw_window {
	uint64_t seq, t_start_ns, t_end_ns;
	int64_t wall_start_ns;
	double secs;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* hvmtrace bw's exit statuses, as its --help lists them. */
enum bw_exit {
	BW_OK = 0,
	BW_FAILED = 1, /* no usable memory-controller PMU, not permitted, or a read failed */
	BW_USAGE = 2,  /* bad arguments, or an output that cannot be created */
};

/* HVT_OPTS_RUN to sample; otherwise the status to exit with (0 after --help). */
static int parse_args(int argc, char **argv, struct bw_opts *o)
{
	static const struct hvt_exit_status exits[] = {
	    {BW_OK, "stopped after --count intervals or by SIGINT/SIGTERM"},
	    {BW_FAILED, "no usable memory-controller PMU, not permitted, or a read failed"},
	    {BW_USAGE, "bad arguments"},
	    {0, NULL},
	};
	const struct hvt_option opts[] = {
	    HVT_OPT_DURATION(0, "interval", &o->interval_ns, 1000000, "DUR",
			     "window length (default 1s; e.g. 100ms, 2s)"),
	    HVT_OPT_INT('n', "count", &o->count, 1, INT64_MAX, "N",
			"stop after N intervals (default: until SIGINT/SIGTERM)"),
	    HVT_OPT_PATH(0, "csv", &o->csv, "FILE|-",
			 "one CSV row per channel, socket and system total per interval"),
	    HVT_OPT_PATH(0, "jsonl", &o->jsonl, "FILE|-", "one JSON object per interval"),
	    HVT_OPT_FLAG('q', "quiet", &o->quiet, "no table on standard output"),
	    HVT_OPT_PATH(0, "sysfs-root", &o->sysfs_root, "DIR",
			 "read PMUs from another sysfs tree (for tests; its CPU model is read\n"
			 "from DIR/../proc/cpuinfo)"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace bw",
	    .synopsis = "[options]",
	    .about =
		"Shows each memory channel's DRAM read and write bandwidth (MB/s, 10^6 bytes) per interval,\n"
		"per socket and for the system, from the memory controllers' CAS counters (uncore_imc_N on\n"
		"Intel, amd_umc_N on AMD Zen 4+; 64 bytes per CAS). Needs root or CAP_PERFMON.",
	    .options = opts,
	    .notes = "Channels marked * have a box -> (controller, channel) numbering that is inferred, not\n"
		     "documented by the kernel (docs/bandwidth.md).",
	    .exits = exits,
	    .usage_status = BW_USAGE,
	};
	int rc;

	*o = (struct bw_opts){.interval_ns = HVT_NSEC_PER_SEC};
	rc = hvt_opts_parse(&cmd, argc, argv);
	if (rc == HVT_OPTS_RUN && o->csv && o->jsonl && !strcmp(o->csv, "-") && !strcmp(o->jsonl, "-")) {
		fprintf(stderr, "hvmtrace bw: --csv - and --jsonl - cannot both go to standard output\n");
		return BW_USAGE;
	}
	return rc;
}

static FILE *open_out(const char *path)
{
	FILE *f;

	if (!path)
		return NULL;
	if (!strcmp(path, "-"))
		return stdout;
	f = fopen(path, "we");
	if (!f)
		fprintf(stderr, "hvmtrace bw: cannot create %s: %s\n", path, strerror(errno));
	return f;
}

static double mbps(uint64_t bytes, double secs)
{
	return secs > 0 ? (double)bytes / MB / secs : 0;
}

static void print_table(FILE *f, const struct hvt_pmu_host *h, const struct hvt_pmu_sampler *s,
			const struct hvt_pmu_counts *c, const struct bw_window *w)
{
	unsigned n = hvt_pmu_nchannels(s);
	uint64_t sys_rd = 0, sys_wr = 0;

	fprintf(f, "interval %" PRIu64 " (%.3f s)%s%*s  read MB/s  write MB/s\n", w->seq, w->secs,
		h->stand_in ? "  STAND-IN: software events, not DRAM" : "", h->stand_in ? 0 : 37, "");
	for (unsigned i = 0; i < n;) {
		int socket = hvt_pmu_channel_at(s, i)->socket;
		uint64_t rd = 0, wr = 0;

		for (; i < n && hvt_pmu_channel_at(s, i)->socket == socket; i++) {
			const struct hvt_pmu_channel *ch = hvt_pmu_channel_at(s, i);

			if (!c[i].counted)
				fprintf(f, "  %-12s%c %-24s %11s %11s\n", ch->id, ch->inferred ? '*' : ' ',
					ch->pmu, "not counted", "");
			else
				fprintf(f, "  %-12s%c %-24s %11.2f %11.2f\n", ch->id,
					ch->inferred ? '*' : ' ', ch->pmu, mbps(c[i].read_bytes, w->secs),
					mbps(c[i].write_bytes, w->secs));
			rd += c[i].read_bytes;
			wr += c[i].write_bytes;
		}
		fprintf(f, "  socket %-31d %11.2f %11.2f\n", socket, mbps(rd, w->secs), mbps(wr, w->secs));
		sys_rd += rd;
		sys_wr += wr;
	}
	fprintf(f, "  system %-31s %11.2f %11.2f\n\n", "", mbps(sys_rd, w->secs), mbps(sys_wr, w->secs));
	fflush(f);
}

static void csv_row(FILE *f, const struct bw_window *w, const char *scope, const char *id, uint64_t rd,
		    uint64_t wr)
{
	fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.9f,%s,%s,%" PRIu64 ",%" PRIu64 ",%.3f,%.3f\n",
		w->seq, w->t_start_ns, w->t_end_ns, w->secs, scope, id, rd, wr, mbps(rd, w->secs),
		mbps(wr, w->secs));
}

static void print_csv(FILE *f, const struct hvt_pmu_sampler *s, const struct hvt_pmu_counts *c,
		      const struct bw_window *w)
{
	unsigned n = hvt_pmu_nchannels(s);
	uint64_t sys_rd = 0, sys_wr = 0;
	char id[32];

	for (unsigned i = 0; i < n;) {
		int socket = hvt_pmu_channel_at(s, i)->socket;
		uint64_t rd = 0, wr = 0;

		for (; i < n && hvt_pmu_channel_at(s, i)->socket == socket; i++) {
			csv_row(f, w, "channel", hvt_pmu_channel_at(s, i)->id, c[i].read_bytes,
				c[i].write_bytes);
			rd += c[i].read_bytes;
			wr += c[i].write_bytes;
		}
		snprintf(id, sizeof(id), "s%d", socket);
		csv_row(f, w, "socket", id, rd, wr);
		sys_rd += rd;
		sys_wr += wr;
	}
	csv_row(f, w, "system", "system", sys_rd, sys_wr);
	fflush(f);
}

static void add_rates(struct json_object *o, uint64_t rd, uint64_t wr, double secs)
{
	json_object_object_add(o, "read_bytes", json_object_new_uint64(rd));
	json_object_object_add(o, "write_bytes", json_object_new_uint64(wr));
	json_object_object_add(o, "read_MBps", hvt_json_new_double(mbps(rd, secs)));
	json_object_object_add(o, "write_MBps", hvt_json_new_double(mbps(wr, secs)));
}

static struct json_object *channel_json(const struct hvt_pmu_channel *ch, const struct hvt_pmu_counts *c,
					double secs)
{
	struct json_object *o = json_object_new_object();

	hvt_channel_json_add(o, ch->id, ch->socket, ch->controller, ch->channel, ch->pmu);
	json_object_object_add(o, "inferred", json_object_new_boolean(ch->inferred));
	json_object_object_add(o, "counted", json_object_new_boolean(c->counted));
	json_object_object_add(o, "running", hvt_json_new_double(c->running));
	json_object_object_add(o, "read_cas", json_object_new_uint64(c->read_cas));
	json_object_object_add(o, "write_cas", json_object_new_uint64(c->write_cas));
	json_object_object_add(o, "read_cas_total", json_object_new_uint64(c->read_cas_total));
	json_object_object_add(o, "write_cas_total", json_object_new_uint64(c->write_cas_total));
	add_rates(o, c->read_bytes, c->write_bytes, secs);
	return o;
}

static int print_jsonl(FILE *f, const struct hvt_pmu_host *h, const struct hvt_pmu_sampler *s,
		       const struct hvt_pmu_counts *c, const struct bw_window *w)
{
	struct json_object *o = json_object_new_object(), *chans = json_object_new_array();
	struct json_object *sockets = json_object_new_array();
	unsigned n = hvt_pmu_nchannels(s);
	uint64_t sys_rd = 0, sys_wr = 0;
	char wall[64];
	int rc = 0;

	hvt_format_wall(w->wall_start_ns, wall, sizeof(wall));
	json_object_object_add(o, "seq", json_object_new_uint64(w->seq));
	json_object_object_add(o, "t_start_ns", json_object_new_uint64(w->t_start_ns));
	json_object_object_add(o, "t_end_ns", json_object_new_uint64(w->t_end_ns));
	json_object_object_add(o, "duration_s", hvt_json_new_double(w->secs));
	json_object_object_add(o, "wall_start", json_object_new_string(wall));
	json_object_object_add(o, "source",
			       json_object_new_string(h->stand_in ? "stand-in (software events, not DRAM)"
								  : hvt_pmu_gen_name(h->gen)));
	for (unsigned i = 0; i < n;) {
		int socket = hvt_pmu_channel_at(s, i)->socket;
		struct json_object *so = json_object_new_object();
		uint64_t rd = 0, wr = 0;

		for (; i < n && hvt_pmu_channel_at(s, i)->socket == socket; i++) {
			json_object_array_add(chans, channel_json(hvt_pmu_channel_at(s, i), &c[i], w->secs));
			rd += c[i].read_bytes;
			wr += c[i].write_bytes;
		}
		json_object_object_add(so, "socket", json_object_new_int(socket));
		add_rates(so, rd, wr, w->secs);
		json_object_array_add(sockets, so);
		sys_rd += rd;
		sys_wr += wr;
	}
	add_rates(o, sys_rd, sys_wr, w->secs);
	json_object_object_add(o, "sockets", sockets);
	json_object_object_add(o, "channels", chans);
	if (fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) < 0 || fflush(f))
		rc = -errno;
	json_object_put(o);
	return rc;
}

static void describe(const struct hvt_pmu_host *h, unsigned nchannels)
{
	bool inferred = false;

	for (unsigned i = 0; i < h->nchannels; i++)
		inferred |= h->channels[i].inferred;
	fprintf(stderr, "hvmtrace bw: %s (%s), %s: %u channels on %u sockets from %s\n",
		hvt_pmu_gen_name(h->gen), h->vendor, h->model_name, nchannels, h->nsockets, h->sysfs_root);
	if (h->stand_in)
		fprintf(
		    stderr,
		    "hvmtrace bw: STAND-IN: these PMUs are generic kernel (software) events posing as memory controllers, for tests; the figures are not DRAM traffic\n");
	if (inferred)
		fprintf(
		    stderr,
		    "hvmtrace bw: * the box -> (controller, channel) numbering of this generation is inferred, not documented by the kernel\n");
	if (h->note[0])
		fprintf(stderr, "hvmtrace bw: note: %s\n", h->note);
}

static int sample_loop(const struct bw_opts *o, const struct hvt_pmu_host *h, struct hvt_pmu_sampler *s,
		       struct bw_out *out, struct hvt_err *err)
{
	struct hvt_pmu_counts *c = calloc(hvt_pmu_nchannels(s) + 1, sizeof(*c));
	struct bw_window w = {.t_start_ns = hvt_now_ns(), .wall_start_ns = hvt_wall_now_ns()};
	uint64_t deadline = w.t_start_ns;
	int rc = 0;

	if (!c)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	while (!stop && (!o->count || w.seq < o->count)) {
		struct timespec ts;

		deadline += o->interval_ns;
		ts.tv_sec = (time_t)(deadline / HVT_NSEC_PER_SEC);
		ts.tv_nsec = (long)(deadline % HVT_NSEC_PER_SEC);
		if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) && stop)
			break;
		if ((rc = hvt_pmu_read(s, c, err)))
			break;
		w.seq++;
		w.t_end_ns = hvt_now_ns();
		w.secs = (double)(w.t_end_ns - w.t_start_ns) / 1e9;
		if (out->table)
			print_table(out->table, h, s, c, &w);
		if (out->csv)
			print_csv(out->csv, s, c, &w);
		if (out->jsonl && (rc = print_jsonl(out->jsonl, h, s, c, &w))) {
			hvt_err_set(err, rc, "writing %s: %s", o->jsonl, strerror(-rc));
			break;
		}
		/* Each window as it ends, for whoever follows the file or the pipe, not when stdio's
		 * buffer fills. */
		if (out->csv)
			fflush(out->csv);
		if (out->jsonl && fflush(out->jsonl)) {
			rc = -errno;
			hvt_err_set(err, rc, "writing %s: %s", o->jsonl, strerror(errno));
			break;
		}
		w.t_start_ns = w.t_end_ns;
		w.wall_start_ns = hvt_wall_now_ns();
		if (w.t_end_ns > deadline + o->interval_ns) /* overslept: restart the schedule from now */
			deadline = w.t_end_ns;
	}
	free(c);
	return rc;
}

int cmd_bw(int argc, char **argv)
{
	struct bw_opts o;
	struct hvt_pmu_host h;
	struct hvt_pmu_sampler *s = NULL;
	struct hvt_pmu_source src;
	struct bw_out out = {0};
	struct hvt_err err = {{0}};
	struct sigaction sa = {.sa_handler = on_signal};
	int rc;

	rc = parse_args(argc, argv, &o);
	if (rc != HVT_OPTS_RUN)
		return rc;
	src = (struct hvt_pmu_source){.sysfs_root = o.sysfs_root};
	if (hvt_pmu_discover(&h, &src, &err)) {
		fprintf(stderr, "hvmtrace bw: %s\n", err.msg);
		return BW_FAILED;
	}
	if (hvt_pmu_open(&s, &h, NULL, 0, &err)) {
		fprintf(stderr, "hvmtrace bw: %s\n", err.msg);
		hvt_pmu_host_fini(&h);
		return BW_FAILED;
	}
	describe(&h, hvt_pmu_nchannels(s));
	out.csv = open_out(o.csv);
	out.jsonl = open_out(o.jsonl);
	if ((o.csv && !out.csv) || (o.jsonl && !out.jsonl)) {
		rc = BW_USAGE;
		goto done;
	}
	if (!o.quiet && out.csv != stdout && out.jsonl != stdout)
		out.table = stdout;
	if (out.csv)
		fputs(
		    "seq,t_start_ns,t_end_ns,duration_s,scope,id,read_bytes,write_bytes,read_MBps,write_MBps\n",
		    out.csv);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	rc = sample_loop(&o, &h, s, &out, &err) ? BW_FAILED : BW_OK;
	if (rc)
		fprintf(stderr, "hvmtrace bw: %s\n", err.msg);
done:
	if (out.csv && out.csv != stdout && fclose(out.csv))
		rc = BW_FAILED;
	if (out.jsonl && out.jsonl != stdout && fclose(out.jsonl))
		rc = BW_FAILED;
	hvt_pmu_close(s);
	hvt_pmu_host_fini(&h);
	return rc;
}
