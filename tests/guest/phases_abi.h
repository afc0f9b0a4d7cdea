/* SPDX-License-Identifier: MIT */
/*
 * What the PVH phase payload (phases.S) and its driver (tests/tools/qemu_phases.c) agree on. The guest runs
 * under QEMU, which has no doorbell device for a CPL3 guest, so they talk through two pages of guest RAM
 * that the driver also maps (guest RAM is a shared file): the driver writes the command page, the guest only
 * reads it; the guest writes the ack page, the driver only reads it. Host writes do not enter the guest's
 * dirty log, so the command page is never "written"; the ack page is written every pass and so belongs to
 * every phase's write set, while the command page, read all the time, counts with the system pages below
 * it (PHASES_IMAGE_GPA up to and including the command page).
 * Included from C and from assembly, so only #defines here.
 */
#ifndef HVMTRACE_GUEST_PHASES_ABI_H
#define HVMTRACE_GUEST_PHASES_ABI_H

#define PHASES_IMAGE_GPA   0x100000         /* the PVH image (code, GDT, page tables), see pvh.ld */
#define PHASES_VECTORS_GPA PHASES_IMAGE_GPA /* the image starts with its 256 fault stubs, 16 bytes each */
#define PHASES_TSS_GPA     (PHASES_VECTORS_GPA + 256 * 16)
#define PHASES_SCRIPT_GPA  0x200000 /* the script (guest_abi.h format), written by the driver before boot */
#define PHASES_SCRIPT_MAX  0x100000
#define PHASES_CMD_GPA     0x300000 /* u32: the phase the driver asks for; PHASES_CMD_WAIT before the first */
#define PHASES_ACK_GPA     0x301000 /* u64: phase << 48 | passes completed, written per pass and phase */
#define PHASES_FREE_GPA    0x1000000 /* the script's pages start here: nothing below but the above */
/*
 * Where the image's parts lie, for the driver's phase log (u64 gpas in the ack page, clear of the fault
 * frame at its top; the guest writes them before it reports ready): its paging structures
 * [TABLES, TABLES_END), and the end of the image, whose last page is the stack only the CPL0 entry uses.
 */
#define PHASES_LAYOUT_TABLES     (PHASES_ACK_GPA + 64)
#define PHASES_LAYOUT_TABLES_END (PHASES_ACK_GPA + 72)
#define PHASES_LAYOUT_IMAGE_END  (PHASES_ACK_GPA + 80)

#define PHASES_CMD_WAIT  0xffffffff
#define PHASES_ACK_SHIFT 48
#define PHASES_ACK_DONE  0xffff /* phase field after the last phase */
#define PHASES_ACK_READY 0xfffe /* phase field once the guest waits for its first command */
/*
 * Phase field after an exception or interrupt reached the guest (it then halts); the pass field is the
 * vector. The handler runs on a stack at the top of the ack page, so the CPU's frame stays there for the
 * driver to read: the last 40 bytes are RIP, CS, RFLAGS, RSP, SS; the error code, if the CPU pushed one,
 * lies just below them. PHASES_FAULT_FRAME_BYTES says which: 48 without an error code, 56 with one.
 */
#define PHASES_ACK_FAULT         0xfffd
#define PHASES_FAULT_CR2         (PHASES_ACK_GPA + 8)
#define PHASES_FAULT_FRAME_BYTES (PHASES_ACK_GPA + 16)
#define PHASES_FAULT_STACK_TOP   (PHASES_ACK_GPA + 0x1000)

#endif
