/* SPDX-License-Identifier: MIT */
/* The host checks (host_checks.c): whether this host can trace a libvirt domain as its request asks. */
#ifndef HVT_LIBVIRT_HOST_CHECKS_H
#define HVT_LIBVIRT_HOST_CHECKS_H

#include <stdbool.h>
#include <stddef.h>

struct hvt_err;
struct hvt_lv_domain;

/* Checks the request against this host: the chanmap and its channels, the extents against the iomem
 * (reserved, no System RAM, not claimed), the tracer CPU (exists, no vCPU or emulator pinned to it), the
 * output directory (writable, by the tracer's unit too where systemd runs), and no other running domain's
 * claim on the same memory. One line in e. */
int hvt_lv_check(const struct hvt_lv_domain *d, struct hvt_err *e);

/* Whether the hook takes its systemd route (the tracer as hvmtrace@NAME.service): /run/systemd/system exists
 * and HVMTRACE_NO_SYSTEMD is not set. Where it does, hvt_lv_check also refuses an output directory the
 * unit's sandbox hides or makes read-only (/tmp, /home, /etc, ...). */
bool hvt_lv_systemd_runs(void);

/* The output directory check of hvt_lv_check alone (hvmtrace doctor asks it too, so both answer alike): a
 * directory, writable (a file created and removed), and where systemd runs, one the tracer's unit can keep a
 * trace in. */
int hvt_lv_check_output(const char *dir, struct hvt_err *e);

/* How many other running traced domains (under d's run-dir) have d's tracer CPU; their names, quoted and
 * comma-separated, in names. Two tracers on one CPU share it: a warning, not a refusal. */
size_t hvt_lv_cpu_sharers(const struct hvt_lv_domain *d, char *names, size_t len);

#endif
