/* SPDX-License-Identifier: MIT */
/*
 * Error reporting for libhvmtrace: functions return 0 or a negative errno and, when given a
 * struct hvt_err, leave there a message that names the input and the problem.
 */
#ifndef HVMTRACE_ERROR_H
#define HVMTRACE_ERROR_H

#include <stddef.h>

struct hvt_err {
	char msg[512];
};

/* Sets e->msg (if e is not NULL) and returns rc, so callers can write `return hvt_err_set(e, -EINVAL, …)`. */
int hvt_err_set(struct hvt_err *e, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prefixes the message already in e with more context ("reading FILE: " …); returns rc. */
int hvt_err_prefix(struct hvt_err *e, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
