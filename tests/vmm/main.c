// SPDX-License-Identifier: MIT
/*
 * hvmtrace-vmm: builds a two-slot guest (RAM below a PCI-like hole and above 4 GiB), loads the payload and
 * a built-in phase script, optionally waits for a tracer, runs the script and exits. See --help.
 */
#include <errno.h>
#include <sched.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach_server.h"
#include "cli.h"
#include "dirtyring.h"
#include "guest_abi.h"
#include "guest_image.h"
#include "hvmtrace/error.h"
#include "hvmtrace/options.h"
#include "hvmtrace/util.h"
#include "phase_hold.h"
#include "phaselog.h"
#include "script.h"
#include "vcpu_loop.h"
#include "vm.h"

#define GiB      (1ull << 30)
#define HIGH_GPA (4 * GiB)

static volatile sig_atomic_t stop_requested;
static struct kvm_run *volatile signal_run;

/* A harvest's kick (dirty ring): the vCPU leaves the guest, flushing the GFNs it buffered into its ring. */
static void on_kick_signal(int sig)
{
	(void)sig;
	if (signal_run)
		signal_run->immediate_exit = 1;
}

/* Makes a KVM_RUN in progress (or about to start) return at once; the loop then sees stop_requested. */
static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
	if (signal_run)
		signal_run->immediate_exit = 1;
}

static int install_signals(void)
{
	struct sigaction sa = {.sa_handler = on_stop_signal};

	sigemptyset(&sa.sa_mask);
	struct sigaction kick = {.sa_handler = on_kick_signal};

	sigemptyset(&kick.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0 ||
	    sigaction(SIGUSR1, &kick, NULL) < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* Threads started while these are blocked inherit the mask: signals then reach the vCPU thread. */
static void block_stop_signals(int how)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(how, &set, NULL);
}

static int setup_guest(struct vm *vm, const struct vmm_options *o, struct script *s, struct guest_image *img,
		       struct hvt_err *err)
{
	/* The doorbell is mapped like RAM but has no memslot: every access to it exits to the VMM. */
	struct guest_map maps[3] = {
	    {0, o->low_ram}, {HIGH_GPA, o->high_ram}, {GUEST_DOORBELL_GPA, GUEST_MAP_ALIGN}};
	unsigned nmaps = 3;
	struct script_geometry g = {
	    .low_pages = o->low_ram / 4096,
	    .high_first_gfn = HIGH_GPA / 4096,
	    .high_pages = o->high_ram / 4096,
	    .first_free_gfn = GUEST_SYSTEM_LIMIT / 4096,
	    .array_bytes = o->array_bytes,
	    .write_every = o->write_every,
	};
	uint8_t *bytes;
	size_t len;
	int rc;

	if ((rc = vm_create(vm, err)) || (rc = vm_add_slot(vm, 0, o->low_ram, "low", err)) ||
	    (rc = vm_add_slot(vm, HIGH_GPA, o->high_ram, "high", err)))
		return rc;
	if (o->dirty_ring && (rc = dirtyring_enable(vm, (uint32_t)o->dirty_ring, err)))
		return rc;
	if ((rc = script_build(s, o->payload, &g, err)))
		return rc;
	len = script_encoded_size(s);
	bytes = malloc(len);
	if (!bytes)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	script_encode(s, bytes, len);
	rc = guest_image_build(vm, maps, nmaps, bytes, len, img, err);
	free(bytes);
	if (rc || (rc = vm_create_vcpu(vm, err)) || (rc = guest_image_load_cpu(vm, img, o->guest_if, err)))
		return rc;
	if (o->dirty_ring && (rc = dirtyring_map(vm, pthread_self(), err)))
		return rc;
	return 0;
}

int main(int argc, char **argv)
{
	const uint64_t t_start = hvt_now_ns();
	struct vmm_options o;
	struct vm vm;
	struct script s = {0};
	struct guest_image img;
	struct phaselog pl = {0};
	struct phase_hold hold = {.fd = -1}; /* released at `out` even if never set up */
	struct attach_server *srv = NULL;
	struct hvt_err err = {{0}};
	const char *reason = "vmm setup failed";
	int rc, status;

	rc = cli_parse(argc, argv, &o);
	if (rc != HVT_OPTS_RUN)
		return rc;
	if (install_signals() < 0) {
		perror("hvmtrace-vmm: sigaction");
		return VMM_FAILED;
	}
	/* From here on every exit goes through `out`, which releases what was set up. */
	rc = setup_guest(&vm, &o, &s, &img, &err);
	if (!rc)
		rc = phase_hold_init(&hold, o.phase_ns, o.hold_intervals, o.follow, &err);
	if (!rc)
		rc = phaselog_open(&pl, o.phase_log, &err);
	if (rc) {
		fprintf(stderr, "hvmtrace-vmm: %s\n", err.msg);
		status = (rc == -EINVAL || rc == -E2BIG) ? VMM_USAGE : VMM_FAILED;
		goto out;
	}
	struct system_pages sys;
	if (guest_image_system_pages(&img, &sys)) {
		fprintf(stderr, "hvmtrace-vmm: out of memory\n");
		status = VMM_FAILED;
		goto out;
	}
	phaselog_script(&pl, &s, o.phase_ns, &sys, vm.slots, vm.nslots);
	system_pages_free(&sys);
	if (o.verbose)
		fprintf(stderr, "hvmtrace-vmm: system pages gfn %llu..%llu (code 0x%llx, script 0x%llx)\n",
			(unsigned long long)img.system_first_gfn,
			(unsigned long long)(img.system_first_gfn + img.system_npages - 1),
			(unsigned long long)img.code_gpa, (unsigned long long)img.script_gpa);
	signal_run = vm.run;

	if (o.listen) {
		struct attach_server_config cfg = {
		    .path = o.listen,
		    .vm_name = o.name,
		    .default_cpu = o.harvest_cpu,
		    .vcpu_tid = gettid(),
		    .verbose = o.verbose,
		    .ring_list_max = o.ring_list_max,
		};

		block_stop_signals(SIG_BLOCK);
		rc = attach_server_start(&srv, &vm, &cfg, &err);
		block_stop_signals(SIG_UNBLOCK);
		if (rc) {
			fprintf(stderr, "hvmtrace-vmm: %s\n", err.msg);
			status = VMM_FAILED;
			goto out;
		}
		if (o.verbose)
			fprintf(stderr, "hvmtrace-vmm: listening on %s\n", o.listen);
	}
	/* The vCPU runs on this thread; pin it only now so the server threads keep every CPU. */
	if (o.vcpu_cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(o.vcpu_cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "hvmtrace-vmm: --vcpu-cpu %d: %s\n", o.vcpu_cpu, strerror(errno));
			reason = "bad --vcpu-cpu";
			status = VMM_USAGE;
			goto out;
		}
	}
	if (o.wait_attach && attach_server_wait_attached(srv, &stop_requested) < 0)
		rc = RUN_STOPPED;
	else {
		struct run_config rc_cfg = {
		    .hold = &hold,
		    .pass_gap_ns = o.pass_gap_ns,
		    .repeat = o.repeat,
		    .t_process_start_ns = t_start,
		    .verbose = o.verbose,
		};

		rc = vcpu_run(&vm, &s, &pl, &rc_cfg, &stop_requested, &err);
	}
	dirtyring_vcpu_gone(&vm);
	reason = rc == RUN_FINISHED  ? "guest finished"
		 : rc == RUN_STOPPED ? "vmm stopped by a signal"
				     : "guest failed";
	if (rc < 0)
		fprintf(stderr, "hvmtrace-vmm: %s\n", err.msg);
	else {
		uint64_t now = hvt_now_ns();

		phaselog_done(&pl, now, now, rc == RUN_FINISHED ? "finished" : "signal");
	}
	status = rc < 0 ? VMM_FAILED : VMM_OK;
out:
	attach_server_finish(srv, reason);
	if (o.dirty_ring)
		fprintf(stderr, "hvmtrace-vmm: %llu dirty-ring-full exits\n",
			(unsigned long long)dirtyring_full_exits(&vm));
	phaselog_close(&pl);
	phase_hold_fini(&hold);
	script_free(&s);
	signal_run = NULL;
	vm_destroy(&vm);
	return status;
}
