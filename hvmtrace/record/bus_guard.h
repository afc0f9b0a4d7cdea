/* SPDX-License-Identifier: MIT */
/*
 * Reading a mapping that another process may shrink under us: a VMM that truncates the shared bitmap memfd
 * turns our next read of it into SIGBUS. bus_guard_run() turns such a SIGBUS into an error return, so the
 * run can end with the trace closed. The tracer is single-threaded; one guarded region at a time.
 */
#ifndef HVT_RECORD_BUS_GUARD_H
#define HVT_RECORD_BUS_GUARD_H

#include <stddef.h>

/* Runs fn(arg). Returns 0, or -EFAULT if a SIGBUS on an address in [base, base + len) cut it short (fn's
 * work is then partial). A SIGBUS elsewhere is not ours to catch: it kills the process as before. */
int bus_guard_run(const void *base, size_t len, void (*fn)(void *arg), void *arg);

#endif
