/* SPDX-License-Identifier: MIT */
/* The claims (claims.c): which traced domain holds which host-physical memory, so two never share it. */
#ifndef HVT_LIBVIRT_CLAIMS_H
#define HVT_LIBVIRT_CLAIMS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct hvt_err;
struct hvt_lv_domain;
struct hvt_range;

/* The domain's claim on its extents (RUN_DIR/NAME/claim): written by the hook at start with owner the
 * libvirt daemon starting the domain, given to QEMU as owner by the devmem helper (hvt_lv_claim_owner),
 * removed at release; others' claims are what hvt_lv_check compares with. A claim whose owner (pid and
 * start time) is gone is stale: hvt_lv_check ignores it and hvt_lv_claim takes it over. */
int hvt_lv_claim(const struct hvt_lv_domain *d, pid_t owner, struct hvt_err *e);
int hvt_lv_claim_owner(const struct hvt_lv_domain *d, pid_t owner, struct hvt_err *e);
void hvt_lv_unclaim(const struct hvt_lv_domain *d);

/* -EBUSY when another running domain's claim overlaps the extents x[0..n). A stale one does not count; with
 * take_over (the hook's start, under the claims lock) it is removed, saying so on stderr. */
int hvt_lv_claims_check(const struct hvt_lv_domain *d, const struct hvt_range *x, size_t n, bool take_over,
			struct hvt_err *e);

#endif
