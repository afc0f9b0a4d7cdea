// SPDX-License-Identifier: MIT
/* Command-line parsing and --help for hvmtrace-vmm. */
#include <stdio.h>

#include "cli.h"
#include "hvmtrace/options.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define TiB (1ull << 40)

static const struct hvt_exit_status vmm_exits[] = {
    {VMM_OK, "the script ran, or SIGINT/SIGTERM stopped it"},
    {VMM_FAILED, "a guest, KVM or host error (such as a --listen socket that cannot be bound)"},
    {VMM_USAGE, "a usage error"},
    {0, NULL},
};

int cli_parse(int argc, char **argv, struct vmm_options *o)
{
	const struct hvt_option opts[] = {
	    HVT_OPT_HEADING("Guest:"),
	    HVT_OPT_SIZE(0, "low-ram", &o->low_ram, 2 * MiB, 4 * GiB - 2 * MiB, 2 * MiB, "SIZE",
			 "RAM slot 0 at guest-physical 0 (default 3G; below the hole at 3-4 GiB,\n"
			 "where the doorbell page sits)"),
	    HVT_OPT_SIZE(0, "high-ram", &o->high_ram, 2 * MiB, 4 * TiB - 4 * GiB, 2 * MiB, "SIZE",
			 "RAM slot 1 at 4 GiB (default 1G; sparse: only what the payload touches\n"
			 "becomes resident). Sizes take K, M, G, T; multiples of 2M"),
	    HVT_OPT_STRING(0, "payload", &o->payload, "NAME",
			   "built-in script: phases4 (default; the test pattern), array, idle, sparse"),
	    HVT_OPT_SIZE(0, "array-size", &o->array_bytes, 1, 0, 0, "SIZE",
			 "array payload: bytes of each array a, b, c (default 64M)"),
	    HVT_OPT_INT(0, "write-every", &o->write_every, 1, INT64_MAX, "N",
			"sparse payload: write every Nth page of the high slot (default 100: 1 %)"),
	    HVT_OPT_DURATION(0, "phase-time", &o->phase_ns, 1, "DURATION",
			     "how long each phase lasts (default 3.5s; ns, us, ms, s, m, h)"),
	    HVT_OPT_INT(0, "hold-intervals", &o->hold_intervals, 1, 1000, "N",
			"also hold each phase until the tracer has harvested N whole intervals\n"
			"inside it (a logged pass inside each), as --follow shows them"),
	    HVT_OPT_PATH(0, "follow", &o->follow, "FILE",
			 "the tracer's JSON Lines (record --jsonl FILE), read as they grow"),
	    HVT_OPT_INT(0, "repeat", &o->repeat, 0, INT64_MAX, "N",
			"run the script N times, 0 = until killed (default 1)"),
	    HVT_OPT_FLAG(0, "guest-if", &o->guest_if,
			 "run the payload with interrupts enabled (RFLAGS.IF=1; none is ever\n"
			 "injected), for the Intel lab's L0, Bochs, seen to give no interrupt\n"
			 "exits while its guest ran with IF=0"),
	    HVT_OPT_HEADING("Logging:"),
	    HVT_OPT_PATH(0, "phase-log", &o->phase_log, "FILE",
			 "JSON Lines: the script, each phase start, passes, done"),
	    HVT_OPT_DURATION(0, "pass-log-gap", &o->pass_gap_ns, 1, "DURATION",
			     "log at most one pass per DURATION besides each phase's first and\n"
			     "last (default 1ms)"),
	    HVT_OPT_FLAG('v', "verbose", &o->verbose, "progress on stderr"),
	    HVT_OPT_HEADING("Attach protocol:"),
	    HVT_OPT_PATH(0, "listen", &o->listen, "SOCKET", "serve tracers on this unix socket (mode 0600)"),
	    HVT_OPT_STRING(0, "name", &o->name, "NAME", "VM name in the hello message", .max = 63),
	    HVT_OPT_CPU(0, "harvest-cpu", &o->harvest_cpu, "CPU",
			"default host CPU for the harvest thread (a tracer may ask for another)"),
	    HVT_OPT_CPU(0, "vcpu-cpu", &o->vcpu_cpu, "CPU",
			"pin the vCPU thread to this host CPU (default: unpinned)"),
	    HVT_OPT_INT(0, "dirty-ring", &o->dirty_ring, 256, 65536, "N",
			"run the vCPU on KVM's dirty ring of N entries (a power of two) and offer\n"
			"mode dirty-ring instead of dirty-log"),
	    HVT_OPT_INT(0, "ring-list-max", &o->ring_list_max, 1, INT64_MAX, "N",
			"dirty-ring: hand over at most N pages as a list, more as bitmaps\n"
			"(default: as many as the bitmaps' bytes / 8)"),
	    HVT_OPT_FLAG(0, "wait-attach", &o->wait_attach,
			 "start the guest only once a tracer has attached"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace-vmm",
	    .synopsis = "[OPTIONS]",
	    .about =
		"A tiny KVM VMM for testing hvmtrace: runs a guest payload at CPL3 that writes\n"
		"and reads known guest pages phase by phase, logs when each phase ran, and serves\n"
		"the attach protocol (dirty-log, or dirty-ring with --dirty-ring; also ad when KVM has the KVM_AD_HARVEST patch).",
	    .options = opts,
	    .exits = vmm_exits,
	    .usage_status = VMM_USAGE,
	};
	int rc;

	*o = (struct vmm_options){
	    .low_ram = 3 * GiB,
	    .high_ram = 1 * GiB,
	    .payload = "phases4",
	    .phase_ns = 3500000000ull,
	    .pass_gap_ns = 1000000ull,
	    .repeat = 1,
	    .array_bytes = 64 * MiB,
	    .write_every = 100,
	    .harvest_cpu = -1,
	    .vcpu_cpu = -1,
	};
	rc = hvt_opts_parse(&cmd, argc, argv);
	if (rc == HVT_OPTS_RUN && o->wait_attach && !o->listen) {
		fprintf(stderr, "hvmtrace-vmm: --wait-attach needs --listen SOCKET\n");
		return VMM_USAGE;
	}
	if (rc == HVT_OPTS_RUN && o->dirty_ring & (o->dirty_ring - 1)) {
		fprintf(stderr, "hvmtrace-vmm: --dirty-ring %llu: not a power of two\n",
			(unsigned long long)o->dirty_ring);
		return VMM_USAGE;
	}
	if (rc == HVT_OPTS_RUN && o->ring_list_max && !o->dirty_ring) {
		fprintf(stderr, "hvmtrace-vmm: --ring-list-max needs --dirty-ring\n");
		return VMM_USAGE;
	}
	if (rc == HVT_OPTS_RUN && !o->hold_intervals != !o->follow) {
		fprintf(stderr, "hvmtrace-vmm: --hold-intervals and --follow go together\n");
		return VMM_USAGE;
	}
	return rc;
}
