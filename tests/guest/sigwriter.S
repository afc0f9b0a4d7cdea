/*
 * sigwriter: a PVH guest that writes a 16-byte signature at each guest-physical address of its table and
 * then exits QEMU through isa-debug-exit (iobase 0xf4: exit status 1 = done).
 * The signature is "HVTSIG" + 2 NULs + the address (8 bytes, little-endian), so a test can find each one
 * in the memory backing file and check that it sits where the extent list says the address lives.
 * Long mode with an identity map of the first 64 GiB in 1 GiB pages reaches addresses above the PCI hole.
 * Used under TCG only: under this host's KVM (kvm_pvm) it resets at once (not investigated; its 1 GiB
 * pages are the likely cause: phases.S, with 2 MiB pages and the same entry, runs there).
 */
#define DEBUG_EXIT_PORT 0xf4
#include "pvh_entry.inc"

	pvh_entry_start stack_top
	/* PML4[0] -> PDPT; PDPT[i] = i GiB, present, writable, 1 GiB page */
	movl $pdpt, %eax
	orl $0x3, %eax
	movl %eax, pml4
	xorl %ecx, %ecx
1:	movl %ecx, %eax
	shll $30, %eax
	orl $0x83, %eax
	movl %eax, pdpt(, %ecx, 8)
	movl %ecx, %eax
	shrl $2, %eax            /* high dword: i >> 2 (i GiB = i << 30) */
	movl %eax, pdpt + 4(, %ecx, 8)
	incl %ecx
	cmpl $64, %ecx
	jne 1b
	enter_long_mode pml4, long_mode

	.code64
long_mode:
	leaq sig_table(%rip), %rsi
2:	movq (%rsi), %rdi
	cmpq $-1, %rdi
	je 3f
	movabsq $0x0000474953545648, %rax   /* "HVTSIG\0\0" */
	movq %rax, (%rdi)
	movq %rdi, 8(%rdi)
	addq $8, %rsi
	jmp 2b
3:	movw $DEBUG_EXIT_PORT, %dx
	xorl %eax, %eax
	outb %al, %dx
4:	hlt
	jmp 4b

	.balign 8
gdt:
	.quad 0
	.quad 0x00af9a000000ffff /* 64-bit code */
	.quad 0x00cf92000000ffff /* data */
gdt_end:
gdt_desc:
	.word gdt_end - gdt - 1
	.long gdt

	/* Guest-physical addresses to sign, -1 ends; chosen for a 4 GiB pc guest (RAM 0-3 GiB and 4-5 GiB):
	 * both sides of every 1 GiB, around the PCI hole, and the last page. */
	.balign 8
sig_table:
	.quad 0x00200000, 0x3ffff000, 0x40000000, 0x7ffff000, 0x80000000, 0xbffff000
	.quad 0x100000000, 0x120000000, 0x13ffff000
	.quad -1

	.bss
	.balign 4096
pml4:	.skip 4096
pdpt:	.skip 4096
	.skip 4096
stack_top:
