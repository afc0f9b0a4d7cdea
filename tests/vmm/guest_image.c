// SPDX-License-Identifier: MIT
/*
 * Builds the guest's system area and enters 64-bit mode at CPL3 without running any guest CPL0 code: on
 * this host's KVM (kvm_pvm, shadow paging) guest CPL0 code is emulated an instruction at a time, CPL3 code
 * runs natively. Every paging-structure entry has A (and, in leaves, D) preset and the descriptors have
 * their accessed bits set, so the CPU never writes these pages and they never show up as written.
 */
#include <errno.h>
#include <stdbool.h>
#include <linux/kvm.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "guest_abi.h"
#include "guest_image.h"
#include "hvmtrace/error.h"
#include "phaselog.h"
#include "vm.h"

extern const char guest_payload_start[], guest_payload_end[];

#define PTE_P     (1ull << 0)
#define PTE_RW    (1ull << 1)
#define PTE_US    (1ull << 2)
#define PTE_A     (1ull << 5)
#define PTE_D     (1ull << 6)
#define PTE_PS    (1ull << 7)
#define PTE_TABLE (PTE_P | PTE_RW | PTE_US | PTE_A)
#define PTE_2M    (PTE_P | PTE_RW | PTE_US | PTE_A | PTE_D | PTE_PS)

#define PAGE 4096ull
#define GIB  (1ull << 30)
/* Guest-physical space the page tables can map: one PML4 entry (a PDPT) per 512 GiB. */
#define MAX_GIB (GUEST_MAP_LIMIT / GIB)

#define CR0_PE          (1ull << 0)
#define CR0_MP          (1ull << 1)
#define CR0_ET          (1ull << 4)
#define CR0_NE          (1ull << 5)
#define CR0_WP          (1ull << 16)
#define CR0_PG          (1ull << 31)
#define CR4_PAE         (1ull << 5)
#define EFER_LME        (1ull << 8)
#define EFER_LMA        (1ull << 10)
#define RFLAGS_RESERVED (1ull << 1)
#define RFLAGS_IF       (1ull << 9)

/* GDT selectors; user selectors carry RPL 3. */
#define SEL_USER_DATA (0x18 | 3)
#define SEL_USER_CODE (0x20 | 3)
#define SEL_TSS       0x28
#define TSS_BYTES     104

struct bump {
	uint64_t next;
};

static uint64_t take_pages(struct bump *b, uint64_t bytes)
{
	uint64_t at = b->next;

	b->next += (bytes + PAGE - 1) & ~(PAGE - 1);
	return at;
}

/* A flat segment descriptor: base 0, limit 4 GiB, with access byte and flags (L, D/B) as given. */
static uint64_t flat_descriptor(uint8_t access, uint8_t flags)
{
	return 0xffffull | (uint64_t)access << 40 | 0xfull << 48 | (uint64_t)(flags | 0x8) << 52;
}

static void write_gdt(uint64_t *gdt, uint64_t tss)
{
	gdt[0] = 0;
	gdt[1] = flat_descriptor(0x9b, 0x2); /* kernel code 64 (unused, for completeness) */
	gdt[2] = flat_descriptor(0x93, 0x4); /* kernel data */
	gdt[3] = flat_descriptor(0xf3, 0x4); /* user data, DPL 3, accessed */
	gdt[4] = flat_descriptor(0xfb, 0x2); /* user code 64, DPL 3, accessed */
	/* 64-bit TSS, type 0xb (busy, as it is once loaded into TR). */
	gdt[5] = (TSS_BYTES - 1) | (tss & 0xffffff) << 16 | 0x8bull << 40 | (tss >> 24 & 0xff) << 56;
	gdt[6] = tss >> 32;
}

/*
 * Identity maps every range with 2 MiB pages: a PD per GiB and a PDPT per 512 GiB, so a TiB guest takes
 * 4 MiB of page tables (this host's KVM offers no 1 GiB pages: CPUID Page1GB is clear).
 */
static int map_ranges(struct vm *vm, struct bump *b, const struct guest_map *maps, unsigned nmaps,
		      uint64_t pml4_gpa, struct hvt_err *err)
{
	static uint64_t pd_of_gib[MAX_GIB], pdpt_of_512g[MAX_GIB / 512];
	uint64_t *pml4 = vm_gpa_to_host(vm, pml4_gpa, PAGE);

	memset(pd_of_gib, 0, sizeof(pd_of_gib));
	memset(pdpt_of_512g, 0, sizeof(pdpt_of_512g));
	for (unsigned i = 0; i < nmaps; i++) {
		if (maps[i].gpa % GUEST_MAP_ALIGN || maps[i].size % GUEST_MAP_ALIGN ||
		    maps[i].gpa + maps[i].size > GUEST_MAP_LIMIT)
			return hvt_err_set(
			    err, -EINVAL,
			    "guest range 0x%llx+0x%llx is not 2 MiB aligned or lies above %llu GiB",
			    (unsigned long long)maps[i].gpa, (unsigned long long)maps[i].size,
			    (unsigned long long)MAX_GIB);
		for (uint64_t g = maps[i].gpa / GIB; g * GIB < maps[i].gpa + maps[i].size; g++) {
			if (!pdpt_of_512g[g / 512])
				pdpt_of_512g[g / 512] = take_pages(b, PAGE);
			if (!pd_of_gib[g])
				pd_of_gib[g] = take_pages(b, PAGE);
		}
	}
	if (b->next > GUEST_SYSTEM_LIMIT)
		return 0; /* the caller says what does not fit */
	if (!pml4)
		return hvt_err_set(err, -EINVAL, "slot 0 does not hold the page tables");
	for (uint64_t t = 0; t < MAX_GIB / 512; t++)
		if (pdpt_of_512g[t])
			pml4[t] = pdpt_of_512g[t] | PTE_TABLE;
	for (unsigned i = 0; i < nmaps; i++) {
		for (uint64_t a = maps[i].gpa; a < maps[i].gpa + maps[i].size; a += GUEST_MAP_ALIGN) {
			uint64_t g = a / GIB;
			uint64_t *pdpt = vm_gpa_to_host(vm, pdpt_of_512g[g / 512], PAGE);

			uint64_t *pd = vm_gpa_to_host(vm, pd_of_gib[g], PAGE);

			if (!pdpt || !pd)
				return hvt_err_set(err, -EINVAL, "slot 0 does not hold the page tables");
			pdpt[g % 512] = pd_of_gib[g] | PTE_TABLE;
			pd[(a % GIB) / GUEST_MAP_ALIGN] = a | PTE_2M;
		}
	}
	return 0;
}

int guest_image_build(struct vm *vm, const struct guest_map *maps, unsigned nmaps, const void *script,
		      size_t script_len, struct guest_image *img, struct hvt_err *err)
{
	const size_t code_len = (size_t)(guest_payload_end - guest_payload_start);
	struct bump b = {GUEST_SYSTEM_BASE};
	int rc;

	memset(img, 0, sizeof(*img));
	img->gdt_gpa = take_pages(&b, PAGE);
	img->tss_gpa = img->gdt_gpa + 0x80;
	img->stack_top = take_pages(&b, PAGE) + PAGE;
	img->pml4_gpa = take_pages(&b, PAGE);
	if ((rc = map_ranges(vm, &b, maps, nmaps, img->pml4_gpa, err)))
		return rc;
	img->tables_end_gpa = b.next;
	img->code_gpa = take_pages(&b, code_len);
	img->script_gpa = take_pages(&b, script_len);
	if (b.next > GUEST_SYSTEM_LIMIT)
		return hvt_err_set(
		    err, -E2BIG,
		    "the system area (page tables, code, script) needs %llu KiB, more than the %llu KiB below 16 MiB: use less RAM or a smaller script",
		    (unsigned long long)(b.next / 1024), (unsigned long long)(GUEST_SYSTEM_LIMIT / 1024));
	img->system_first_gfn = GUEST_SYSTEM_BASE / PAGE;
	img->system_npages = (b.next - GUEST_SYSTEM_BASE) / PAGE;

	uint64_t *gdt = vm_gpa_to_host(vm, img->gdt_gpa, PAGE);
	void *code = vm_gpa_to_host(vm, img->code_gpa, code_len);
	void *scr = vm_gpa_to_host(vm, img->script_gpa, script_len);
	if (!gdt || !code || !scr)
		return hvt_err_set(err, -EINVAL, "slot 0 does not hold the system area [0x%llx, 0x%llx)",
				   (unsigned long long)GUEST_SYSTEM_BASE, (unsigned long long)b.next);

	write_gdt(gdt, img->tss_gpa);
	memset((char *)gdt + 0x80, 0, TSS_BYTES);
	uint64_t rsp0 = img->stack_top;
	memcpy((char *)gdt + 0x80 + 4, &rsp0, 8);
	uint16_t iopb = TSS_BYTES; /* no I/O bitmap: the payload uses no ports */
	memcpy((char *)gdt + 0x80 + 102, &iopb, 2);

	memcpy(code, guest_payload_start, code_len);
	memcpy(scr, script, script_len);
	/*
	 * Read-only on the host from now on. KVM maps a guest page writable on a read fault if the host page
	 * is writable, and then logs it as dirty; these pages were written by us, so the payload's first
	 * reads of its code and script would look like guest writes. The guest never writes them.
	 * Only code and script: the page tables and GDT stay writable, because the CPU writes A/D and busy
	 * bits there, and AMD nested paging treats every guest page-table access as a write (with NPT a
	 * read-only page table makes KVM_RUN fail with EFAULT at the first walk; found in the nested lab).
	 */
	void *ro = vm_gpa_to_host(vm, img->code_gpa, b.next - img->code_gpa);
	if (mprotect(ro, b.next - img->code_gpa, PROT_READ) < 0)
		return hvt_err_set(err, -errno, "write-protecting the system area: %s", strerror(errno));
	return 0;
}

int guest_image_system_pages(const struct guest_image *img, struct system_pages *sys)
{
	memset(sys, 0, sizeof(*sys));
	if (script_add_range(&sys->all, img->system_first_gfn, img->system_npages, 1) ||
	    script_add_range(&sys->untouched, img->gdt_gpa / PAGE, 1, 1) ||
	    script_add_range(&sys->untouched, img->stack_top / PAGE - 1, 1, 1) ||
	    script_add_range(&sys->tables, img->pml4_gpa / PAGE, (img->tables_end_gpa - img->pml4_gpa) / PAGE,
			     1)) {
		system_pages_free(sys);
		return -ENOMEM;
	}
	return 0;
}

static struct kvm_segment user_segment(uint16_t sel, uint8_t type, int code)
{
	return (struct kvm_segment){
	    .base = 0,
	    .limit = 0xffffffff,
	    .selector = sel,
	    .type = type,
	    .present = 1,
	    .dpl = 3,
	    .db = code ? 0 : 1,
	    .s = 1,
	    .l = code ? 1 : 0,
	    .g = 1,
	};
}

int guest_image_load_cpu(struct vm *vm, const struct guest_image *img, bool interrupts, struct hvt_err *err)
{
	struct kvm_sregs s;
	struct kvm_regs r;

	if (ioctl(vm->vcpu_fd, KVM_GET_SREGS, &s) < 0)
		return hvt_err_set(err, -errno, "KVM_GET_SREGS: %s", strerror(errno));
	s.cs = user_segment(SEL_USER_CODE, 0xb, 1);
	s.ds = s.es = s.fs = s.gs = s.ss = user_segment(SEL_USER_DATA, 0x3, 0);
	s.tr = (struct kvm_segment){
	    .base = img->tss_gpa, .limit = TSS_BYTES - 1, .selector = SEL_TSS, .type = 0xb, .present = 1};
	s.ldt = (struct kvm_segment){.type = 0x2, .present = 1, .unusable = 1};
	s.gdt.base = img->gdt_gpa;
	s.gdt.limit = 7 * 8 - 1;
	s.idt.base = 0;
	s.idt.limit = 0; /* any exception escalates to a triple fault: KVM_EXIT_SHUTDOWN */
	s.cr0 = CR0_PE | CR0_MP | CR0_ET | CR0_NE | CR0_WP | CR0_PG;
	s.cr3 = img->pml4_gpa;
	s.cr4 = CR4_PAE;
	s.efer = EFER_LME | EFER_LMA;
	if (ioctl(vm->vcpu_fd, KVM_SET_SREGS, &s) < 0)
		return hvt_err_set(err, -errno, "KVM_SET_SREGS (64-bit, CPL3): %s", strerror(errno));

	memset(&r, 0, sizeof(r));
	r.rip = img->code_gpa;
	r.rdi = img->script_gpa;
	r.rsp = img->stack_top;
	r.rbp = GUEST_DOORBELL_GPA;
	/* IF=0 by default: no interrupt is ever delivered. IF=1 for the Intel lab, whose L0 (Bochs 2.7) was
	 * seen to give L1 no external-interrupt exits while L2 ran with IF=0 (docs/lab.md §6). */
	r.rflags = RFLAGS_RESERVED | (interrupts ? RFLAGS_IF : 0);
	if (ioctl(vm->vcpu_fd, KVM_SET_REGS, &r) < 0)
		return hvt_err_set(err, -errno, "KVM_SET_REGS: %s", strerror(errno));
	return 0;
}
