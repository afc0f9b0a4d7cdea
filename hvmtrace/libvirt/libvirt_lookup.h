/* SPDX-License-Identifier: MIT */
/* The libvirt API calls (libvirt_lookup.c): a domain as the libvirt daemon has it now. */
#ifndef HVT_LIBVIRT_LIBVIRT_LOOKUP_H
#define HVT_LIBVIRT_LIBVIRT_LOOKUP_H

struct hvt_err;
struct hvt_lv_domain;

/* The domain NAME's live XML through the libvirt API (uri NULL: libvirt's default), parsed. */
int hvt_lv_lookup(const char *uri, const char *name, struct hvt_lv_domain *d, struct hvt_err *e);

#endif
