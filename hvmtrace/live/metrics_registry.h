/* SPDX-License-Identifier: MIT */
/*
 * Where running recorders announce their metrics endpoints, so that `hvmtrace top` finds them: one file per
 * recorder, record-PID.url, holding the URL, in $HVMTRACE_RUN_DIR, else /run/hvmtrace for root, else
 * /tmp/hvmtrace-UID (directory mode 0700).
 */
#ifndef HVT_LIVE_METRICS_REGISTRY_H
#define HVT_LIVE_METRICS_REGISTRY_H

#include <stddef.h>
#include <sys/types.h>

/* The registry directory's path. */
void metrics_registry_dir(char *buf, size_t len);

/* Announces url for this process; fills path (to remove later). 0 or -errno. */
int metrics_registry_add(const char *url, char *path, size_t pathlen);

/* Calls fn for every announced endpoint whose recorder still runs; returns how many. */
int metrics_registry_each(void (*fn)(void *ctx, pid_t pid, const char *url), void *ctx);

#endif
