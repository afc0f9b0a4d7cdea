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
 * Usage: ad_check [--huge] [--devmem PHYS] [--bench MIB]
 *   --huge        back guest RAM with transparent huge pages (2 MiB SPTEs) and check that a touched huge
 *                 page reports all 512 of its 4 KiB pages
 *   --devmem PHYS back guest RAM with /dev/mem at PHYS (a memmap= reserved range of L1)
 *   --bench MIB   also time harvests of an MIB-sized slot with every page accessed and dirty, and L1's
 *                 memcpy bandwidth (figures, not checks)
 * Output: "CHECK name PASS|FAIL detail" lines, "BENCH ..." lines, and a final "AD_CHECK PASS|FAIL".
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
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
#define NO_EXTRA   (~0ull) /* check_set: no extra page */

static int failures;

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

static void vm_setup(struct lab_vm *v, uint64_t size, bool huge, long devmem)
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
	v->mem = guest_memory(size, huge, devmem);
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
static void guest_touch(struct lab_vm *v, uint64_t first_gfn, uint64_t npages, bool write)
{
	struct kvm_regs regs = {.rip = CODE_GPA, .rflags = 2};

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
	uint64_t nr_accessed, nr_dirty, ns;
	uint64_t accessed[MAX_BITMAP / 64], dirty[MAX_BITMAP / 64];
};

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
		h.accessed_bitmap = (uintptr_t)r.accessed;
		h.dirty_bitmap = (uintptr_t)r.dirty;
		r.vm_fd_errno = ioctl(vm_fd, KVM_AD_HARVEST, &h) < 0 ? errno : 0;
		t0 = now_ns();
		r.rc = ioctl(ad_fd, KVM_AD_HARVEST, &h) < 0 ? -errno : 0;
		r.ns = now_ns() - t0;
		r.nr_accessed = h.nr_accessed;
		r.nr_dirty = h.nr_dirty;
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

static const struct harvest_reply *harvest(struct harvest_client *c, uint64_t num_pages, uint32_t flags)
{
	struct harvest_request q = {.flags = flags, .num_pages = num_pages};

	if (write(c->sock, &q, sizeof(q)) != sizeof(q) || read(c->sock, &c->r, sizeof(c->r)) != sizeof(c->r))
		die("harvester child");
	if (c->r.rc)
		printf("harvest: %s\n", strerror(-c->r.rc));
	return &c->r;
}

/* Compares a bitmap with the expected set [lo, hi) plus the extra gfn (if not ~0); names the first miss. */
static void check_set(const char *name, const uint64_t *bm, uint64_t npages, uint64_t lo, uint64_t hi,
		      uint64_t extra)
{
	char detail[160];
	uint64_t gfn, count = 0, expected = 0;
	long first_bad = -1;

	for (gfn = 0; gfn < npages; gfn++) {
		bool want = (gfn >= lo && gfn < hi) || gfn == extra;
		bool got = bm[gfn / 64] >> (gfn % 64) & 1;

		count += got;
		expected += want;
		if (want != got && first_bad < 0)
			first_bad = (long)gfn;
	}
	snprintf(detail, sizeof(detail), "pages=%llu expected=%llu first_mismatch=%ld",
		 (unsigned long long)count, (unsigned long long)expected, first_bad);
	check(first_bad < 0, name, detail);
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
	    "EVIDENCE noflush_hot_pages_reported=%llu of 4 (4 = the lab's emulated TLB kept no stale translation across the harvest: each interval here starts with a new VMRUN, and TCG's nested paging does not keep guest translations across it, so a missing flush cannot show)\n",
	    (unsigned long long)__builtin_popcountll(r->dirty[(FIRST_DATA + 300) / 64]));
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

static void run_bench(struct harvest_client *c, bool huge, uint64_t mib)
{
	struct lab_vm v;
	struct harvest_client bc;
	uint64_t npages = mib << 8, t0, copy_ns, full_ns = 0, empty_ns = 0;
	const int reps = 3;
	uint8_t *a, *b;

	(void)c;
	if (npages > MAX_BITMAP)
		npages = MAX_BITMAP;
	vm_setup(&v, npages * PAGE, huge, -1);
	harvester_start(&bc, &v);
	for (int i = 0; i < reps; i++) {
		guest_touch(&v, FIRST_DATA, npages - FIRST_DATA, true);
		full_ns += harvest(&bc, npages, 0)->ns;
		empty_ns += harvest(&bc, npages, 0)->ns;
	}
	a = malloc(npages * PAGE);
	b = malloc(npages * PAGE);
	if (!a || !b)
		die("malloc");
	memset(a, 1, npages * PAGE);
	memset(b, 2, npages * PAGE);
	t0 = now_ns();
	memcpy(b, a, npages * PAGE);
	__asm__ volatile("" : : "r"(b) : "memory"); /* keep the copy: b is not read afterwards */
	copy_ns = now_ns() - t0;
	double gib = (double)(npages * PAGE) / (1 << 30);
	double bw = (double)(npages * PAGE) / ((double)copy_ns / 1e9);
	double bitmap_ns_per_gib = 2.0 * (1 << 15) / bw * 1e9; /* two bitmaps of 32 KiB per GiB */
	printf(
	    "BENCH mappings=%s slot_mib=%llu harvest_all_set_ms_per_gib=%.3f harvest_empty_ms_per_gib=%.3f l1_copy_gib_per_s=%.2f bitmap_copy_ms_per_gib=%.4f ratio_all_set=%.0f (lab is emulated: compare ratios, not times)\n",
	    huge ? "2M" : "4K", (unsigned long long)(npages >> 8), full_ns / reps / 1e6 / gib,
	    empty_ns / reps / 1e6 / gib, bw / (1 << 30), bitmap_ns_per_gib / 1e6,
	    (full_ns / reps / gib) / bitmap_ns_per_gib);
	free(a);
	free(b);
	harvester_stop(&bc);
}

int main(int argc, char **argv)
{
	struct lab_vm v;
	struct harvest_client c;
	bool huge = false;
	long devmem = -1;
	uint64_t bench_mib = 0, npages = 4096;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--huge"))
			huge = true;
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
	if (huge)
		run_huge(&v, &c, npages);
	else
		run_exactness(&v, &c, npages);
	if (bench_mib) {
		run_bench(&c, false, bench_mib);
		run_bench(&c, true, bench_mib);
	}
	harvester_stop(&c);
	printf("AD_CHECK %s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
