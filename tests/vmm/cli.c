// SPDX-License-Identifier: MIT
/* Command-line parsing and --help for hvmtrace-vmm. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "hvmtrace/util.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static void usage(FILE *f)
{
	fputs(
	    "usage: hvmtrace-vmm [OPTIONS]\n"
	    "A tiny KVM VMM for testing hvmtrace: runs a guest payload at CPL3 that writes and reads known\n"
	    "guest pages phase by phase, logs when each phase ran, and serves the attach protocol "
	    "(dirty-log; also ad when KVM has the KVM_AD_HARVEST patch).\n"
	    "\n"
	    "Guest:\n"
	    "  --low-ram SIZE         RAM slot 0 at guest-physical 0 (default 3G; below the hole at 3-4 "
	    "GiB)\n"
	    "  --high-ram SIZE        RAM slot 1 at 4 GiB (default 1G). Sizes take K, M, G, T; multiples of "
	    "2M\n"
	    "  --payload NAME         built-in script: phases4 (default; the test pattern), array, idle\n"
	    "  --array-size SIZE      array payload: bytes of each array a, b, c (default 64M)\n"
	    "  --phase-time DURATION  how long each phase lasts (default 3.5s; ns, us, ms, s, m, h)\n"
	    "  --hold-intervals N     also hold each phase until the tracer has harvested N whole intervals\n"
	    "                         inside it (a logged pass inside each), as --follow shows them\n"
	    "  --follow FILE          the tracer's JSON Lines (record --jsonl FILE), read as they grow\n"
	    "  --repeat N             run the script N times, 0 = until killed (default 1)\n"
	    "\n"
	    "Logging:\n"
	    "  --phase-log FILE       JSON Lines: the script, each phase start, passes, done\n"
	    "  --pass-log-gap DURATION  log at most one pass per DURATION besides each phase's first and\n"
	    "                         last (default 1ms)\n"
	    "  -v, --verbose          progress on stderr\n"
	    "\n"
	    "Attach protocol:\n"
	    "  --listen SOCKET        serve tracers on this unix socket (mode 0600)\n"
	    "  --name NAME            VM name in the hello message\n"
	    "  --harvest-cpu CPU      default host CPU for the harvest thread (a tracer may ask for "
	    "another)\n"
	    "  --vcpu-cpu CPU         pin the vCPU thread to this host CPU (default: unpinned)\n"
	    "  --wait-attach          start the guest only once a tracer has attached\n"
	    "\n"
	    "  -h, --help             this text\n"
	    "Exit status: 0 when the script ran (or SIGINT/SIGTERM stopped it), 1 on a guest or KVM error,\n"
	    "2 on a usage error.\n",
	    f);
}

static int bad(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "hvmtrace-vmm: %s %s: %s (see --help)\n", opt, val, why);
	return -1;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

static int parse_ram(const char *opt, const char *val, uint64_t *out)
{
	if (hvt_parse_size(val, out))
		return bad(opt, val, "not a size (e.g. 512M, 3G)");
	if (*out % (2 * MiB))
		return bad(opt, val, "must be a multiple of 2M (the guest maps RAM with 2 MiB pages)");
	return 0;
}

enum {
	OPT_LOW = 256,
	OPT_HIGH,
	OPT_PAYLOAD,
	OPT_ARRAY,
	OPT_PHASE_TIME,
	OPT_REPEAT,
	OPT_HOLD_INTERVALS,
	OPT_FOLLOW,
	OPT_PHASE_LOG,
	OPT_PASS_GAP,
	OPT_LISTEN,
	OPT_NAME,
	OPT_HARVEST_CPU,
	OPT_VCPU_CPU,
	OPT_WAIT_ATTACH,
};

static const struct option long_opts[] = {
    {"low-ram", required_argument, NULL, OPT_LOW},
    {"high-ram", required_argument, NULL, OPT_HIGH},
    {"payload", required_argument, NULL, OPT_PAYLOAD},
    {"array-size", required_argument, NULL, OPT_ARRAY},
    {"phase-time", required_argument, NULL, OPT_PHASE_TIME},
    {"repeat", required_argument, NULL, OPT_REPEAT},
    {"hold-intervals", required_argument, NULL, OPT_HOLD_INTERVALS},
    {"follow", required_argument, NULL, OPT_FOLLOW},
    {"phase-log", required_argument, NULL, OPT_PHASE_LOG},
    {"pass-log-gap", required_argument, NULL, OPT_PASS_GAP},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"name", required_argument, NULL, OPT_NAME},
    {"harvest-cpu", required_argument, NULL, OPT_HARVEST_CPU},
    {"vcpu-cpu", required_argument, NULL, OPT_VCPU_CPU},
    {"wait-attach", no_argument, NULL, OPT_WAIT_ATTACH},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_one(int c, const char *val, struct vmm_options *o)
{
	uint64_t v;

	switch (c) {
	case OPT_LOW:
		if (parse_ram("--low-ram", val, &o->low_ram))
			return -1;
		if (o->low_ram < 2 * MiB || o->low_ram > 4 * GiB - 2 * MiB)
			return bad("--low-ram", val,
				   "must be between 2M and 4G-2M (the doorbell page sits below 4 GiB, slot 1 "
				   "above)");
		return 0;
	case OPT_HIGH:
		if (parse_ram("--high-ram", val, &o->high_ram))
			return -1;
		if (o->high_ram > 256 * GiB)
			return bad("--high-ram", val, "at most 256G");
		return 0;
	case OPT_PAYLOAD:
		o->payload = val;
		return 0;
	case OPT_ARRAY:
		if (hvt_parse_size(val, &o->array_bytes) || o->array_bytes == 0)
			return bad("--array-size", val, "not a size (e.g. 64M)");
		return 0;
	case OPT_PHASE_TIME:
		if (hvt_parse_duration(val, &o->phase_ns))
			return bad("--phase-time", val, "not a duration (e.g. 3.5s, 500ms)");
		return 0;
	case OPT_PASS_GAP:
		if (hvt_parse_duration(val, &o->pass_gap_ns))
			return bad("--pass-log-gap", val, "not a duration (e.g. 1ms)");
		return 0;
	case OPT_REPEAT:
		if (parse_u64(val, &o->repeat))
			return bad("--repeat", val, "not a count (0 = until killed)");
		return 0;
	case OPT_HOLD_INTERVALS:
		if (parse_u64(val, &v) || v > 1000)
			return bad("--hold-intervals", val, "not a count up to 1000");
		o->hold_intervals = (unsigned)v;
		return 0;
	case OPT_FOLLOW:
		o->follow = val;
		return 0;
	case OPT_PHASE_LOG:
		o->phase_log = val;
		return 0;
	case OPT_LISTEN:
		o->listen = val;
		return 0;
	case OPT_NAME:
		if (strlen(val) >= 64)
			return bad("--name", val, "longer than 63 bytes");
		o->name = val;
		return 0;
	case OPT_HARVEST_CPU:
		if (parse_u64(val, &v) || v >= 1024)
			return bad("--harvest-cpu", val, "not a CPU number");
		o->harvest_cpu = (int)v;
		return 0;
	case OPT_VCPU_CPU:
		if (parse_u64(val, &v) || v >= 1024)
			return bad("--vcpu-cpu", val, "not a CPU number");
		o->vcpu_cpu = (int)v;
		return 0;
	case OPT_WAIT_ATTACH:
		o->wait_attach = true;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	}
	return -1;
}

int cli_parse(int argc, char **argv, struct vmm_options *o)
{
	int c;

	*o = (struct vmm_options){
	    .low_ram = 3 * GiB,
	    .high_ram = 1 * GiB,
	    .payload = "phases4",
	    .phase_ns = 3500000000ull,
	    .pass_gap_ns = 1000000ull,
	    .repeat = 1,
	    .array_bytes = 64 * MiB,
	    .harvest_cpu = -1,
	    .vcpu_cpu = -1,
	};
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hv", long_opts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == '?' || c == ':') {
			if (optopt)
				fprintf(
				    stderr,
				    "hvmtrace-vmm: option -%c: unknown or missing its value (see --help)\n",
				    optopt);
			else
				fprintf(stderr,
					"hvmtrace-vmm: %s: unknown option or missing value (see --help)\n",
					argv[optind - 1]);
			return -1;
		}
		if (parse_one(c, optarg, o))
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "hvmtrace-vmm: unexpected argument '%s' (see --help)\n", argv[optind]);
		return -1;
	}
	if (!o->hold_intervals != !o->follow) {
		fprintf(stderr, "hvmtrace-vmm: --hold-intervals and --follow go together\n");
		return -1;
	}
	if (o->wait_attach && !o->listen) {
		fprintf(stderr, "hvmtrace-vmm: --wait-attach needs --listen SOCKET\n");
		return -1;
	}
	return 0;
}
