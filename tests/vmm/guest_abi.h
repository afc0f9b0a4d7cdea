/* SPDX-License-Identifier: MIT */
/*
 * What the VMM and the guest payload (payload.S) agree on: the doorbell registers and the script's byte
 * layout. Included from C and from assembly, so only #defines here.
 *
 * Doorbell. The payload talks to the VMM through MMIO: loads and stores to a page in the PCI-like hole that
 * no memslot backs, each one a KVM_EXIT_MMIO. Port I/O does not work at CPL3 on this host's KVM (kvm_pvm
 * runs guest user code natively and drops RFLAGS.IOPL, and it injects #GP instead of consulting the TSS I/O
 * bitmap), while MMIO exits work at any privilege level on any KVM.
 *
 * Script (little-endian u64s, at the guest-physical address the payload finds in %rdi):
 *   nphases
 *   per phase: nwrite, nread, then nwrite + nread ranges of {gpa, npages, stride_bytes}
 * A pass of phase k writes one qword to each page of its write ranges, then reads one qword from each page
 * of its read ranges, then asks the POLL register whether the phase is over (nonzero answer: it is).
 */
#ifndef HVMTRACE_VMM_GUEST_ABI_H
#define HVMTRACE_VMM_GUEST_ABI_H

#define GUEST_DOORBELL_GPA 0xffe00000 /* the last 2 MiB below 4 GiB; mapped by the guest's page tables */
#define GUEST_REG_PHASE    0x00       /* store: a phase begins; the value is its index */
#define GUEST_REG_POLL     0x08       /* load: 0 = do another pass, 1 = the phase is over */
#define GUEST_REG_DONE     0x10       /* store: the last phase ended; the payload starts the script again */

#define GUEST_RANGE_BYTES        24 /* gpa, npages, stride_bytes */
#define GUEST_PHASE_HEADER_BYTES 16 /* nwrite, nread */

#endif
