// SPDX-License-Identifier: MIT
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hvmtrace/error.h"

int hvt_err_set(struct hvt_err *e, int rc, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return rc;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return rc;
}

int hvt_err_prefix(struct hvt_err *e, int rc, const char *fmt, ...)
{
	char prefix[sizeof(e->msg)];
	char old[sizeof(e->msg)];
	va_list ap;

	if (!e)
		return rc;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof(old));
	/* Both parts are bounded by the buffer; a long message is cut, never overflowed. */
	size_t n = strnlen(prefix, sizeof(e->msg) - 1);
	memcpy(e->msg, prefix, n);
	strncpy(e->msg + n, old, sizeof(e->msg) - 1 - n);
	e->msg[sizeof(e->msg) - 1] = '\0';
	return rc;
}
