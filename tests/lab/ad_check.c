// SPDX-License-Identifier: MIT
/*
 * ad_check: runs inside the nested lab's L1 (Debian kernel + our KVM modules) and checks KVM_AD_HARVEST
 * against an L2 guest whose page accesses are known exactly.
 *
 * The L2 guest is 32-bit protected mode without paging, so it has no page-table pages and every access is
 * one of ours: a loop that writes (or reads) one dword in each of N consecutive pages, then exits with an
 * OUT. Its code page (gfn 1) is fetched on every run. A child process made by fork() (another mm) does
 * every harvest through the A/D fd, and checks that the VM fd refuses it (-EIO).
 *
 * Usage: ad_check [--prune] [--huge] [--devmem PHYS] [--dirty-log] [--gib] [--bench MIB]
 *   --prune       harvest with KVM_AD_HARVEST_PRUNE (the pruned walk; docs/kvm-ad.md) wherever the checks
 *                 allow, and check the pruning itself: which regions a walk skips, and that under accesses
 *                 concurrent with the harvest a pruned walk reports exactly what a full walk would
 *   --huge        back guest RAM with transparent huge pages (2 MiB SPTEs) and check that a touched huge
 *                 page reports all 512 of its 4 KiB pages
 *   --devmem PHYS back guest RAM with /dev/mem at PHYS (a memmap= reserved range of L1)
 *   --dirty-log   turn KVM's dirty logging on for the slot (with kvm_intel pml=1 KVM then clears D bits
 *                 itself: docs/kvm-ad.md) and check that KVM's dirty log and the harvest both hold
 *                 every written page, exactly, whichever reads first, over repeated intervals
 *   --gib         a 4 GiB slot, its first GiB 4 KiB pages (the first 32 MiB mapped), the rest 2 MiB
 *                 pages (hugetlbfs, 64 MiB of huge pages mapped again and again): exact sets over
 *                 intervals, and with --prune on the TDP MMU which 1 GiB and 2 MiB regions each walk skips
 *   --bench MIB   time harvests of an MIB-sized slot, 4 KiB and 2 MiB mappings, 1 % and 100 % of its pages
 *                 touched, pruned and full walk, next to the copy of the two bitmaps at L1's memcpy
 *                 bandwidth (figures, not checks: "LAB_AD ..." lines, bench/lab_harvest.sh); and a 16 GiB
 *                 slot of 2 MiB mappings, 1 % touched, where the pruned walk skips whole GiBs (the guest
 *                 reaches it with PAE paging; harvests with KVM_AD_HARVEST_SPARSE)
 * The plain scenario (no option) also reports, as EVIDENCE, what a harvest says of the page directory of a
 * second L2 that runs with paging on (run_page_table_evidence).
 * Output: "CHECK name PASS|FAIL detail" lines, "EVIDENCE" lines, "BENCH"/"LAB_AD" lines, and a final
 * "AD_CHECK PASS|FAIL".
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hvmtrace/kvm_ad.h"

#define PAGE       4096ull
#define CODE_GPA   0x1000ull
#define EXIT_PORT  0x10
#define HUGE       (2ull << 20)
#define FIRST_DATA 256 /* gfn of the first page the guest touches */
#define MAX_BITMAP (1u << 16)
#define MAX_PAGES  (1u << 22)    /* the largest slot: the GiB bench's 16 GiB */
#define GIB        (1ull << 18)  /* pages of 1 GiB, the pruned walk's upper granule */
#define GIB_SLOT   (4 * GIB)     /* --gib: 4 GiB, every 1 GiB region whole, what the 32-bit guest reaches */
#define BENCH_GIB  (16 * GIB)    /* the GiB bench: 16 GiB, reached through PAE paging (paged_touch) */
#define ALIAS      (64ull << 20) /* the huge pages behind them, mapped again and again */
#define NO_EXTRA   (~0ull)       /* check_set: no extra page */
#define REGION     512           /* pages of one 2 MiB region, the pruned walk's granule */

static int failures;
static uint32_t walk_flags; /* KVM_AD_HARVEST_PRUNE with --prune, added to every harvest that allows it */

static void check(bool ok, const char *name, const char *detail)
{
	printf("CHECK %s %s %s\n", name, ok ? "PASS" : "FAIL", detail);
	fflush(stdout);
	if (!ok)
		failures++;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * 32-bit guest code, entered with esi = first page address, ecx = page count, edx = 1 to write, 0 to read:
 *   0: test edx,edx; jz 8; mov [esi],eax; jmp 10; 8: mov eax,[esi]; 10: add esi,0x1000; dec ecx; jnz 0
 *  19: out 0x10,al; hlt
 */
static const uint8_t guest_code[] = {0x85, 0xd2, 0x74, 0x04, 0x89, 0x06, 0xeb, 0x02, 0x8b, 0x06,      0x81,
				     0xc6, 0x00, 0x10, 0x00, 0x00, 0x49, 0x75, 0xed, 0xe6, EXIT_PORT, 0xf4};

struct lab_vm {
	int kvm, vm, vcpu, ad;
	struct kvm_run *run;
	uint8_t *mem;
	uint64_t size;
};

static void die(const char *what)
{
	printf("CHECK setup FAIL %s: %s\nAD_CHECK FAIL\n", what, strerror(errno));
	exit(1);
}

static uint8_t *guest_memory(uint64_t size, bool huge, long devmem)
{
	uint8_t *p;

	if (devmem >= 0) {
		/* No O_SYNC: it would make guest RAM uncached (docs/hardware-notes.md §7.3).
		 */
		int fd = open("/dev/mem", O_RDWR);

		if (fd < 0)
			die("open /dev/mem");
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, devmem);
		close(fd);
		if (p == MAP_FAILED)
			die("mmap /dev/mem");
		memset(p, 0, size);
		return p;
	}
	/* Over-allocate so the slot can start on a 2 MiB boundary (THP needs aligned host memory). */
	p = mmap(NULL, size + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap guest memory");
	p = (uint8_t *)(((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
	/* DONTFORK: the harvester child must not share it, or the guest's first write would break
	 * copy-on-write and split the huge page. */
	if (madvise(p, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) || madvise(p, size, MADV_DONTFORK))
		die("madvise");
	memset(p, 0, size); /* populate now: huge pages where asked, and no faults during the phases */
	return p;
}

static void vm_setup_on(struct lab_vm *v, uint64_t size, uint8_t *mem);

static void vm_setup(struct lab_vm *v, uint64_t size, bool huge, long devmem)
{
	vm_setup_on(v, size, guest_memory(size, huge, devmem));
}

/*
 * Hugetlbfs memory for the GiB slots (THP would need the whole slot in L1's RAM): len bytes of huge pages
 * mapped at addr, again and again over span bytes. The guest's writes land on shared pages, which no
 * check reads: the harvest reports the slot's gfns, not the pages behind them.
 */
static void map_huge_alias(uint8_t *addr, uint64_t span, uint64_t len)
{
	int fd = memfd_create("ad_check", MFD_HUGETLB);

	if (fd < 0 || ftruncate(fd, (off_t)len))
		die("hugetlbfs memfd (/proc/sys/vm/nr_hugepages)");
	for (uint64_t off = 0; off < span; off += len) {
		uint64_t n = span - off < len ? span - off : len;

		if (mmap(addr + off, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd,
			 0) == MAP_FAILED)
			die("mmap hugetlbfs memfd");
	}
	close(fd);
}

/* Enough huge pages for map_huge_alias(): ALIAS and one more 2 MiB page, with room. */
static void reserve_huge_pages(void)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "r+");
	unsigned long have = 0, want = ALIAS / HUGE + 8;

	if (!f || fscanf(f, "%lu", &have) != 1)
		die("read /proc/sys/vm/nr_hugepages");
	if (have < want) {
		rewind(f);
		fprintf(f, "%lu\n", want);
	}
	fclose(f);
}

/*
 * A slot of size bytes. With small_bytes: its first small_bytes are 4 KiB pages, the rest of the first GiB
 * unmapped (the guest never goes there), and GiBs 1 to 3 huge pages. Without: 2 MiB mappings throughout,
 * the first 2 MiB (the code page) on their own huge page.
 */
static uint8_t *gib_memory(uint64_t size, uint64_t small_bytes)
{
	uint8_t *p = mmap(NULL, size + HUGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		die("mmap GiB slot");
	p = (uint8_t *)(((uintptr_t)p + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
	reserve_huge_pages();
	if (small_bytes) {
		if (mmap(p, small_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) == MAP_FAILED ||
		    madvise(p, small_bytes, MADV_NOHUGEPAGE) || madvise(p, small_bytes, MADV_DONTFORK))
			die("mmap 4 KiB part of the GiB slot");
		memset(p, 0, small_bytes);
		map_huge_alias(p + GIB * PAGE, size - GIB * PAGE, ALIAS);
	} else {
		map_huge_alias(p, HUGE, HUGE);
		map_huge_alias(p + HUGE, size - HUGE, ALIAS);
	}
	return p;
}

static void vm_setup_on(struct lab_vm *v, uint64_t size, uint8_t *mem)
{
	struct kvm_userspace_memory_region region = {0};
	struct kvm_sregs sregs;
	struct kvm_segment seg = {
	    .base = 0, .limit = 0xffffffff, .present = 1, .s = 1, .db = 1, .g = 1, .type = 3};
	long run_size;

	v->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (v->kvm < 0)
		die("open /dev/kvm");
	v->vm = ioctl(v->kvm, KVM_CREATE_VM, 0);
	if (v->vm < 0)
		die("KVM_CREATE_VM");
	v->size = size;
	v->mem = mem;
	memcpy(v->mem + CODE_GPA, guest_code, sizeof(guest_code));
	region.memory_size = size;
	region.userspace_addr = (uintptr_t)v->mem;
	if (ioctl(v->vm, KVM_SET_USER_MEMORY_REGION, &region))
		die("KVM_SET_USER_MEMORY_REGION");
	v->vcpu = ioctl(v->vm, KVM_CREATE_VCPU, 0);
	if (v->vcpu < 0)
		die("KVM_CREATE_VCPU");
	run_size = ioctl(v->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	v->run = mmap(NULL, (size_t)run_size, PROT_READ | PROT_WRITE, MAP_SHARED, v->vcpu, 0);
	if (v->run == MAP_FAILED)
		die("mmap kvm_run");
	if (ioctl(v->vcpu, KVM_GET_SREGS, &sregs))
		die("KVM_GET_SREGS");
	sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = seg;
	seg.type = 11; /* execute/read, accessed */
	seg.selector = 8;
	sregs.cs = seg;
	sregs.cr0 |= 1; /* protected mode, no paging: every guest access is a data page of ours */
	if (ioctl(v->vcpu, KVM_SET_SREGS, &sregs))
		die("KVM_SET_SREGS");
	v->ad = ioctl(v->vm, KVM_CREATE_AD_FD, 0);
	if (v->ad < 0)
		die("KVM_CREATE_AD_FD");
}

/* Runs the guest loop once over [first_gfn, first_gfn + npages). */
static uint64_t code_gpa = CODE_GPA; /* where guest_touch() enters: the paged VM's code is elsewhere */

static void guest_touch(struct lab_vm *v, uint64_t first_gfn, uint64_t npages, bool write)
{
	/* IF=1 though nothing is ever injected (no interrupt controller): Bochs 2.7, the Intel lab's L0, was
	 * seen to give L1 no external-interrupt exits while L2 ran with IF=0 (docs/lab.md §6). */
	struct kvm_regs regs = {.rip = code_gpa, .rflags = 0x202};

	regs.rsi = first_gfn * PAGE;
	regs.rcx = npages;
	regs.rdx = write;
	if (ioctl(v->vcpu, KVM_SET_REGS, &regs))
		die("KVM_SET_REGS");
	if (ioctl(v->vcpu, KVM_RUN, 0))
		die("KVM_RUN");
	if (v->run->exit_reason != KVM_EXIT_IO || v->run->io.port != EXIT_PORT) {
		printf("CHECK guest FAIL unexpected exit %u\nAD_CHECK FAIL\n", v->run->exit_reason);
		exit(1);
	}
}

/* What the harvester child sends back: the ioctl result and both bitmaps. */
struct harvest_reply {
	int rc, vm_fd_errno;
	uint32_t flags; /* as the kernel left them: PRUNE cleared after a full walk */
	uint64_t nr_accessed, nr_dirty, nr_pruned, nr_pruned_1g, ns;
	uint64_t *accessed, *dirty; /* in shared_bitmaps, which the harvester fills */
};

/* The two bitmaps of the last harvest, shared with the harvester child (up to 16 GiB of slot: 512 KiB each).
 */
static uint64_t *shared_bitmaps;

struct harvest_request {
	uint32_t flags;
	uint64_t num_pages;
};

/* The tracer side, in its own process: harvests on request through the A/D fd only. */
static void harvester(int sock, int ad_fd, int vm_fd)
{
	static struct harvest_reply r;
	struct harvest_request q;

	while (read(sock, &q, sizeof(q)) == sizeof(q)) {
		struct kvm_ad_harvest h = {.slot = 0, .flags = q.flags, .num_pages = q.num_pages};
		uint64_t t0;

		memset(&r, 0, sizeof(r));
		/* The kernel must write every word, or with SPARSE every word it found a bit in. */
		memset(shared_bitmaps, q.flags & KVM_AD_HARVEST_SPARSE ? 0 : 0x5a,
		       (q.num_pages + 63) / 64 * 8);
		memset(shared_bitmaps + MAX_PAGES / 64, q.flags & KVM_AD_HARVEST_SPARSE ? 0 : 0x5a,
		       (q.num_pages + 63) / 64 * 8);
		h.accessed_bitmap = (uintptr_t)shared_bitmaps;
		h.dirty_bitmap = (uintptr_t)(shared_bitmaps + MAX_PAGES / 64);
		r.vm_fd_errno = ioctl(vm_fd, KVM_AD_HARVEST, &h) < 0 ? errno : 0;
		t0 = now_ns();
		r.rc = ioctl(ad_fd, KVM_AD_HARVEST, &h) < 0 ? -errno : 0;
		r.ns = now_ns() - t0;
		r.flags = h.flags;
		r.nr_accessed = h.nr_accessed;
		r.nr_dirty = h.nr_dirty;
		r.nr_pruned = h.nr_pruned;
		r.nr_pruned_1g = h.nr_pruned_1g;
		if (write(sock, &r, sizeof(r)) != sizeof(r))
			break;
	}
	_exit(0);
}

struct harvest_client {
	int sock;
	pid_t pid;
	struct harvest_reply r;
};

static void harvester_start(struct harvest_client *c, struct lab_vm *v)
{
	int sv[2];

	if (!shared_bitmaps) {
		shared_bitmaps =
		    mmap(NULL, 2 * MAX_PAGES / 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (shared_bitmaps == MAP_FAILED)
			die("mmap shared bitmaps");
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		die("socketpair");
	c->pid = fork();
	if (c->pid < 0)
		die("fork");
	if (c->pid == 0) {
		close(sv[0]);
		harvester(sv[1], v->ad, v->vm);
	}
	close(sv[1]);
	c->sock = sv[0];
}

/* Ends the harvester and waits for it, so its A/D fd no longer pins the VM (and kvm-amd) when we exit. */
static void harvester_stop(struct harvest_client *c)
{
	close(c->sock);
	waitpid(c->pid, NULL, 0);
}

/* Asks for one harvest with exactly these flags; harvest_wait() collects it. */
static void harvest_send(struct harvest_client *c, uint64_t num_pages, uint32_t flags)
{
	struct harvest_request q = {.flags = flags, .num_pages = num_pages};

	if (write(c->sock, &q, sizeof(q)) != sizeof(q))
		die("harvester child");
}

static const struct harvest_reply *harvest_wait(struct harvest_client *c)
{
	if (read(c->sock, &c->r, sizeof(c->r)) != sizeof(c->r))
		die("harvester child");
	c->r.accessed = shared_bitmaps;
	c->r.dirty = shared_bitmaps + MAX_PAGES / 64;
	if (c->r.rc)
		printf("harvest: %s\n", strerror(-c->r.rc));
	return &c->r;
}

/* One harvest, pruned with --prune unless the flags ask for no flush (PRUNE needs it) or only report. */
static const struct harvest_reply *harvest(struct harvest_client *c, uint64_t num_pages, uint32_t flags)
{
	if (!(flags & KVM_AD_HARVEST_NOFLUSH))
		flags |= walk_flags;
	harvest_send(c, num_pages, flags);
	return harvest_wait(c);
}

static bool bit(const uint64_t *bm, uint64_t gfn)
{
	return bm[gfn / 64] >> (gfn % 64) & 1;
}

/* A bitmap equal to the union of ranges [lo, hi) of gfns; names the first mismatch. */
struct gfn_range {
	uint64_t lo, hi;
};

static void check_ranges(const char *name, const uint64_t *bm, uint64_t npages, const struct gfn_range *want,
			 int n)
{
	char detail[160];
	uint64_t count = 0, expected = 0;
	long first_bad = -1;

	for (uint64_t gfn = 0; gfn < npages; gfn++) {
		bool w = false, got = bit(bm, gfn);

		for (int i = 0; i < n; i++)
			w |= gfn >= want[i].lo && gfn < want[i].hi;
		count += got;
		expected += w;
		if (w != got && first_bad < 0)
			first_bad = (long)gfn;
	}
	snprintf(detail, sizeof(detail), "pages=%llu expected=%llu first_mismatch=%ld",
		 (unsigned long long)count, (unsigned long long)expected, first_bad);
	check(first_bad < 0, name, detail);
}

/* Compares a bitmap with the expected set [lo, hi) plus the extra gfn (if not ~0); names the first miss. */
static void check_set(const char *name, const uint64_t *bm, uint64_t npages, uint64_t lo, uint64_t hi,
		      uint64_t extra)
{
	const struct gfn_range want[2] = {{lo, hi}, {extra, extra + 1}};

	check_ranges(name, bm, npages, want, extra == NO_EXTRA ? 1 : 2);
}

static void run_exactness(struct lab_vm *v, struct harvest_client *c, uint64_t npages)
{
	const struct harvest_reply *r;
	char detail[96];

	/* Interval 0: first touch faults every page in; KVM pre-sets A and D (documented), so only clear. */
	guest_touch(v, FIRST_DATA, 512, true);
	r = harvest(c, npages, 0);
	check(r->rc == 0, "ad_fd_harvest_from_other_process", r->rc ? strerror(-r->rc) : "ok");
	snprintf(detail, sizeof(detail), "errno=%d (%s)", r->vm_fd_errno, strerror(r->vm_fd_errno));
	check(r->vm_fd_errno == EIO, "vm_fd_refused_in_other_process", detail);

	/* Interval 1: reads only. */
	guest_touch(v, FIRST_DATA, 128, false);
	r = harvest(c, npages, 0);
	check_set("read_phase_accessed", r->accessed, npages, FIRST_DATA, FIRST_DATA + 128, CODE_GPA / PAGE);
	check_set("read_phase_written", r->dirty, npages, 0, 0, NO_EXTRA);

	/* Interval 2: writes to one range. */
	guest_touch(v, FIRST_DATA + 64, 32, true);
	r = harvest(c, npages, 0);
	check_set("write_phase_accessed", r->accessed, npages, FIRST_DATA + 64, FIRST_DATA + 96,
		  CODE_GPA / PAGE);
	check_set("write_phase_written", r->dirty, npages, FIRST_DATA + 64, FIRST_DATA + 96, NO_EXTRA);

	/* Interval 3: the guest does not run: nothing. */
	r = harvest(c, npages, 0);
	check_set("idle_accessed", r->accessed, npages, 0, 0, NO_EXTRA);
	check_set("idle_written", r->dirty, npages, 0, 0, NO_EXTRA);

	/* NOCLEAR reports without clearing: twice the same answer. */
	guest_touch(v, FIRST_DATA + 200, 8, true);
	r = harvest(c, npages, KVM_AD_HARVEST_NOCLEAR);
	check_set("noclear_first", r->dirty, npages, FIRST_DATA + 200, FIRST_DATA + 208, NO_EXTRA);
	r = harvest(c, npages, 0);
	check_set("noclear_kept", r->dirty, npages, FIRST_DATA + 200, FIRST_DATA + 208, NO_EXTRA);

	/* A hot page, touched in every interval, is reported in every interval. */
	for (int i = 0; i < 3; i++) {
		char name[32];

		guest_touch(v, FIRST_DATA + 300, 4, true);
		r = harvest(c, npages, 0);
		snprintf(name, sizeof(name), "hot_page_interval_%d", i);
		check_set(name, r->dirty, npages, FIRST_DATA + 300, FIRST_DATA + 304, NO_EXTRA);
	}
	/* Without the flush: report what this lab's emulated TLB does (evidence, not a check). */
	guest_touch(v, FIRST_DATA + 300, 4, true);
	harvest(c, npages, KVM_AD_HARVEST_NOFLUSH);
	guest_touch(v, FIRST_DATA + 300, 4, true);
	r = harvest(c, npages, 0);
	printf(
	    "EVIDENCE noflush_hot_pages_reported=%llu of 4 (4 = the lab's emulated TLB kept no stale translation across the harvest: each interval here starts with a new VM entry, and the emulator's nested paging (TCG's, Bochs's) does not keep guest translations across it, so a missing flush cannot show)\n",
	    (unsigned long long)__builtin_popcountll(r->dirty[(FIRST_DATA + 300) / 64]));
}

/*
 * What a harvest reports for the guest's own page-table page (evidence, not a check: it differs by MMU and
 * vendor, docs/kvm-ad.md "Pages without a guest access"). A second VM whose L2 runs with paging on: one page
 * directory at PD_GFN with a single 4 MiB identity mapping, its A and D already set, so that the guest's
 * CPU only reads it. After a clearing harvest the guest reads 16 pages again; the harvest's TLB flush makes
 * its CPU walk the page directory again. EPT with A/D (EPTP bit 6) and NPT treat that walk as a write; the
 * shadow MMU's hardware walks KVM's tables, not the guest's; EPT without A/D sees a read.
 */
#define PD_GFN 2
static void run_page_table_evidence(void)
{
	struct lab_vm v;
	struct harvest_client c;
	const struct harvest_reply *r;
	struct kvm_sregs sregs;
	uint64_t npages = 1024, code = CODE_GPA / PAGE; /* the 4 MiB the one PDE maps */
	uint32_t pde = 0xe3;                            /* base 0; P, RW, A, D, PS */

	vm_setup(&v, npages * PAGE, false, -1);
	memcpy(v.mem + PD_GFN * PAGE, &pde, sizeof(pde));
	if (ioctl(v.vcpu, KVM_GET_SREGS, &sregs))
		die("KVM_GET_SREGS");
	sregs.cr3 = PD_GFN * PAGE;
	sregs.cr4 |= 1u << 4;  /* PSE: 4 MiB pages */
	sregs.cr0 |= 1u << 31; /* PG */
	if (ioctl(v.vcpu, KVM_SET_SREGS, &sregs))
		die("KVM_SET_SREGS paging");
	harvester_start(&c, &v);
	guest_touch(&v, FIRST_DATA, 16, false); /* maps the pages: KVM pre-sets A/D, so clear first */
	harvest(&c, npages, 0);
	guest_touch(&v, FIRST_DATA, 16, false);
	r = harvest(&c, npages, 0);
	uint64_t reads_a = 0, reads_d = 0;

	for (uint64_t g = FIRST_DATA; g < FIRST_DATA + 16; g++) {
		reads_a += bit(r->accessed, g);
		reads_d += bit(r->dirty, g);
	}
	printf("EVIDENCE page_table_page accessed=%d written=%d code_page accessed=%d written=%d read_pages "
	       "accessed=%llu written=%llu of 16 (the guest only read; its page directory's A and D were set "
	       "beforehand, so its CPU wrote nothing there)\n",
	       bit(r->accessed, PD_GFN), bit(r->dirty, PD_GFN), bit(r->accessed, code), bit(r->dirty, code),
	       (unsigned long long)reads_a, (unsigned long long)reads_d);
	harvester_stop(&c);
}

static void run_huge(struct lab_vm *v, struct harvest_client *c, uint64_t npages)
{
	const struct harvest_reply *r;
	uint64_t huge_first = HUGE / PAGE; /* gfn 512: the second 2 MiB page */

	guest_touch(v, huge_first + 7, 1, true);
	harvest(c, npages, 0);
	guest_touch(v, huge_first + 7, 1, true); /* one 4 KiB page of the huge page */
	r = harvest(c, npages, 0);
	check_set("huge_page_written_all_512", r->dirty, npages, huge_first, huge_first + 512, NO_EXTRA);
	/* The code page's huge page (gfns 0-511) is accessed too: all of it is reported. */
	check_set("huge_page_accessed_all_512", r->accessed, npages, 0, huge_first + 512, NO_EXTRA);
}

/* Sets of two replies equal, bitmap by bitmap; names the first differing page. */
static void check_same(const char *name, const struct harvest_reply *a, const struct harvest_reply *b,
		       uint64_t npages)
{
	char detail[160];
	long first_bad = -1;
	uint64_t na = 0, nb = 0;

	for (uint64_t gfn = 0; gfn < npages; gfn++) {
		bool aa = a->accessed[gfn / 64] >> (gfn % 64) & 1, ad = a->dirty[gfn / 64] >> (gfn % 64) & 1;
		bool ba = b->accessed[gfn / 64] >> (gfn % 64) & 1, bd = b->dirty[gfn / 64] >> (gfn % 64) & 1;

		na += aa;
		nb += ba;
		if ((aa != ba || ad != bd) && first_bad < 0)
			first_bad = (long)gfn;
	}
	snprintf(detail, sizeof(detail), "accessed=%llu vs %llu first_mismatch=%ld", (unsigned long long)na,
		 (unsigned long long)nb, first_bad);
	check(first_bad < 0, name, detail);
}

/* One pruned harvest: its sets exact, and how many regions it skipped. */
static void prune_step(struct harvest_client *c, uint64_t npages, const char *name, uint64_t lo, uint64_t hi,
		       bool ran, uint64_t want_pruned)
{
	const struct harvest_reply *r = harvest(c, npages, KVM_AD_HARVEST_PRUNE);
	char n[64], detail[96];

	snprintf(n, sizeof(n), "%s_accessed", name);
	check_set(n, r->accessed, npages, lo, hi, ran ? CODE_GPA / PAGE : NO_EXTRA);
	snprintf(n, sizeof(n), "%s_written", name);
	check_set(n, r->dirty, npages, lo, hi, NO_EXTRA);
	snprintf(n, sizeof(n), "%s_regions_pruned", name);
	snprintf(detail, sizeof(detail), "nr_pruned=%llu expected=%llu", (unsigned long long)r->nr_pruned,
		 (unsigned long long)want_pruned);
	check(r->nr_pruned == want_pruned, n, detail);
}

/*
 * The pruned walk on the TDP MMU (npt=1), on a slot of 8 regions, every page mapped: a region is skipped
 * only when its 2 MiB entry's Accessed bit is clear and the previous pruned walk did not clear it. Region
 * 0 holds the guest's code page, fetched at every run.
 */
static void run_prune_regions(struct lab_vm *v, struct harvest_client *c, uint64_t npages)
{
	uint64_t regions = npages / REGION, r3 = 3 * REGION, r5 = 5 * REGION;

	guest_touch(v, FIRST_DATA, npages - FIRST_DATA, true);
	/* Every region used: every region is walked, and every 2 MiB entry's Accessed bit cleared. */
	prune_step(c, npages, "prune_all_used_all_walked", FIRST_DATA, npages, true, 0);
	/* Each region cleared last time is revisited once more, although only regions 0 and 3 were used. */
	guest_touch(v, r3 + 10, 20, true);
	prune_step(c, npages, "prune_revisits_last_cleared", r3 + 10, r3 + 30, true, 0);
	/* Now only the regions used (0, 5) and the ones cleared last time (0, 3) are walked. */
	guest_touch(v, r5 + 100, 7, true);
	prune_step(c, npages, "prune_skips_unused", r5 + 100, r5 + 107, true, regions - 3);
	/* An idle interval walks only the regions cleared last time (0, 5), and finds nothing. */
	prune_step(c, npages, "prune_idle", 0, 0, false, regions - 2);
	/* A region skipped for two intervals is found again through its entry's Accessed bit. */
	guest_touch(v, r3 + 500, 12, false);
	{
		const struct harvest_reply *r = harvest(c, npages, KVM_AD_HARVEST_PRUNE);

		check_set("prune_found_again_accessed", r->accessed, npages, r3 + 500, r3 + 512,
			  CODE_GPA / PAGE);
		check_set("prune_found_again_written", r->dirty, npages, 0, 0, NO_EXTRA);
	}
}

/*
 * Accesses concurrent with pruned harvests, so that some land in a region right after the walk passed it,
 * before and after its flush: the vCPU keeps touching pages of regions 2 and 6 while the harvester walks.
 * After the vCPU stops, a full walk that only reports (NOCLEAR) and the pruned harvest that follows must
 * find the same pages: a pruned walk that skipped a leaf with a bit set would miss it. On hardware such a
 * leaf comes from a paging-structure cache entry made before the flush (docs/kvm-ad.md); TCG's nested
 * paging caches no paging-structure entry, so here the check holds the walk to the full walk's result
 * under every interleaving the lab produces, over many rounds.
 */
static void run_prune_concurrent(struct lab_vm *v, struct harvest_client *c, uint64_t npages, int rounds,
				 uint64_t base_even, uint64_t base_odd)
{
	uint64_t runs = 0, late = 0;
	int bad = 0;

	for (int round = 0; round < rounds; round++) {
		uint64_t base = (round % 2 ? base_odd : base_even) + (uint64_t)(round * 37 % 400);
		const struct harvest_reply *r;
		static struct harvest_reply full;
		static uint64_t full_bitmaps[2][MAX_PAGES / 64];
		struct pollfd pfd = {.fd = c->sock, .events = POLLIN};
		char name[48];

		harvest_send(c, npages, KVM_AD_HARVEST_PRUNE);
		do {
			guest_touch(v, base + runs % 64, 48, runs % 3 != 0);
			runs++;
		} while (poll(&pfd, 1, 0) == 0);
		harvest_wait(c);
		/* Right after the harvest's flush: these must be in the next harvest. */
		guest_touch(v, base + 64, 8, true);
		late += 8;
		harvest_send(c, npages, KVM_AD_HARVEST_NOCLEAR); /* the full walk, reporting only */
		full = *harvest_wait(c);
		memcpy(full_bitmaps[0], full.accessed, npages / 8);
		memcpy(full_bitmaps[1], full.dirty, npages / 8);
		full.accessed = full_bitmaps[0];
		full.dirty = full_bitmaps[1];
		harvest_send(c, npages, KVM_AD_HARVEST_PRUNE);
		r = harvest_wait(c);
		snprintf(name, sizeof(name), "prune_concurrent_round_%d", round);
		if (memcmp(r->accessed, full.accessed, npages / 8) ||
		    memcmp(r->dirty, full.dirty, npages / 8) ||
		    !(r->dirty[(base + 64) / 64] >> ((base + 64) % 64) & 1)) {
			check_same(name, r, &full, npages);
			bad++;
		}
	}
	char detail[128];

	snprintf(detail, sizeof(detail),
		 "rounds=%d guest_runs_during_harvests=%llu late_pages=%llu rounds_bad=%d", rounds,
		 (unsigned long long)runs, (unsigned long long)late, bad);
	check(bad == 0, "prune_concurrent_equals_full_walk", detail);
}

/*
 * One interval of the GiB scenario: the harvest's sets are exactly want_a and want_d; when the walk prunes,
 * it skipped exactly pruned_2m 2 MiB regions and pruned_1g 1 GiB regions, and otherwise skipped none and
 * cleared the flag. want_a NULL: the sets are not checked.
 */
static void gib_step(struct harvest_client *c, const char *name, bool prunes, const struct gfn_range *want_a,
		     int na, const struct gfn_range *want_d, int nd, uint64_t pruned_2m, uint64_t pruned_1g)
{
	/* Every other step with SPARSE: bitmaps zero on entry, only the chunks with a bit written. */
	static int step;
	const struct harvest_reply *r = harvest(c, GIB_SLOT, step++ % 2 ? KVM_AD_HARVEST_SPARSE : 0);
	char n[64], detail[128];

	if (want_a) { /* not after the first touch, whose faults pre-set A and D (run_exactness) */
		snprintf(n, sizeof(n), "gib_%s_accessed", name);
		check_ranges(n, r->accessed, GIB_SLOT, want_a, na);
		snprintf(n, sizeof(n), "gib_%s_written", name);
		check_ranges(n, r->dirty, GIB_SLOT, want_d, nd);
	}
	if (!prunes || !walk_flags)
		pruned_2m = pruned_1g = 0;
	snprintf(n, sizeof(n), "gib_%s_regions_pruned", name);
	snprintf(detail, sizeof(detail), "2m=%llu 1g=%llu expected 2m=%llu 1g=%llu flags_out=%#x",
		 (unsigned long long)r->nr_pruned, (unsigned long long)r->nr_pruned_1g,
		 (unsigned long long)pruned_2m, (unsigned long long)pruned_1g, r->flags);
	check(r->rc == 0 && r->nr_pruned == pruned_2m && r->nr_pruned_1g == pruned_1g &&
		  !(r->flags & KVM_AD_HARVEST_PRUNE) == !(walk_flags && prunes),
	      n, detail);
}

/*
 * The pruned walk one level up (--gib): a 4 GiB slot, GiB 0 mapped by 4 KiB pages in its first 16 2 MiB
 * regions (the code page in region 0), GiBs 1-3 by 2 MiB pages. A 1 GiB region is skipped when its
 * entry's Accessed bit is clear, the previous pruned walk did not clear it, and no 2 MiB region inside it
 * is marked; inside GiB 0 the 2 MiB regions are pruned as before. On the shadow MMU (or without --prune)
 * the same sets, from a full walk that skips nothing.
 */
static void run_gib(bool prunes)
{
	struct lab_vm v;
	struct harvest_client c;
	const uint64_t code = CODE_GPA / PAGE, g1 = GIB, g2 = 2 * GIB, g3 = 3 * GIB, small = 16 * REGION;
	const uint64_t hot = g1 + 1000, hot_end = hot + 2600; /* 2 MiB regions 1-7 of GiB 1 */
	const struct gfn_range hot_a[] = {{code, code + 1}, {g1 + REGION, g1 + 8 * REGION}};
	const struct gfn_range none[] = {{0, 0}};
	const uint64_t r5 = 5 * REGION + 3, far = g2 + 100000 / REGION * REGION;

	vm_setup_on(&v, GIB_SLOT * PAGE, gib_memory(GIB_SLOT * PAGE, small * PAGE));
	harvester_start(&c, &v);
	guest_touch(&v, FIRST_DATA, small - FIRST_DATA, true);
	guest_touch(&v, g1, GIB_SLOT - g1, true);
	/* The first walk of the slot is whole (and clears what the first touch set). */
	gib_step(&c, "first_walk_whole", prunes, NULL, 0, NULL, 0, 0, 0);
	/* Every region was cleared, so every region is walked again. */
	guest_touch(&v, hot, hot_end - hot, true);
	gib_step(&c, "all_revisited", prunes, hot_a, 2, hot_a + 1, 1, 0, 0);
	/* GiBs 2 and 3 unused for two walks: skipped whole; in GiB 0 regions 1-15. */
	guest_touch(&v, hot, hot_end - hot, true);
	gib_step(&c, "unused_gib_skipped", prunes, hot_a, 2, hot_a + 1, 1, 15, 2);
	/* Idle: GiB 0, its region 0 and GiB 1 revisited for their marks, the rest skipped. */
	gib_step(&c, "idle", prunes, none, 0, none, 0, 15, 2);
	/* A read in GiB 3 (a 2 MiB page: all 512 reported) and a write in GiB 0's region 5. */
	guest_touch(&v, g3 + 5, 1, false);
	guest_touch(&v, r5, 1, true);
	gib_step(&c, "found_again", prunes,
		 (const struct gfn_range[]){{code, code + 1}, {r5, r5 + 1}, {g3, g3 + REGION}}, 3,
		 (const struct gfn_range[]){{r5, r5 + 1}}, 1, 14, 2);
	/* Idle: GiB 3 and GiB 0's regions 0 and 5 revisited, GiBs 1 and 2 skipped. */
	gib_step(&c, "idle_after", prunes, none, 0, none, 0, 14, 2);
	/* A write in GiB 2, untouched for five walks, found through its 1 GiB entry. */
	guest_touch(&v, far + 9, 1, true);
	gib_step(&c, "gib_found_by_entry", prunes,
		 (const struct gfn_range[]){{code, code + 1}, {far, far + REGION}}, 2,
		 (const struct gfn_range[]){{far, far + REGION}}, 1, 15, 2);
	/* Accesses during the pruned harvests, in a 4 KiB region of GiB 0 and in GiB 2: the full walk's sets.
	 */
	if (walk_flags)
		run_prune_concurrent(&v, &c, GIB_SLOT, 20, 2 * REGION, far);
	harvester_stop(&c);
}

/* KVM's dirty log of slot 0 (KVM_GET_DIRTY_LOG, which also re-arms logging of the pages it reports). */
static void get_dirty_log(struct lab_vm *v, uint64_t *bm)
{
	struct kvm_dirty_log log = {.slot = 0, .dirty_bitmap = bm};

	memset(bm, 0, MAX_BITMAP / 8);
	if (ioctl(v->vm, KVM_GET_DIRTY_LOG, &log))
		die("KVM_GET_DIRTY_LOG");
}

/* One interval under dirty logging: the guest writes [lo, hi), then KVM's log and a harvest are read, in
 * the order asked; both must hold exactly the written pages. */
static void dirty_log_interval(struct lab_vm *v, struct harvest_client *c, uint64_t npages, const char *name,
			       uint64_t lo, uint64_t hi, bool log_first)
{
	static uint64_t log_bm[MAX_BITMAP / 64];
	const struct harvest_reply *r;
	char n[64];

	guest_touch(v, lo, hi - lo, true);
	if (log_first)
		get_dirty_log(v, log_bm);
	r = harvest(c, npages, 0);
	if (!log_first)
		get_dirty_log(v, log_bm);
	snprintf(n, sizeof(n), "%s_dirty_log", name);
	check_set(n, log_bm, npages, lo, hi, NO_EXTRA);
	snprintf(n, sizeof(n), "%s_harvest_written", name);
	check_set(n, r->dirty, npages, lo, hi, NO_EXTRA);
	snprintf(n, sizeof(n), "%s_harvest_accessed", name);
	check_set(n, r->accessed, npages, lo, hi, CODE_GPA / PAGE);
}

/*
 * The harvest beside KVM's own dirty logging. With kvm_intel pml=1 KVM clears the D bits of the slot when
 * logging is turned on and of the pages it reports whenever the log is fetched, and relies on the CPU
 * logging each page whose D bit it sets again; the harvest clears D too. Neither may make the other miss a
 * page: the pages whose D bit KVM cleared before a harvest read it are kept for the next harvest (patch 6 of
 * the KVM series), and a page the harvest cleared is logged by the CPU at its next write. Without PML (AMD,
 * pml=0, ept=0) KVM write-protects instead and leaves D alone. The guest writes at offset 0 of each page:
 * Bochs's PML logs the written address, and KVM warns for any not page-aligned (docs/lab.md, §6).
 */
static void run_dirty_log(struct lab_vm *v, struct harvest_client *c, uint64_t npages)
{
	struct kvm_userspace_memory_region region = {
	    .slot = 0, .memory_size = v->size, .userspace_addr = (uintptr_t)v->mem};
	static uint64_t log_bm[MAX_BITMAP / 64];
	const struct harvest_reply *r;

	guest_touch(v, FIRST_DATA, 512, true); /* fault every page in (KVM pre-sets A and D) */
	harvest(c, npages, 0);
	/* Pages written before logging starts: turning it on clears their D bits (PML). */
	guest_touch(v, FIRST_DATA + 400, 16, true);
	region.flags = KVM_MEM_LOG_DIRTY_PAGES;
	if (ioctl(v->vm, KVM_SET_USER_MEMORY_REGION, &region))
		die("KVM_SET_USER_MEMORY_REGION (dirty logging on)");
	get_dirty_log(v, log_bm);
	check_set("dirty_log_on_log_empty", log_bm, npages, 0, 0, NO_EXTRA);
	r = harvest(c, npages, 0);
	check_set("dirty_log_on_harvest_written", r->dirty, npages, FIRST_DATA + 400, FIRST_DATA + 416,
		  NO_EXTRA);
	/* (a) KVM's log first, then the harvest; (b) the harvest first, then the log. */
	dirty_log_interval(v, c, npages, "log_then_harvest", FIRST_DATA + 64, FIRST_DATA + 96, true);
	dirty_log_interval(v, c, npages, "harvest_then_log", FIRST_DATA + 128, FIRST_DATA + 144, false);
	/* (c) Repeated intervals, the order alternating, each set overlapping the last one: a page whose D
	 * bit the other reader cleared in the previous interval must be seen again by both. */
	for (int i = 0; i < 6; i++) {
		char name[32];
		uint64_t lo = FIRST_DATA + 64 + 12 * (uint64_t)i;

		snprintf(name, sizeof(name), "interval_%d", i);
		dirty_log_interval(v, c, npages, name, lo, lo + 24, i % 2 == 0);
	}
	/* An idle interval: nothing in either. */
	get_dirty_log(v, log_bm);
	r = harvest(c, npages, 0);
	check_set("idle_dirty_log", log_bm, npages, 0, 0, NO_EXTRA);
	check_set("idle_harvest_written", r->dirty, npages, 0, 0, NO_EXTRA);
	region.flags = 0;
	if (ioctl(v->vm, KVM_SET_USER_MEMORY_REGION, &region))
		die("KVM_SET_USER_MEMORY_REGION (dirty logging off)");
	/* Logging off: the harvest alone, as before. */
	guest_touch(v, FIRST_DATA + 200, 8, true);
	r = harvest(c, npages, 0);
	check_set("dirty_log_off_harvest_written", r->dirty, npages, FIRST_DATA + 200, FIRST_DATA + 208,
		  NO_EXTRA);
}

/* The flag's contract: kept after a pruned walk (TDP MMU with A/D bits), cleared after a full one; refused
 * where unsound. */
static void run_prune_contract(struct lab_vm *v, struct harvest_client *c, uint64_t npages, bool prunes)
{
	const struct harvest_reply *r;
	struct kvm_ad_harvest q = {.slot = 0, .flags = KVM_AD_HARVEST_PRUNE, .num_pages = npages};
	char detail[96];

	r = harvest(c, npages, KVM_AD_HARVEST_PRUNE);
	snprintf(detail, sizeof(detail), "rc=%d flags_out=%#x (%s)", r->rc, r->flags,
		 prunes ? "TDP MMU" : "shadow MMU or no A/D bits: a full walk");
	check(r->rc == 0 && !(r->flags & KVM_AD_HARVEST_PRUNE) == !prunes, "prune_flag_says_walk", detail);
	harvest_send(c, npages, 0); /* not harvest(): it would add PRUNE */
	r = harvest_wait(c);
	check(r->rc == 0 && r->nr_pruned == 0 && !(r->flags & KVM_AD_HARVEST_PRUNE),
	      "full_walk_prunes_nothing", "no PRUNE flag");
	check(ioctl(v->vm, KVM_AD_HARVEST, &q) < 0 && errno == EINVAL, "prune_refused_on_vm_fd",
	      "the VM fd keeps no revisit state");
	q.flags = KVM_AD_HARVEST_PRUNE | KVM_AD_HARVEST_NOFLUSH;
	check(ioctl(v->ad, KVM_AD_HARVEST, &q) < 0 && errno == EINVAL, "prune_refused_without_flush",
	      "EINVAL");
}

/* L1's memcpy bandwidth in bytes/s, over buffers of the slot's size. */
static double copy_bandwidth(uint64_t bytes)
{
	uint8_t *a = malloc(bytes), *b = malloc(bytes);
	uint64_t t0, ns;

	if (!a || !b)
		die("malloc");
	memset(a, 1, bytes);
	memset(b, 2, bytes);
	t0 = now_ns();
	memcpy(b, a, bytes);
	__asm__ volatile("" : : "r"(b) : "memory"); /* keep the copy: b is not read afterwards */
	ns = now_ns() - t0;
	free(a);
	free(b);
	return (double)bytes / ((double)ns / 1e9);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Steady state of a working set: each interval the guest touches the same pages (the first `touched` % of
 * the slot after the code region, contiguous) and the harvester harvests; the median harvest time of the
 * measured intervals, after warm-up intervals that settle what a pruned walk revisits.
 */
static void run_bench(bool huge, uint64_t mib, double bw)
{
	static const int touched_pct[] = {1, 100};
	struct lab_vm v;
	struct harvest_client bc;
	uint64_t npages = mib << 8;
	enum { WARM = 3, REPS = 5 };

	if (npages > MAX_BITMAP)
		npages = MAX_BITMAP;
	vm_setup(&v, npages * PAGE, huge, -1);
	harvester_start(&bc, &v);
	guest_touch(&v, FIRST_DATA, npages - FIRST_DATA, true); /* map every page */
	/* The limit: the two bitmaps the harvest hands back, copied at L1's bandwidth. */
	uint64_t copy_ns = (uint64_t)(2.0 * (double)(npages / 8) / bw * 1e9);

	for (unsigned t = 0; t < sizeof(touched_pct) / sizeof(touched_pct[0]); t++) {
		uint64_t n = touched_pct[t] == 100 ? npages - FIRST_DATA : npages * touched_pct[t] / 100;

		for (int pruned = 1; pruned >= 0; pruned--) {
			uint32_t flags = pruned ? KVM_AD_HARVEST_PRUNE : 0;
			uint64_t ns[REPS], nr_pruned = 0, flags_out = flags;

			for (int i = 0; i < WARM + REPS; i++) {
				const struct harvest_reply *r;

				guest_touch(&v, FIRST_DATA, n, true);
				r = harvest(&bc, npages, flags);
				if (r->rc) {
					printf("BENCH FAIL harvest: %s\n", strerror(-r->rc));
					return;
				}
				if (i >= WARM) {
					ns[i - WARM] = r->ns;
					nr_pruned = r->nr_pruned;
					flags_out = r->flags;
				}
			}
			qsort(ns, REPS, sizeof(ns[0]), cmp_u64);
			/* A kernel that could not prune (shadow MMU) says so by clearing the flag: a full
			 * walk. */
			printf(
			    "LAB_AD mapping=%s touched=%d walk=%s harvest_ns=%llu copy_ns=%llu pages=%llu\n",
			    huge ? "2m" : "4k", touched_pct[t],
			    (flags_out & KVM_AD_HARVEST_PRUNE) ? "pruned" : "full",
			    (unsigned long long)ns[REPS / 2], (unsigned long long)copy_ns,
			    (unsigned long long)npages);
			printf(
			    "BENCH mappings=%s touched_pct=%d walk=%s harvest_ms=%.3f bitmap_copy_ms=%.4f "
			    "ratio_to_copy=%.0f regions_pruned=%llu (lab is emulated: compare ratios, not times)\n",
			    huge ? "2M" : "4K", touched_pct[t], pruned ? "pruned" : "full",
			    ns[REPS / 2] / 1e6, copy_ns / 1e6, (double)ns[REPS / 2] / (double)copy_ns,
			    (unsigned long long)nr_pruned);
		}
	}
	harvester_stop(&bc);
}

/*
 * PAE paging for a guest that reaches beyond 4 GiB: linear GiB 0 maps physical GiB 0, linear GiBs 1-3 a
 * window of 3 GiB that paged_touch() moves (2 MiB pages, A and D preset). The code reloads CR3 (a TLB
 * flush) and runs guest_code. Its page tables and code lie in the slot's first 2 MiB, below FIRST_DATA.
 */
#define PAGED_CODE_GPA 0x3000ull
#define PDPT_GPA       0x4000ull
#define PD_GPA(i)      (0x5000ull + (uint64_t)(i)*PAGE)
#define PDE_2M         0xe3ull /* P, RW, A, D, PS */

static void paged_setup(struct lab_vm *v)
{
	static const uint8_t reload_cr3[] = {0x0f, 0x20, 0xd8,
					     0x0f, 0x22, 0xd8}; /* mov eax,cr3; mov cr3,eax */
	uint64_t *pdpt = (uint64_t *)(v->mem + PDPT_GPA), *pd0 = (uint64_t *)(v->mem + PD_GPA(0));
	struct kvm_sregs sregs;

	memcpy(v->mem + PAGED_CODE_GPA, reload_cr3, sizeof(reload_cr3));
	memcpy(v->mem + PAGED_CODE_GPA + sizeof(reload_cr3), guest_code, sizeof(guest_code));
	for (int i = 0; i < 4; i++)
		pdpt[i] = PD_GPA(i) | 1;
	for (uint64_t j = 0; j < 512; j++)
		pd0[j] = j * HUGE | PDE_2M;
	if (ioctl(v->vcpu, KVM_GET_SREGS, &sregs))
		die("KVM_GET_SREGS");
	sregs.cr3 = PDPT_GPA;
	sregs.cr4 |= 1u << 5;  /* PAE */
	sregs.cr0 |= 1u << 31; /* PG */
	if (ioctl(v->vcpu, KVM_SET_SREGS, &sregs))
		die("KVM_SET_SREGS (PAE paging)");
	code_gpa = PAGED_CODE_GPA;
}

/* guest_touch() for a paged_setup() guest, over any gfns of the slot: GiB 0 directly, the rest through
 * the window, 3 GiB at a time. */
static void paged_touch(struct lab_vm *v, uint64_t first_gfn, uint64_t npages, bool write)
{
	while (npages) {
		uint64_t base = first_gfn / GIB * GIB, n = npages;

		if (first_gfn + npages <= GIB) {
			guest_touch(v, first_gfn, npages, write);
			return;
		}
		if (base == 0)
			n = GIB - first_gfn; /* the part in GiB 0 first */
		else {
			for (int i = 1; i < 4; i++) {
				uint64_t *pd = (uint64_t *)(v->mem + PD_GPA(i));

				for (uint64_t j = 0; j < 512; j++)
					pd[j] = (base * PAGE + (uint64_t)(i - 1) * (GIB * PAGE) + j * HUGE) |
						PDE_2M;
			}
			if (n > base + 3 * GIB - first_gfn)
				n = base + 3 * GIB - first_gfn;
		}
		if (base == 0)
			guest_touch(v, first_gfn, n, write);
		else
			guest_touch(v, GIB + first_gfn - base, n, write);
		first_gfn += n;
		npages -= n;
	}
}

/*
 * A 16 GiB slot of 2 MiB mappings (every page mapped once), 1 % of it touched per interval: the pruned
 * walk skips GiBs 1-15 whole, and in GiB 0 visits its 512 leaves; the full walk visits all 8192. With
 * SPARSE, so that what remains in proportion to the slot is the walk (docs/kvm-ad.md, "Cost").
 */
static void run_bench_gib(double bw)
{
	struct lab_vm v;
	struct harvest_client bc;
	uint64_t npages = BENCH_GIB;
	uint64_t copy_ns = (uint64_t)(2.0 * (double)(npages / 8) / bw * 1e9);
	enum { WARM = 3, REPS = 5 };

	vm_setup_on(&v, npages * PAGE, gib_memory(npages * PAGE, 0));
	paged_setup(&v);
	harvester_start(&bc, &v);
	paged_touch(&v, FIRST_DATA, npages - FIRST_DATA, true);
	/* The two table cases (SPARSE, 1 % written), then for the record: the pruned walk of an idle
	 * interval, both walks without SPARSE (the kernel writes zeroes over the untouched chunks), with 0.1
	 * % written, and with 1 % read: what a touched leaf costs either walk. */
	static const struct {
		bool pruned, sparse;
		int permille; /* of the slot touched */
		bool write;
	} cases[] = {{true, true, 10, true},  {false, true, 10, true},  {true, true, 0, true},
		     {true, false, 10, true}, {false, false, 10, true}, {true, true, 1, true},
		     {false, true, 1, true},  {true, true, 10, false},  {false, true, 10, false}};
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		uint64_t ns[REPS], p2 = 0, p1 = 0;
		uint32_t flags_out = 0;

		for (int i = 0; i < WARM + REPS; i++) {
			const struct harvest_reply *r;

			if (cases[k].permille)
				paged_touch(&v, FIRST_DATA, npages * (uint64_t)cases[k].permille / 1000,
					    cases[k].write);
			r = harvest(&bc, npages,
				    (cases[k].sparse ? KVM_AD_HARVEST_SPARSE : 0) |
					(cases[k].pruned ? KVM_AD_HARVEST_PRUNE : 0));
			if (r->rc) {
				printf("BENCH FAIL harvest: %s\n", strerror(-r->rc));
				return;
			}
			if (i >= WARM) {
				ns[i - WARM] = r->ns;
				p2 = r->nr_pruned;
				p1 = r->nr_pruned_1g;
				flags_out = r->flags;
			}
		}
		qsort(ns, REPS, sizeof(ns[0]), cmp_u64);
		if (k < 2)
			printf(
			    "LAB_AD mapping=2m_gib touched=1 walk=%s harvest_ns=%llu copy_ns=%llu pages=%llu\n",
			    (flags_out & KVM_AD_HARVEST_PRUNE) ? "pruned" : "full",
			    (unsigned long long)ns[REPS / 2], (unsigned long long)copy_ns,
			    (unsigned long long)npages);
		printf(
		    "BENCH mappings=2M slot_gib=16 sparse=%d touched_permille=%d %s walk=%s harvest_ms=%.3f (min "
		    "%.3f max %.3f) bitmap_copy_ms=%.4f regions_pruned=%llu gib_regions_pruned=%llu\n",
		    cases[k].sparse, cases[k].permille, cases[k].write ? "written" : "read",
		    cases[k].pruned ? "pruned" : "full", ns[REPS / 2] / 1e6, ns[0] / 1e6, ns[REPS - 1] / 1e6,
		    copy_ns / 1e6, (unsigned long long)p2, (unsigned long long)p1);
	}
	harvester_stop(&bc);
	code_gpa = CODE_GPA;
}

/* A module parameter's first character ('Y', 'N', '1', '0'), or dflt when it cannot be read. */
static char module_param(const char *path, char dflt)
{
	FILE *f = fopen(path, "r");
	int c;

	if (!f)
		return dflt;
	c = fgetc(f);
	fclose(f);
	return c == EOF ? dflt : (char)c;
}

/*
 * Whether KVM can prune: the guest runs on the TDP MMU (kvm_amd npt=1 or kvm_intel ept=1, and kvm
 * tdp_mmu=1) and its SPTEs have A/D bits (not kvm_intel eptad=0, whose non-leaf entries have no Accessed
 * bit: there the walk is full, as under the shadow MMU).
 */
static bool can_prune(void)
{
	char npt = module_param("/sys/module/kvm_amd/parameters/npt", 0);
	char tdp = module_param("/sys/module/kvm/parameters/tdp_mmu", 'Y');
	char eptad = module_param("/sys/module/kvm_intel/parameters/eptad", 'Y');

	if (!npt)
		npt = module_param("/sys/module/kvm_intel/parameters/ept", 'N');
	return (npt == 'Y' || npt == '1') && (tdp == 'Y' || tdp == '1') && (eptad == 'Y' || eptad == '1');
}

int main(int argc, char **argv)
{
	struct lab_vm v;
	struct harvest_client c;
	bool huge = false, dirty_log = false, gib = false;
	long devmem = -1;
	uint64_t bench_mib = 0, npages = 4096;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--huge"))
			huge = true;
		else if (!strcmp(argv[i], "--gib"))
			gib = true;
		else if (!strcmp(argv[i], "--dirty-log"))
			dirty_log = true;
		else if (!strcmp(argv[i], "--prune"))
			walk_flags = KVM_AD_HARVEST_PRUNE;
		else if (!strcmp(argv[i], "--devmem") && i + 1 < argc)
			devmem = strtol(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--bench") && i + 1 < argc)
			bench_mib = strtoull(argv[++i], NULL, 0);
		else {
			fprintf(stderr,
				"ad_check: unknown argument '%s' (see the header of tests/lab/ad_check.c)\n",
				argv[i]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	int kvm = open("/dev/kvm", O_RDWR);
	if (kvm < 0)
		die("open /dev/kvm");
	check(ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_AD_HARVEST) == 1, "cap_ad_harvest",
	      "KVM_CHECK_EXTENSION");
	close(kvm);

	if (gib) {
		run_gib(can_prune());
		printf("AD_CHECK %s\n", failures ? "FAIL" : "PASS");
		return failures ? 1 : 0;
	}
	vm_setup(&v, npages * PAGE, huge, devmem);
	harvester_start(&c, &v);
	{
		struct kvm_ad_harvest q = {.slot = 0, .flags = KVM_AD_HARVEST_QUERY};
		int rc = ioctl(v.vm, KVM_AD_HARVEST, &q); /* the VMM itself may use the VM fd */

		check(rc == 0 && q.slot_npages == npages && q.slot_base_gfn == 0, "query_on_vm_fd_in_vmm",
		      rc ? strerror(errno) : "ok");
		q.flags = 0;
		q.first_page = 1; /* not a multiple of 64 */
		q.num_pages = 64;
		check(ioctl(v.ad, KVM_AD_HARVEST, &q) < 0 && errno == EINVAL, "unaligned_range_refused",
		      "EINVAL");
	}
	if (dirty_log)
		run_dirty_log(&v, &c, npages);
	else if (huge)
		run_huge(&v, &c, npages);
	else
		run_exactness(&v, &c, npages);
	if (walk_flags && !huge && !dirty_log) {
		run_prune_contract(&v, &c, npages, can_prune());
		if (can_prune())
			run_prune_regions(&v, &c, npages);
		run_prune_concurrent(&v, &c, npages, 40, 2 * REGION, 6 * REGION);
	}
	harvester_stop(&c);
	if (!huge && !walk_flags && devmem < 0 && !dirty_log)
		run_page_table_evidence();
	if (bench_mib) {
		double bw = copy_bandwidth(bench_mib << 20);

		run_bench(false, bench_mib, bw);
		run_bench(true, bench_mib, bw);
		run_bench_gib(bw);
	}
	printf("AD_CHECK %s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
