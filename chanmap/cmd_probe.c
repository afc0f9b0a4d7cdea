// SPDX-License-Identifier: MIT
/*
 * chanmap probe: drives memory the host lets us touch, watches which channel's CAS counters rise, and writes
 * chanmap.json. The numbers come from the hardware, from a MODEL memory controller (--model, for tests and
 * demonstrations; labelled as such everywhere) or from a recorded session (--replay).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/probe.h"
#include "commands.h"
#include "hvmtrace/error.h"
#include "hvmtrace/options.h"
#include "hvmtrace/util.h"

/* chanmap probe's exit statuses, as its --help lists them. */
enum probe_exit {
	PROBE_OK = 0,
	PROBE_FAILED = 1,       /* the probe failed (or --check found the map wrong) */
	PROBE_USAGE = 2,        /* bad arguments */
	PROBE_UNATTRIBUTED = 3, /* some memory could not be attributed; the map is written without it */
	PROBE_UNRESOLVED =
	    4, /* some memory stayed ambiguous; the map is written without it, nothing guessed */
};

struct args {
	const char *output, *log, *model, *replay;
	bool check, quiet;
	struct hvt_probe_params p;
	struct hvt_probe_hw_options hw;
};

static int hugetlb_page_arg(const struct hvt_option *opt, const char *v, char *problem, size_t len)
{
	uint64_t *page = opt->value;

	if (hvt_parse_size(v, page) || (*page != (2ull << 20) && *page != (1ull << 30))) {
		snprintf(problem, len, "not 2M or 1G");
		return -1;
	}
	return 0;
}

/* HVT_OPTS_RUN to probe; otherwise the status to exit with (0 after --help). */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct hvt_exit_status exits[] = {
	    {PROBE_OK, "done"},
	    {PROBE_FAILED, "the probe failed (or --check found differences)"},
	    {PROBE_USAGE, "bad arguments"},
	    {PROBE_UNATTRIBUTED, "some memory could not be attributed (the map is written without it)"},
	    {PROBE_UNRESOLVED,
	     "some memory stayed unresolved: still ambiguous after the retries, or a second look\ndisagreed (the map is written without it; nothing is guessed)"},
	    {0, NULL},
	};
	const struct hvt_option opts[] = {
	    HVT_OPT_PATH('o', "output", &a->output, "FILE",
			 "the channel map to write (default " CHANMAP_DEFAULT_MAP ")"),
	    HVT_OPT_PATH(0, "log", &a->log, "FILE",
			 "write the session log (every window's counts; replayable)"),
	    HVT_OPT_SIZE(0, "hugetlb", &a->hw.hugetlb_bytes, 1, 0, 0, "SIZE",
			 "also probe SIZE of hugetlb pages (located through /proc/self/pagemap)"),
	    HVT_OPT_CALLBACK(0, "hugetlb-page", &a->hw.hugetlb_page, hugetlb_page_arg, "SZ",
			     "2M (default) or 1G pages"),
	    HVT_OPT_FLAG_OFF(0, "no-devmem", &a->hw.devmem,
			     "do not map memmap= reservations through /dev/mem"),
	    HVT_OPT_DURATION(0, "window", &a->p.window_ns, 1, "DUR", "measurement window (default 20ms)"),
	    HVT_OPT_SIZE(0, "sample", &a->p.sample_bytes, 1, 0, 0, "SIZE",
			 "bytes driven per probed block (default 2M)"),
	    HVT_OPT_SIZE(0, "step", &a->p.step_bytes, 1, 0, 0, "SIZE",
			 "coarse step before bisection (default 1G)"),
	    HVT_OPT_SIZE(0, "granule", &a->p.granule, 1, 0, 0, "SIZE",
			 "bisection stops here (default 64M, the SKX decode granule)"),
	    HVT_OPT_INT(0, "calibration", &a->p.calibration_windows, 1, 10000, "N",
			"idle windows to learn the background (default 20)"),
	    HVT_OPT_INT(0, "reps", &a->p.reps, 1, 1024, "N",
			"drive each line N times (default: sized from the background)"),
	    HVT_OPT_FLAG_OFF(0, "no-write-check", &a->p.write_check, "skip the write window per range"),
	    HVT_OPT_PATH(0, "model", &a->model, "FILE",
			 "numbers from a MODEL memory controller (not hardware; docs/chanmap.md)"),
	    HVT_OPT_FLAG(0, "check", &a->check,
			 "with --model: compare the result with the model's truth, exit 1 if not exact"),
	    HVT_OPT_PATH(0, "replay", &a->replay, "FILE", "numbers from a recorded session log"),
	    HVT_OPT_FLAG('q', "quiet", &a->quiet, "no progress on stderr"),
	    HVT_OPT_HEADING("Tests:"),
	    HVT_OPT_PATH(0, "sysfs-root", &a->hw.sysfs_root, "DIR", "the PMUs' sysfs tree (default /sys)"),
	    HVT_OPT_PATH(0, "iomem", &a->hw.iomem, "FILE", "the resource map (default /proc/iomem)"),
	    HVT_OPT_PATH(0, "firmware-memmap", &a->hw.fwmap, "DIR",
			 "the firmware memory map (default /sys/firmware/memmap)"),
	    HVT_OPT_PATH(0, "mem-path", &a->hw.mem_path, "FILE", "what to map (default /dev/mem)"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "chanmap probe",
	    .synopsis = "[options]",
	    .about = "Finds which host-physical ranges belong to which memory channel. Run as root\n"
		     "on an idle host, after booting with a memmap= reservation of the RAM to probe\n"
		     "(or with --hugetlb).",
	    .options = opts,
	    .exits = exits,
	    .usage_status = PROBE_USAGE,
	};
	int rc;

	*a = (struct args){.output = CHANMAP_DEFAULT_MAP};
	hvt_probe_default_params(&a->p);
	a->hw.devmem = true;
	a->hw.hugetlb_page = 2ull << 20;
	rc = hvt_opts_parse(&cmd, argc, argv);
	if (rc != HVT_OPTS_RUN)
		return rc;
	if (a->model && a->replay) {
		fprintf(stderr, "chanmap probe: --model and --replay are two different sources; give one\n");
		return PROBE_USAGE;
	}
	if (a->check && !a->model) {
		fprintf(stderr,
			"chanmap probe: --check needs --model (only a model knows the right answer)\n");
		return PROBE_USAGE;
	}
	if (a->hw.hugetlb_bytes % a->hw.hugetlb_page) {
		fprintf(stderr, "chanmap probe: --hugetlb is not a whole number of %" PRIu64 " KiB pages\n",
			a->hw.hugetlb_page >> 10);
		return PROBE_USAGE;
	}
	return HVT_OPTS_RUN;
}

static void summarize(const struct hvt_chanmap *m, const struct hvt_probe_stats *st, const struct args *a)
{
	size_t populated = 0, only_interleaved = 0;
	for (size_t i = 0; i < m->nchannels; i++) {
		bool il = false;
		for (size_t k = 0; k < m->ninterleaved; k++)
			for (size_t j = 0; j < m->interleaved[k].nchannels; j++)
				il |= m->interleaved[k].channels[j] == i;
		populated += m->channels[i].nranges > 0 || il;
		only_interleaved += !m->channels[i].nranges && il;
	}
	fprintf(
	    stderr,
	    "chanmap probe: %zu of %zu channels have memory (%zu only in interleaved regions), %zu interleaved region(s); %" PRIu64
	    " windows (calibration %" PRIu64 ", coarse %" PRIu64 ", bisection %" PRIu64
	    ", retries and votes %" PRIu64 ", socket moves %" PRIu64 ", verified %" PRIu64
	    ", write checks %" PRIu64 "), %" PRIu64 " of %" PRIu64 " blocks measured, %u rep(s) per line\n",
	    populated, m->nchannels, only_interleaved, m->ninterleaved, st->windows, st->calibration,
	    st->coarse, st->bisection, st->retries, st->socket_moves, st->verified, st->write_checks,
	    st->blocks_measured, st->blocks, st->reps);
	fprintf(stderr, "chanmap probe: %.1f GiB probed; at %.0f ms per window that is %.1f s of probing%s\n",
		m->probe.probed_bytes / (double)(1ull << 30), m->probe.window_ns / 1e6, st->implied_seconds,
		a->model ? " (implied: the MODEL runs instantly)" : "");
	if (m->advice[0])
		fprintf(stderr, "chanmap probe: INTERLEAVED: %s\n", m->advice);
}

/* The warning for memory the map leaves out: how much, where the first of it lies, and why. */
static void left_out(const char *label, uint64_t bytes, uint64_t first, const char *why)
{
	fprintf(stderr, "chanmap probe: %s%.1f MiB (first at 0x%" PRIx64 ") %s\n", label,
		bytes / (double)(1 << 20), first, why);
}

static int check_model(struct hvt_probe_backend *b, const struct hvt_chanmap *got)
{
	struct hvt_chanmap want;
	struct hvt_err err;
	char diff[512];

	if (hvt_probe_model_expected(b, &want, &err)) {
		fprintf(stderr, "chanmap probe: %s\n", err.msg);
		return 1;
	}
	int n = hvt_chanmap_compare(&want, got, diff, sizeof(diff));
	hvt_chanmap_free(&want);
	if (n) {
		fprintf(stderr, "chanmap probe: MODEL check FAILED: %d difference(s); %s\n", n, diff);
		return 1;
	}
	fprintf(
	    stderr,
	    "chanmap probe: MODEL check: every channel's ranges and every interleaved region match the model's truth exactly\n");
	return 0;
}

int cmd_probe(int argc, char **argv)
{
	struct args a;
	struct hvt_probe_backend *b = NULL;
	struct hvt_probe_stats st;
	struct hvt_chanmap m;
	struct hvt_err err = {""};
	FILE *log = NULL;
	int rc = parse_args(argc, argv, &a);

	if (rc != HVT_OPTS_RUN)
		return rc;
	if (a.model)
		rc = hvt_probe_model_open(a.model, &b, &err);
	else if (a.replay)
		rc = hvt_probe_log_open(a.replay, &b, &err);
	else
		rc = hvt_probe_hw_open(&a.hw, &b, &err);
	if (rc) {
		fprintf(stderr, "chanmap probe: %s\n", err.msg);
		return rc == -EINVAL && (a.model || a.replay) ? PROBE_USAGE : PROBE_FAILED;
	}
	if (a.model && !a.quiet)
		fprintf(stderr, "chanmap probe: using a MODEL memory controller, not hardware (%s)\n",
			a.model);
	if (a.log && !(log = fopen(a.log, "we"))) {
		fprintf(stderr, "chanmap probe: cannot create the session log %s: %s\n", a.log,
			strerror(errno));
		hvt_probe_backend_destroy(b);
		return PROBE_USAGE;
	}
	rc = hvt_probe_run(b, &a.p, a.quiet ? NULL : stderr, log, &m, &st, &err);
	if (log && fclose(log) && !rc)
		rc = hvt_err_set(&err, -EIO, "writing the session log %s failed", a.log);
	if (rc) {
		fprintf(stderr, "chanmap probe: %s\n", err.msg);
		hvt_probe_backend_destroy(b);
		return PROBE_FAILED;
	}
	hvt_format_wall_seconds(hvt_wall_now_ns(), m.created, sizeof(m.created));
	summarize(&m, &st, &a);
	int status = PROBE_OK;
	if (st.unattributed_bytes) {
		left_out(
		    "", st.unattributed_bytes, st.first_unattributed,
		    "showed no clear channel and is left out of the map: no counter rose as expected (is the "
		    "host idle? is that memory DRAM?)");
		status = PROBE_UNATTRIBUTED;
	}
	if (st.unresolved_bytes) {
		left_out(
		    "UNRESOLVED: ", st.unresolved_bytes, st.first_unresolved,
		    "is left out of the map: its channel set stayed ambiguous after the retries, or a second "
		    "look disagreed with the first; nothing is guessed. Probe again when the host is quieter "
		    "(exit status 4)");
		status = PROBE_UNRESOLVED;
	}
	if (a.check && check_model(b, &m))
		status = PROBE_FAILED;
	if (hvt_chanmap_write(&m, a.output, &err)) {
		fprintf(stderr, "chanmap probe: %s\n", err.msg);
		status = PROBE_FAILED;
	} else if (!a.quiet) {
		fprintf(stderr, "chanmap probe: wrote %s\n", a.output);
	}
	hvt_chanmap_free(&m);
	hvt_probe_backend_destroy(b);
	return status;
}
