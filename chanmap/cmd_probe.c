// SPDX-License-Identifier: MIT
/*
 * chanmap probe: drives memory the host lets us touch, watches which channel's CAS counters rise, and writes
 * chanmap.json. The numbers come from the hardware, from a MODEL memory controller (--model, for tests and
 * demonstrations; labelled as such everywhere) or from a recorded session (--replay).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/probe.h"
#include "commands.h"
#include "hvmtrace/error.h"
#include "hvmtrace/util.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: chanmap probe [options]\n"
	    "\n"
	    "Finds which host-physical ranges belong to which memory channel. Run as root on an idle host,\n"
	    "after booting with a memmap= reservation of the RAM to probe (or with --hugetlb).\n"
	    "\n"
	    "  -o, --output FILE      the channel map to write (default " CHANMAP_DEFAULT_MAP ")\n"
	    "      --log FILE         write the session log (every window's counts; replayable)\n"
	    "      --hugetlb SIZE     also probe SIZE of hugetlb pages (located through /proc/self/pagemap)\n"
	    "      --hugetlb-page SZ  2M (default) or 1G pages\n"
	    "      --no-devmem        do not map memmap= reservations through /dev/mem\n"
	    "      --window DUR       measurement window (default 20ms)\n"
	    "      --sample SIZE      bytes driven per probed block (default 2M)\n"
	    "      --step SIZE        coarse step before bisection (default 1G)\n"
	    "      --granule SIZE     bisection stops here (default 64M, the SKX decode granule)\n"
	    "      --calibration N    idle windows to learn the background (default 20)\n"
	    "      --reps N           drive each line N times (default: sized from the background)\n"
	    "      --no-write-check   skip the write window per range\n"
	    "      --model FILE       numbers from a MODEL memory controller (not hardware; "
	    "docs/chanmap.md)\n"
	    "      --check            with --model: compare the result with the model's truth, exit 1 if not "
	    "exact\n"
	    "      --replay FILE      numbers from a recorded session log\n"
	    "      --sysfs-root DIR, --iomem FILE, --firmware-memmap DIR, --mem-path FILE   (tests)\n"
	    "  -q, --quiet            no progress on stderr\n"
	    "\n"
	    "Exit status: 0 done; 1 the probe failed; 2 bad arguments; 3 some memory could not be "
	    "attributed\n"
	    "(the map is written without it); 4 some memory stayed unresolved: its channel set was "
	    "still\n"
	    "ambiguous after the retries, or a second look disagreed (the map is written without it, "
	    "nothing\n"
	    "is guessed).\n");
}

enum {
	OPT_LOG = 256,
	OPT_HUGETLB,
	OPT_HUGETLB_PAGE,
	OPT_NO_DEVMEM,
	OPT_WINDOW,
	OPT_SAMPLE,
	OPT_STEP,
	OPT_GRANULE,
	OPT_CALIB,
	OPT_REPS,
	OPT_NO_WCHECK,
	OPT_MODEL,
	OPT_CHECK,
	OPT_REPLAY,
	OPT_SYSFS,
	OPT_IOMEM,
	OPT_FWMAP,
	OPT_MEMPATH,
};

struct args {
	const char *output, *log, *model, *replay;
	bool check, quiet;
	struct hvt_probe_params p;
	struct hvt_probe_hw_options hw;
};

static int bad_arg(const char *opt, const char *val, const char *want)
{
	fprintf(stderr, "chanmap probe: %s '%s' is not %s\n", opt, val, want);
	return 2;
}

static int parse_count(const char *opt, const char *v, unsigned max, unsigned *out)
{
	char *end;
	unsigned long n = strtoul(v, &end, 10);
	if (!*v || *end || n < 1 || n > max) {
		char want[48];
		snprintf(want, sizeof(want), "a count from 1 to %u", max);
		return bad_arg(opt, v, want);
	}
	*out = (unsigned)n;
	return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"log", required_argument, NULL, OPT_LOG},
	    {"hugetlb", required_argument, NULL, OPT_HUGETLB},
	    {"hugetlb-page", required_argument, NULL, OPT_HUGETLB_PAGE},
	    {"no-devmem", no_argument, NULL, OPT_NO_DEVMEM},
	    {"window", required_argument, NULL, OPT_WINDOW},
	    {"sample", required_argument, NULL, OPT_SAMPLE},
	    {"step", required_argument, NULL, OPT_STEP},
	    {"granule", required_argument, NULL, OPT_GRANULE},
	    {"calibration", required_argument, NULL, OPT_CALIB},
	    {"reps", required_argument, NULL, OPT_REPS},
	    {"no-write-check", no_argument, NULL, OPT_NO_WCHECK},
	    {"model", required_argument, NULL, OPT_MODEL},
	    {"check", no_argument, NULL, OPT_CHECK},
	    {"replay", required_argument, NULL, OPT_REPLAY},
	    {"sysfs-root", required_argument, NULL, OPT_SYSFS},
	    {"iomem", required_argument, NULL, OPT_IOMEM},
	    {"firmware-memmap", required_argument, NULL, OPT_FWMAP},
	    {"mem-path", required_argument, NULL, OPT_MEMPATH},
	    {"quiet", no_argument, NULL, 'q'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c, rc = 0;

	*a = (struct args){.output = CHANMAP_DEFAULT_MAP};
	hvt_probe_default_params(&a->p);
	a->hw.devmem = true;
	a->hw.hugetlb_page = 2ull << 20;
	while (!rc && (c = getopt_long(argc, argv, "o:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			a->output = optarg;
			break;
		case 'q':
			a->quiet = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case OPT_LOG:
			a->log = optarg;
			break;
		case OPT_MODEL:
			a->model = optarg;
			break;
		case OPT_CHECK:
			a->check = true;
			break;
		case OPT_REPLAY:
			a->replay = optarg;
			break;
		case OPT_NO_DEVMEM:
			a->hw.devmem = false;
			break;
		case OPT_NO_WCHECK:
			a->p.write_check = false;
			break;
		case OPT_SYSFS:
			a->hw.sysfs_root = optarg;
			break;
		case OPT_IOMEM:
			a->hw.iomem = optarg;
			break;
		case OPT_FWMAP:
			a->hw.fwmap = optarg;
			break;
		case OPT_MEMPATH:
			a->hw.mem_path = optarg;
			break;
		case OPT_HUGETLB:
			if (hvt_parse_size(optarg, &a->hw.hugetlb_bytes) || !a->hw.hugetlb_bytes)
				rc = bad_arg("--hugetlb", optarg, "a size such as 8G");
			break;
		case OPT_HUGETLB_PAGE:
			if (hvt_parse_size(optarg, &a->hw.hugetlb_page) ||
			    (a->hw.hugetlb_page != (2ull << 20) && a->hw.hugetlb_page != (1ull << 30)))
				rc = bad_arg("--hugetlb-page", optarg, "2M or 1G");
			break;
		case OPT_WINDOW:
			if (hvt_parse_duration(optarg, &a->p.window_ns))
				rc = bad_arg("--window", optarg, "a duration such as 20ms");
			break;
		case OPT_SAMPLE:
			if (hvt_parse_size(optarg, &a->p.sample_bytes))
				rc = bad_arg("--sample", optarg, "a size such as 2M");
			break;
		case OPT_STEP:
			if (hvt_parse_size(optarg, &a->p.step_bytes))
				rc = bad_arg("--step", optarg, "a size such as 1G");
			break;
		case OPT_GRANULE:
			if (hvt_parse_size(optarg, &a->p.granule))
				rc = bad_arg("--granule", optarg, "a size such as 64M");
			break;
		case OPT_CALIB:
			rc = parse_count("--calibration", optarg, 10000, &a->p.calibration_windows);
			break;
		case OPT_REPS:
			rc = parse_count("--reps", optarg, 1024, &a->p.reps);
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (rc)
		return rc;
	if (optind < argc) {
		fprintf(stderr, "chanmap probe: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (a->model && a->replay) {
		fprintf(stderr, "chanmap probe: --model and --replay are two different sources; give one\n");
		return 2;
	}
	if (a->check && !a->model) {
		fprintf(stderr,
			"chanmap probe: --check needs --model (only a model knows the right answer)\n");
		return 2;
	}
	if (a->hw.hugetlb_bytes % a->hw.hugetlb_page) {
		fprintf(stderr, "chanmap probe: --hugetlb is not a whole number of %" PRIu64 " KiB pages\n",
			a->hw.hugetlb_page >> 10);
		return 2;
	}
	return 0;
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
	fprintf(stderr,
		"chanmap probe: %zu of %zu channels have memory (%zu only in interleaved regions), %zu "
		"interleaved region(s); %" PRIu64 " windows (calibration %" PRIu64 ", coarse %" PRIu64
		", bisection %" PRIu64 ", retries and votes %" PRIu64 ", socket moves %" PRIu64
		", verified %" PRIu64 ", write checks %" PRIu64 "), %" PRIu64 " of %" PRIu64
		" blocks measured, %u rep(s) per line\n",
		populated, m->nchannels, only_interleaved, m->ninterleaved, st->windows, st->calibration,
		st->coarse, st->bisection, st->retries, st->socket_moves, st->verified, st->write_checks,
		st->blocks_measured, st->blocks, st->reps);
	fprintf(stderr, "chanmap probe: %.1f GiB probed; at %.0f ms per window that is %.1f s of probing%s\n",
		m->probe.probed_bytes / (double)(1ull << 30), m->probe.window_ns / 1e6, st->implied_seconds,
		a->model ? " (implied: the MODEL runs instantly)" : "");
	if (m->advice[0])
		fprintf(stderr, "chanmap probe: INTERLEAVED: %s\n", m->advice);
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
	fprintf(stderr,
		"chanmap probe: MODEL check: every channel's ranges and every interleaved region match "
		"the model's truth exactly\n");
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

	if (rc)
		return rc == 1 ? 0 : rc;
	if (a.model)
		rc = hvt_probe_model_open(a.model, &b, &err);
	else if (a.replay)
		rc = hvt_probe_log_open(a.replay, &b, &err);
	else
		rc = hvt_probe_hw_open(&a.hw, &b, &err);
	if (rc) {
		fprintf(stderr, "chanmap probe: %s\n", err.msg);
		return rc == -EINVAL && (a.model || a.replay) ? 2 : 1;
	}
	if (a.model && !a.quiet)
		fprintf(stderr, "chanmap probe: using a MODEL memory controller, not hardware (%s)\n",
			a.model);
	if (a.log && !(log = fopen(a.log, "we"))) {
		fprintf(stderr, "chanmap probe: cannot create the session log %s: %s\n", a.log,
			strerror(errno));
		hvt_probe_backend_destroy(b);
		return 2;
	}
	rc = hvt_probe_run(b, &a.p, a.quiet ? NULL : stderr, log, &m, &st, &err);
	if (log && fclose(log) && !rc)
		rc = hvt_err_set(&err, -EIO, "writing the session log %s failed", a.log);
	if (rc) {
		fprintf(stderr, "chanmap probe: %s\n", err.msg);
		hvt_probe_backend_destroy(b);
		return 1;
	}
	hvt_format_wall_seconds(hvt_wall_now_ns(), m.created, sizeof(m.created));
	summarize(&m, &st, &a);
	int status = 0;
	if (st.unattributed_bytes) {
		fprintf(stderr,
			"chanmap probe: %.1f MiB (first at 0x%" PRIx64
			") showed no clear channel and is left out of "
			"the map: no counter rose as expected (is the host idle? is that memory DRAM?)\n",
			st.unattributed_bytes / (double)(1 << 20), st.first_unattributed);
		status = 3;
	}
	if (st.unresolved_bytes) {
		fprintf(stderr,
			"chanmap probe: UNRESOLVED: %.1f MiB (first at 0x%" PRIx64
			") is left out of the map: its channel set stayed ambiguous after the retries, "
			"or a second look disagreed with the first; nothing is guessed. Probe again "
			"when the host is quieter (exit status 4)\n",
			st.unresolved_bytes / (double)(1 << 20), st.first_unresolved);
		status = 4;
	}
	if (a.check && check_model(b, &m))
		status = 1;
	if (hvt_chanmap_write(&m, a.output, &err)) {
		fprintf(stderr, "chanmap probe: %s\n", err.msg);
		status = 1;
	} else if (!a.quiet) {
		fprintf(stderr, "chanmap probe: wrote %s\n", a.output);
	}
	hvt_chanmap_free(&m);
	hvt_probe_backend_destroy(b);
	return status;
}
