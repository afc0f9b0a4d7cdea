/* SPDX-License-Identifier: MIT */
/*
 * The guest's "system" area at the bottom of slot 0 (page tables, GDT and TSS, stack, payload code, script)
 * and the vCPU state that starts the payload directly in 64-bit mode at CPL3.
 */
#ifndef HVMTRACE_VMM_GUEST_IMAGE_H
#define HVMTRACE_VMM_GUEST_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vm;
struct hvt_err;

/* gfn 0 stays ordinary RAM, so a payload can write the first page of slot 0. */
#define GUEST_SYSTEM_BASE 0x1000ull
/* The system area ends below 16 MiB: a TiB guest's page tables alone take 4 MiB. */
#define GUEST_SYSTEM_LIMIT 0x1000000ull
#define GUEST_MAP_ALIGN    (2ull << 20) /* identity-mapped with 2 MiB pages */
#define GUEST_MAP_LIMIT    (4ull << 40) /* the highest guest-physical address mapped: 4 TiB */

/* A guest-physical range the page tables map (RAM that exists now or will be hot-plugged). */
struct guest_map {
	uint64_t gpa, size; /* multiples of GUEST_MAP_ALIGN */
};

struct guest_image {
	uint64_t system_first_gfn, system_npages;
	uint64_t code_gpa, script_gpa, stack_top, gdt_gpa, tss_gpa, pml4_gpa;
	uint64_t tables_end_gpa; /* the paging structures are [pml4_gpa, tables_end_gpa) */
};

struct system_pages;

/*
 * The system area by class, for the phase log: the GDT/TSS page and the stack page are never touched (no
 * segment load, no interrupt, no push at CPL3), the paging structures only by the CPU's walks.
 */
int guest_image_system_pages(const struct guest_image *img, struct system_pages *sys);

/* Writes the system area into guest memory; fails if it would not fit below GUEST_SYSTEM_LIMIT. */
int guest_image_build(struct vm *vm, const struct guest_map *maps, unsigned nmaps, const void *script,
		      size_t script_len, struct guest_image *img, struct hvt_err *err);

/*
 * Loads long mode, CPL3 segments and the entry registers into the vCPU; RFLAGS.IF as interrupts asks (no
 * interrupt is ever injected either way: the VM has no interrupt controller).
 */
int guest_image_load_cpu(struct vm *vm, const struct guest_image *img, bool interrupts, struct hvt_err *err);

#endif
