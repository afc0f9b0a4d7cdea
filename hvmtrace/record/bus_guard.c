// SPDX-License-Identifier: MIT
/* SIGBUS on a mapping that shrank under us, turned into an error (bus_guard.h). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "bus_guard.h"

static sigjmp_buf guard_env;
static volatile sig_atomic_t guard_active;
static const char *volatile guard_base;
static volatile size_t guard_len;

static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
	const char *addr = si->si_addr;

	(void)ctx;
	if (guard_active && addr >= guard_base && (size_t)(addr - guard_base) < guard_len) {
		guard_active = 0;
		siglongjmp(guard_env, 1);
	}
	/* Not a fault of the guarded mapping: the default action, when the faulting access runs again. */
	signal(sig, SIG_DFL);
}

int bus_guard_run(const void *base, size_t len, void (*fn)(void *arg), void *arg)
{
	struct sigaction sa, old;
	int rc = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &old) < 0)
		return -errno;
	guard_base = base;
	guard_len = len;
	if (sigsetjmp(guard_env, 1) == 0) {
		guard_active = 1;
		fn(arg);
		guard_active = 0;
	} else {
		rc = -EFAULT;
	}
	sigaction(SIGBUS, &old, NULL);
	return rc;
}
