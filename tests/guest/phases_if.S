/* SPDX-License-Identifier: MIT */
/*
 * phases_if: the phases payload (phases.S) with interrupts enabled at CPL3 (RFLAGS.IF=1), for the Intel tier
 * of the nested lab: Bochs 2.7, its L0, gives L1 no external-interrupt VM exit while L2 runs with IF=0, and
 * this payload spins without exits, so with IF=0 L1 starves (docs/lab.md §6). No interrupt may reach it:
 * its entry masks both 8259s (the firmware's timer tick on QEMU's pc machine), the lab runs it under QEMU
 * -M microvm,pit=off,pic=off, and one that came all the same would be caught by its IDT and reported as a
 * fault.
 */
#define PHASES_CPL3_RFLAGS 0x202
#include "phases.S"
