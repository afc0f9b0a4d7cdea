// SPDX-License-Identifier: MIT
/*
 * The vCPU loop. The payload reports each phase on the PHASE doorbell register and ends each pass with a load
 * of the POLL register (guest_abi.h); the answer to POLL ends the phase once its hold is over (phase_hold.h:
 * --phase-time since its report, and with --follow the tracer's whole intervals inside it). Timestamps
 * bracket every pass: t_start before the KVM_RUN that began it (<= its first access), t_end after the KVM_RUN
 * that returned on its POLL (>= its last access).
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "dirtyring.h"
#include "guest_abi.h"
#include "hvmtrace/error.h"
#include "hvmtrace/util.h"
#include "phase_hold.h"
#include "phaselog.h"
#include "script.h"
#include "vcpu_loop.h"
#include "vm.h"

struct progress {
	uint64_t round;
	int phase;           /* -1 before the first PHASE report of a round */
	uint64_t pass;       /* passes ended in this phase */
	uint64_t pass_start; /* t_start of the pass in flight */
	bool pass_pending;   /* the next KVM_RUN begins a pass */
	uint64_t last_logged_end;
	bool checked_cpl;
};

static int guest_failure(struct vm *vm, struct hvt_err *err, const char *what)
{
	struct kvm_regs r;

	if (ioctl(vm->vcpu_fd, KVM_GET_REGS, &r) < 0)
		return hvt_err_set(err, -EIO, "guest failed: %s", what);
	return hvt_err_set(err, -EIO, "guest failed: %s (rip 0x%llx rsp 0x%llx rdi 0x%llx rflags 0x%llx)",
			   what, (unsigned long long)r.rip, (unsigned long long)r.rsp,
			   (unsigned long long)r.rdi, (unsigned long long)r.rflags);
}

/* The payload must run at CPL3: CPL0 guest code is emulated here, a thousand times slower. */
static int check_cpl3(struct vm *vm, const struct run_config *c, struct hvt_err *err)
{
	struct kvm_sregs s;

	if (ioctl(vm->vcpu_fd, KVM_GET_SREGS, &s) < 0)
		return hvt_err_set(err, -errno, "KVM_GET_SREGS: %s", strerror(errno));
	if (s.ss.dpl != 3 || (s.cs.selector & 3) != 3 || !s.cs.l)
		return hvt_err_set(err, -EIO, "guest is not in 64-bit CPL3 (cs 0x%x dpl %u l %u, ss dpl %u)",
				   s.cs.selector, s.cs.dpl, s.cs.l, s.ss.dpl);
	if (c->verbose)
		fprintf(stderr, "hvmtrace-vmm: guest reached 64-bit CPL3 %.1f ms after start\n",
			(double)(hvt_now_ns() - c->t_process_start_ns) / 1e6);
	return 0;
}

static int log_pass(struct phaselog *pl, const struct run_config *c, struct progress *p, uint64_t t_end,
		    bool last, struct hvt_err *err)
{
	if (p->pass == 0 || last || t_end - p->last_logged_end >= c->pass_gap_ns) {
		phaselog_pass(pl, (unsigned)p->phase, p->round, p->pass, p->pass_start, t_end);
		p->last_logged_end = t_end;
		if (phase_hold_pass(c->hold, p->pass_start, t_end))
			return hvt_err_set(err, -ENOMEM, "out of memory logging a pass");
	}
	return 0;
}

/* Returns 1 when the script's last round is done, 0 to go on, or a negative errno. */
static int handle_doorbell(struct vm *vm, const struct script *s, struct phaselog *pl,
			   const struct run_config *c, struct progress *p, uint64_t t_exit,
			   struct hvt_err *err)
{
	struct kvm_run *run = vm->run;
	uint64_t reg = run->mmio.phys_addr - GUEST_DOORBELL_GPA;
	uint32_t value = 0;
	char what[96];

	if (run->mmio.phys_addr < GUEST_DOORBELL_GPA || run->mmio.len != 4)
		goto unexpected;
	memcpy(&value, run->mmio.data, 4);
	switch (reg) {
	case GUEST_REG_PHASE:
		if (!run->mmio.is_write || value != (uint32_t)(p->phase + 1) || value >= s->nphases) {
			snprintf(what, sizeof(what), "reported phase %u after phase %d of %u", value,
				 p->phase, s->nphases);
			return guest_failure(vm, err, what);
		}
		p->phase = (int)value;
		p->pass = 0;
		p->pass_pending = true;
		phaselog_phase(pl, value, p->round, t_exit, t_exit);
		phase_hold_begin(c->hold, t_exit);
		return 0;
	case GUEST_REG_POLL: {
		if (run->mmio.is_write || p->phase < 0)
			goto unexpected;
		int over = phase_hold_over(c->hold, t_exit, err);

		if (over < 0)
			return hvt_err_prefix(err, over, "phase %d: ", p->phase);
		if (over && c->verbose && c->hold->want)
			fprintf(stderr,
				"hvmtrace-vmm: phase %d held %.3f s, until %u whole intervals inside it\n",
				p->phase, (double)(t_exit - c->hold->begin_ns) / 1e9, c->hold->have);
		value = (uint32_t)over;
		memcpy(run->mmio.data, &value, 4);
		if (log_pass(pl, c, p, t_exit, over, err))
			return -ENOMEM;
		p->pass++;
		p->pass_pending = true;
		return 0;
	}
	case GUEST_REG_DONE:
		if (!run->mmio.is_write || p->phase != (int)s->nphases - 1)
			goto unexpected;
		p->round++;
		p->phase = -1;
		p->pass_pending = false;
		return c->repeat && p->round >= c->repeat;
	}
unexpected:
	snprintf(what, sizeof(what), "unexpected %u-byte %s guest-physical 0x%llx (no RAM there)",
		 run->mmio.len, run->mmio.is_write ? "store to" : "load from",
		 (unsigned long long)run->mmio.phys_addr);
	return guest_failure(vm, err, what);
}

int vcpu_run(struct vm *vm, const struct script *s, struct phaselog *pl, const struct run_config *c,
	     volatile sig_atomic_t *stop, struct hvt_err *err)
{
	struct progress p = {.phase = -1};
	struct kvm_run *run = vm->run;
	char what[128];

	for (;;) {
		if (*stop)
			return RUN_STOPPED;
		uint64_t t_before = hvt_now_ns();
		if (p.pass_pending) {
			p.pass_start = t_before;
			p.pass_pending = false;
		}
		int r = ioctl(vm->vcpu_fd, KVM_RUN, 0);
		uint64_t t_after = hvt_now_ns();

		if (vm->ring) {
			run->immediate_exit = 0; /* a harvest's kick; a stop is seen at the loop's top */
			dirtyring_vcpu_exited(vm);
		}

		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue; /* a signal: *stop says whether to end */
			return hvt_err_set(err, -errno, "KVM_RUN: %s", strerror(errno));
		}
		if (!p.checked_cpl) {
			int rc = check_cpl3(vm, c, err);

			if (rc)
				return rc;
			p.checked_cpl = true;
		}
		switch (run->exit_reason) {
		case KVM_EXIT_MMIO: {
			int rc = handle_doorbell(vm, s, pl, c, &p, t_after, err);

			if (rc < 0)
				return rc;
			if (rc == 1)
				return RUN_FINISHED;
			break;
		}
		case KVM_EXIT_INTR:
			break;
		case KVM_EXIT_DIRTY_RING_FULL: {
			int rc = dirtyring_ring_full(vm, err);

			if (rc)
				return rc;
			break;
		}
		case KVM_EXIT_SHUTDOWN:
			return guest_failure(vm, err,
					     "shutdown (triple fault: an exception at CPL3 with no IDT)");
		case KVM_EXIT_IO:
			snprintf(what, sizeof(what), "unexpected port I/O (port 0x%x)", run->io.port);
			return guest_failure(vm, err, what);
		case KVM_EXIT_FAIL_ENTRY:
			snprintf(what, sizeof(what), "VM entry failed (hardware reason 0x%llx)",
				 (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
			return guest_failure(vm, err, what);
		case KVM_EXIT_INTERNAL_ERROR:
			snprintf(what, sizeof(what), "KVM internal error, suberror %u",
				 run->internal.suberror);
			return guest_failure(vm, err, what);
		default:
			snprintf(what, sizeof(what), "unexpected exit reason %u", run->exit_reason);
			return guest_failure(vm, err, what);
		}
	}
}
