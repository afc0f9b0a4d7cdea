// SPDX-License-Identifier: MIT
/*
 * A stand-in for the KVM_AD_HARVEST kernel patch, preloaded into `hvmtrace record` (LD_PRELOAD) for tests
 * on hosts without it: every KVM_AD_HARVEST, on any fd, answers for a slot of the size asked, and every
 * other ioctl goes to the real one. Harvest n (from 1, the tracer's first clearing harvest included)
 * reports page n % num_pages written, and accessed only when n is even: every other interval then holds a
 * page the "kernel" reports written but not accessed, as KVM's shadow MMU did in the nested lab
 * (docs/kvm-ad.md).
 * FAKE_KVM_AD_KERNEL says which kernel it plays for KVM_AD_HARVEST_PRUNE: "tdp" (default) keeps the flag
 * (a pruned walk), "shadow" clears it on return (a full walk), "old" refuses it with EINVAL, as a kernel
 * without the flag refuses every flag it does not know; "old" and "nosparse" (patches 1-7) refuse
 * KVM_AD_HARVEST_SPARSE too. With SPARSE it writes only the words it sets, as the kernel writes only the
 * chunks where it found a bit: bitmaps that were not zero would show. FAKE_KVM_AD_FLAGS_LOG names a file that
 * gets the flags of every KVM_AD_HARVEST asked for, one hexadecimal number a line.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "hvmtrace/kvm_ad.h"

static void set_page(uint64_t bitmap, uint64_t page)
{
	uint64_t *words = (uint64_t *)(uintptr_t)bitmap;

	words[page / 64] |= (uint64_t)1 << (page % 64); /* the kernel's layout: little-endian words */
}

/* Logs the flags asked for; refuses those the kernel played does not know, as it would. */
static int fake_flags(struct kvm_ad_harvest *h)
{
	const char *kernel = getenv("FAKE_KVM_AD_KERNEL"), *log = getenv("FAKE_KVM_AD_FLAGS_LOG");
	FILE *f = log ? fopen(log, "a") : NULL;

	if (f) {
		fprintf(f, "%#x\n", h->flags);
		fclose(f);
	}
	if (kernel &&
	    ((!strcmp(kernel, "old") && (h->flags & (KVM_AD_HARVEST_PRUNE | KVM_AD_HARVEST_SPARSE))) ||
	     (!strcmp(kernel, "nosparse") && (h->flags & KVM_AD_HARVEST_SPARSE)))) {
		errno = EINVAL;
		return -1;
	}
	if (kernel && !strcmp(kernel, "shadow"))
		h->flags &= ~KVM_AD_HARVEST_PRUNE;
	return 0;
}

static int fake_harvest(struct kvm_ad_harvest *h)
{
	static uint64_t n;
	uint64_t bytes = (h->num_pages + 63) / 64 * 8, page;

	if (fake_flags(h))
		return -1;
	n++;
	page = h->num_pages ? n % h->num_pages : 0;
	if (h->accessed_bitmap && !(h->flags & KVM_AD_HARVEST_SPARSE))
		memset((void *)(uintptr_t)h->accessed_bitmap, 0, bytes);
	if (h->dirty_bitmap && !(h->flags & KVM_AD_HARVEST_SPARSE))
		memset((void *)(uintptr_t)h->dirty_bitmap, 0, bytes);
	if (h->num_pages && h->dirty_bitmap)
		set_page(h->dirty_bitmap, page);
	if (h->num_pages && h->accessed_bitmap && n % 2 == 0)
		set_page(h->accessed_bitmap, page);
	h->nr_dirty = h->num_pages ? 1 : 0;
	h->nr_accessed = h->num_pages && n % 2 == 0;
	h->slot_base_gfn = 0;
	h->slot_npages = h->first_page + h->num_pages;
	return 0;
}

int ioctl(int fd, unsigned long request, ...)
{
	static int (*real)(int, unsigned long, ...);
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (request == KVM_AD_HARVEST)
		return fake_harvest(arg);
	if (!real)
		real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	return real(fd, request, arg);
}
