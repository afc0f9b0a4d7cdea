/* SPDX-License-Identifier: MIT */
/*
 * The guest: runs at CPL3 in 64-bit mode, straight from the VMM's register setup (no firmware, no kernel).
 * It walks the script at %rdi (format in guest_abi.h) phase by phase and tells the VMM where it is through
 * the doorbell registers at %rbp (MMIO, see guest_abi.h). Registers only: it never touches its stack, so the only guest pages
 * it writes are those the script names.
 *
 * Position-independent; kept in .rodata because the VMM only copies these bytes into guest memory.
 *
 * Registers: rbp doorbell, r15 script, r14 phase count, r13 current phase, r12 phase index, r11 pass counter (the value
 * written), r8/r9 ranges left, rsi current range, rdi address, rcx pages left, rbx stride.
 */
#include "guest_abi.h"

	.section .rodata
	.globl	guest_payload_start, guest_payload_end
	.balign	16
	.code64
guest_payload_start:
	mov	%rdi, %r15
	xor	%r11d, %r11d
round:
	mov	(%r15), %r14
	lea	8(%r15), %r13
	xor	%r12d, %r12d
phase:
	cmp	%r14, %r12
	jae	done
	mov	%r12d, %eax
	mov	%eax, GUEST_REG_PHASE(%rbp)
pass:
	mov	(%r13), %r8
	mov	8(%r13), %r9
	lea	GUEST_PHASE_HEADER_BYTES(%r13), %rsi
write_range:
	test	%r8, %r8
	jz	read_range
	mov	(%rsi), %rdi
	mov	8(%rsi), %rcx
	mov	16(%rsi), %rbx
	test	%rcx, %rcx
	jz	2f
1:	mov	%r11, (%rdi)
	add	%rbx, %rdi
	dec	%rcx
	jnz	1b
2:	add	$GUEST_RANGE_BYTES, %rsi
	dec	%r8
	jmp	write_range
read_range:
	test	%r9, %r9
	jz	poll
	mov	(%rsi), %rdi
	mov	8(%rsi), %rcx
	mov	16(%rsi), %rbx
	test	%rcx, %rcx
	jz	2f
1:	mov	(%rdi), %rax
	add	%rbx, %rdi
	dec	%rcx
	jnz	1b
2:	add	$GUEST_RANGE_BYTES, %rsi
	dec	%r9
	jmp	read_range
poll:
	inc	%r11
	mov	GUEST_REG_POLL(%rbp), %eax
	test	%eax, %eax
	jz	pass
	/* %rsi is now just past this phase's ranges: the next phase's header. */
	mov	%rsi, %r13
	inc	%r12
	jmp	phase
done:
	mov	%eax, GUEST_REG_DONE(%rbp)
	jmp	round
guest_payload_end:

	.section .note.GNU-stack, "", @progbits
