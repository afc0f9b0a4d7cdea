/* SPDX-License-Identifier: MIT */
/*
 * The guest of hvmtrace-vmm: the shared phase loop (phase_loop.inc) at CPL3, straight from the VMM's register
 * setup (no firmware, no kernel), reporting to the VMM through the MMIO doorbell at %rbp (guest_abi.h).
 * Position-independent; kept in .rodata because the VMM only copies these bytes into guest memory.
 */
#include "guest_abi.h"

	.macro	begin_phase
	mov	%r12d, %eax
	mov	%eax, GUEST_REG_PHASE(%rbp)
	.endm

	/* The VMM answers 0 (another pass) or 1 (the phase is over). */
	.macro	end_pass_poll
	mov	GUEST_REG_POLL(%rbp), %eax
	test	%eax, %eax
	.endm

	.macro	all_done
	mov	%eax, GUEST_REG_DONE(%rbp)
	jmp	phase_loop_round
	.endm

	.section .rodata
	.globl	guest_payload_start, guest_payload_end
	.balign	16
	.code64
guest_payload_start:
#include "phase_loop.inc"
guest_payload_end:

	.section .note.GNU-stack, "", @progbits
