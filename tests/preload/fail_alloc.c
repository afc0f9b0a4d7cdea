// SPDX-License-Identifier: MIT
/*
 * Allocation failures, preloaded (LD_PRELOAD) into a program under test:
 *   HVT_FAIL_ALLOC=N         the N-th allocation of the program (malloc, calloc, realloc, posix_memalign,
 *                            aligned_alloc, memalign; from 1, counted from the start of main()) fails
 *                            with ENOMEM, once; the others succeed. Allocations before main() are the
 *                            shared libraries' constructors (GLib's abort by design when one fails), which
 *                            no program can answer, so they are neither counted nor failed.
 *   HVT_ALLOC_COUNT_TO=FILE  at exit, the number of allocations made is written to FILE (the sweep's range).
 *   HVT_ALLOC_SPARE=LIB      the N-th allocation is not failed when a caller on its stack is in a library
 *                            whose file name contains LIB; "spared LIB" is then appended to the count
 *                            file. For libraries that crash on a failed allocation of their own (json-c
 *                            0.16: tests/integration/record_alloc_failures.sh says why).
 * For optimised builds only: under AddressSanitizer the allocator is ASan's, which cannot be wrapped from
 * a library loaded before its runtime has started (the first dlsym crashes).
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);

static atomic_ulong count;
static atomic_int in_main;
static _Thread_local int walking; /* inside backtrace(): its allocations are not the program's */
static int spared;
static unsigned long fail_at; /* 0: never */
static _Thread_local int resolving;

/* dlsym may allocate (dlerror's buffer) before the real allocator is known: such requests come from here. */
static char boot[4096] __attribute__((aligned(16)));
static size_t boot_used;

static void *boot_alloc(size_t n)
{
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (n > sizeof(boot) - boot_used)
		return NULL;
	p = boot + boot_used;
	boot_used += n;
	return p;
}

static int from_boot(const void *p)
{
	return (const char *)p >= boot && (const char *)p < boot + sizeof(boot);
}

static void resolve(void)
{
	const char *s;

	if (real_malloc || resolving)
		return;
	resolving = 1;
	real_malloc = dlsym(RTLD_NEXT, "malloc");
	real_calloc = dlsym(RTLD_NEXT, "calloc");
	real_realloc = dlsym(RTLD_NEXT, "realloc");
	real_free = dlsym(RTLD_NEXT, "free");
	real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	real_memalign = dlsym(RTLD_NEXT, "memalign");
	s = getenv("HVT_FAIL_ALLOC");
	fail_at = s ? strtoul(s, NULL, 10) : 0;
	resolving = 0;
}

/* Whether a caller of this allocation is in the library HVT_ALLOC_SPARE names. */
static int spare(void)
{
	const char *lib = getenv("HVT_ALLOC_SPARE");
	void *frames[32];
	int n;

	if (!lib || !*lib)
		return 0;
	walking = 1;
	n = backtrace(frames, 32);
	walking = 0;
	for (int i = 0; i < n; i++) {
		Dl_info info;

		if (dladdr(frames[i], &info) && info.dli_fname && strstr(info.dli_fname, lib))
			return 1;
	}
	return 0;
}

/* Counts an allocation; true when this one is to fail. */
static int injected(void)
{
	unsigned long n;

	if (!atomic_load(&in_main) || walking)
		return 0;
	n = atomic_fetch_add(&count, 1) + 1;

	if (fail_at && n == fail_at) {
		if (spare()) {
			spared = 1;
			return 0;
		}
		errno = ENOMEM;
		return 1;
	}
	return 0;
}

void *malloc(size_t n)
{
	resolve();
	if (!real_malloc)
		return boot_alloc(n);
	return injected() ? NULL : real_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	resolve();
	if (!real_calloc)
		return b && a > (size_t)-1 / b ? NULL : boot_alloc(a * b); /* boot is zeroed */
	return injected() ? NULL : real_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	resolve();
	if (from_boot(p)) { /* never freed or grown in practice; copy out to be safe */
		void *q = malloc(n);

		if (q)
			memcpy(q, p,
			       n < sizeof(boot) - (size_t)((char *)p - boot)
				   ? n
				   : sizeof(boot) - (size_t)((char *)p - boot));
		return q;
	}
	return injected() ? NULL : real_realloc(p, n);
}

void free(void *p)
{
	resolve();
	if (p && !from_boot(p) && real_free)
		real_free(p);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	resolve();
	return injected() ? ENOMEM : real_posix_memalign(out, align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	resolve();
	return injected() ? NULL : real_aligned_alloc(align, n);
}

void *memalign(size_t align, size_t n)
{
	resolve();
	return injected() ? NULL : real_memalign(align, n);
}

/* main() is found by wrapping glibc's __libc_start_main, which calls it after every constructor. */
typedef int (*main_fn)(int, char **, char **);
typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);
int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
		      void (*rtld_fini)(void), void *stack_end);
static main_fn real_main;

static int counted_main(int argc, char **argv, char **envp)
{
	void *frame[1];

	backtrace(frame, 1); /* loads libgcc_s now, not inside an allocation */
	atomic_store(&in_main, 1);
	return real_main(argc, argv, envp);
}

int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
		      void (*rtld_fini)(void), void *stack_end)
{
	start_fn real = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");

	real_main = main;
	return real(counted_main, argc, argv, init, fini, rtld_fini, stack_end);
}

__attribute__((destructor)) static void report_count(void)
{
	const char *to = getenv("HVT_ALLOC_COUNT_TO");
	FILE *f;

	if (!to)
		return;
	f = fopen(to, "we");
	if (f) {
		fprintf(f, "%lu\n", (unsigned long)atomic_load(&count));
		if (spared)
			fprintf(f, "spared %s\n", getenv("HVT_ALLOC_SPARE"));
		fclose(f);
	}
}
