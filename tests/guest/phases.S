/* SPDX-License-Identifier: MIT */
/*
 * phases: the hvmtrace-vmm payload (tests/vmm/phase_loop.inc) as a PVH image for QEMU -kernel, driven by
 * tests/tools/qemu_phases through the command and ack pages of phases_abi.h.
 *
 * The CPL0 part is as short as possible, because this host's KVM (kvm_pvm) emulates guest CPL0 code an
 * instruction at a time: the page tables are built by the assembler (identity map of the first 8 GiB in
 * user-accessible 2 MiB pages, A and D preset so the CPU never writes them), the GDT's descriptors have
 * their accessed bits set, and the entry only enables long mode, loads the IDT and the TSS (ltr marks its
 * descriptor busy: the GDT's only write, before any tracer attaches) and drops to CPL3 with interrupts off.
 * After that the guest touches nothing but its own image (read once, before it reports ready; then only its
 * code, and its page tables through the CPU's walks), its script's pages, the command page (read) and the
 * ack page (where it also leaves the image's layout for the driver: phases_abi.h).
 *
 * The guest never enables interrupts (phases_if.S does) and should take no exception, but if one reaches it
 * anyway (a stray interrupt, or a fault from memory that changed under it), an IDT catches every vector:
 * the handler leaves the CPU's frame and CR2 in the ack page, reports the vector there (PHASES_ACK_FAULT)
 * and halts, so the driver can say what happened instead of seeing the VM shut down on a triple fault.
 */
#include "guest_abi.h"
#include "phases_abi.h"
#include "pvh_entry.inc"

#define PTE_TABLE 0x27 /* present, writable, user, accessed */
#define PTE_2M    0xe7 /* … dirty, 2 MiB page */
#define SEL_KERNEL_DATA 0x10
#define SEL_USER_DATA   (0x18 | 3)
#define SEL_USER_CODE   (0x20 | 3)
#define SEL_TSS         0x28
#define ACK_OFFSET      (PHASES_ACK_GPA - PHASES_CMD_GPA)
#ifndef PHASES_CPL3_RFLAGS
#define PHASES_CPL3_RFLAGS 0x2
#endif

	/* The ack: phase << 48 | passes, one store. */
	.macro	ack phase
	mov	\phase, %rax
	shl	$PHASES_ACK_SHIFT, %rax
	or	%r11, %rax
	mov	%rax, ACK_OFFSET(%rbp)
	.endm

	.macro	begin_phase
	ack	%r12
	.endm

	/* Another pass while the driver still asks for this phase. */
	.macro	end_pass_poll
	ack	%r12
	mov	(%rbp), %eax
	cmp	%r12d, %eax
	.endm

	/* Reports the end and then spins without touching memory until QEMU is stopped. */
	.macro	all_done
	ack	$PHASES_ACK_DONE
1:	pause
	jmp	1b
	.endm

	pvh_entry_start stack_top
	enter_long_mode pml4, long_mode

	.code64
long_mode:
	movl	$SEL_KERNEL_DATA, %eax
	movl	%eax, %ds
	movl	%eax, %es
	movl	%eax, %ss
	lidt	idt_desc
	movw	$SEL_TSS, %ax
	ltr	%ax
#if PHASES_CPL3_RFLAGS & 0x200
	/* IF will be set: mask both 8259s, which the firmware may have left unmasked (SeaBIOS's timer tick). */
	movb	$0xff, %al
	outb	%al, $0x21
	outb	%al, $0xa1
#endif
	/* iretq to CPL3: RFLAGS 0x2 (IF and IOPL 0; phases_if.S sets IF), no stack needed there. */
	pushq	$SEL_USER_DATA
	pushq	$0
	pushq	$PHASES_CPL3_RFLAGS
	pushq	$SEL_USER_CODE
	pushq	$cpl3_entry
	movq	$PHASES_SCRIPT_GPA, %rdi
	movq	$PHASES_CMD_GPA, %rbp
	iretq

cpl3_entry:
	/*
	 * Read every page of the image first (IDT, fault stubs, TSS, GDT): a vector's delivery then needs no
	 * fault of its own on them, so whatever reaches the guest gets to its handler.
	 */
	mov	$PHASES_IMAGE_GPA, %rdx
7:	mov	(%rdx), %rax
	add	$4096, %rdx
	cmp	$image_end, %rdx
	jb	7b
	/*
	 * Read every page the script names once, before any tracer attaches. A page's first fault gets a
	 * writable SPTE at once when the guest PTE is dirty and the host page writable (a shared tmpfs page
	 * is), and KVM marks it dirty then: without this, a page first *read* inside the trace would show up
	 * as written in that interval (docs/kvm-ad.md, "What the sets mean": fault-time pre-marking).
	 */
	mov	(%rdi), %r14
	lea	8(%rdi), %rsi
1:	test	%r14, %r14
	jz	5f
	mov	(%rsi), %r8
	add	8(%rsi), %r8
	add	$GUEST_PHASE_HEADER_BYTES, %rsi
2:	test	%r8, %r8
	jz	4f
	mov	(%rsi), %rdx
	mov	8(%rsi), %rcx
	mov	16(%rsi), %rbx
	test	%rcx, %rcx
	jz	3f
6:	mov	(%rdx), %rax
	add	%rbx, %rdx
	dec	%rcx
	jnz	6b
3:	add	$GUEST_RANGE_BYTES, %rsi
	dec	%r8
	jmp	2b
4:	dec	%r14
	jmp	1b
5:	movq	$pml4, PHASES_LAYOUT_TABLES
	movq	$tables_end, PHASES_LAYOUT_TABLES_END
	movq	$image_end, PHASES_LAYOUT_IMAGE_END
	xor	%r11d, %r11d
	ack	$PHASES_ACK_READY
	/* Wait for the driver's first command (reads only). */
1:	cmpl	$PHASES_CMD_WAIT, (%rbp)
	jne	phase_loop
	pause
	jmp	1b
#include "phase_loop.inc"

	/* Entered from a stub below with the vector on the stack at the top of the ack page. */
fault_common:
	mov	%cr2, %rax
	mov	%rax, PHASES_FAULT_CR2
	mov	$PHASES_FAULT_STACK_TOP, %rax
	sub	%rsp, %rax
	mov	%rax, PHASES_FAULT_FRAME_BYTES
	pop	%rax
	mov	$PHASES_ACK_FAULT, %rdx
	shl	$PHASES_ACK_SHIFT, %rdx
	or	%rdx, %rax
	mov	%rax, PHASES_ACK_GPA
1:	hlt
	jmp	1b

	/* At PHASES_VECTORS_GPA (pvh.ld puts .vectors first): one 16-byte stub per vector, then the TSS. */
	.section .vectors, "ax"
	.globl	fault_stubs
fault_stubs:
	.set	i, 0
	.rept	256
	pushq	$i
	jmp	fault_common
	.org	fault_stubs + (i + 1) * 16
	.set	i, i + 1
	.endr
	/* The 64-bit TSS: only RSP0, the stack for a vector that arrives at CPL3; no I/O bitmap. */
	.long	0
	.quad	PHASES_FAULT_STACK_TOP
	.fill	88, 1, 0
	.word	0, 104

	.section .rodata
	.balign	8
gdt:
	.quad	0
	.quad	0x00af9b000000ffff /* 0x08: kernel code, 64-bit, accessed (pvh_entry.inc) */
	.quad	0x00cf93000000ffff /* kernel data, accessed */
	.quad	0x00cff3000000ffff /* user data, accessed */
	.quad	0x00affb000000ffff /* user code, 64-bit, accessed */
	/* 0x28: the TSS, available, limit 0x67 */
	.quad	0x67 | ((PHASES_TSS_GPA & 0xffff) << 16) | (((PHASES_TSS_GPA >> 16) & 0xff) << 32) | (0x89 << 40) | \
		((PHASES_TSS_GPA >> 24) << 56)
	.quad	0
gdt_end:
gdt_desc:
	.word	gdt_end - gdt - 1
	.long	gdt

	/* Interrupt gates (IF stays clear) to the stubs, all at CPL0 through selector 0x08. */
	.balign	16
idt:
	.set	i, 0
	.rept	256
	.word	(PHASES_VECTORS_GPA + i * 16) & 0xffff, 0x08
	.byte	0, 0x8e
	.word	(PHASES_VECTORS_GPA + i * 16) >> 16
	.long	0, 0
	.set	i, i + 1
	.endr
idt_end:
idt_desc:
	.word	idt_end - idt - 1
	.quad	idt

	.section .data
	.balign	4096
pml4:
	.quad	pdpt + PTE_TABLE
	.fill	511, 8, 0
pdpt:
	.set	i, 0
	.rept	8
	.quad	pd + i * 4096 + PTE_TABLE
	.set	i, i + 1
	.endr
	.fill	504, 8, 0
pd:
	.set	i, 0
	.rept	8 * 512
	.quad	(i << 21) + PTE_2M
	.set	i, i + 1
	.endr
tables_end:

	.bss
	.balign	4096
	.skip	4096
stack_top:

	.section .note.GNU-stack, "", @progbits
