/* SPDX-License-Identifier: MIT */
/*
 * The privileged side of memory-backend-devmem's helper protocol (the QEMU patch's
 * backends/hostmem-devmem-helper.c; docs/libvirt.md §3): an unprivileged QEMU asks for its extents and gets
 * an fd of the memory and one of the iomem, opened here as root, after the same checks the hook made.
 */
#ifndef HVT_LIBVIRT_DEVMEM_HELPER_H
#define HVT_LIBVIRT_DEVMEM_HELPER_H

struct hvt_err;
struct hvt_lv_domain;

/* Listens on `sock` (owned by the domain's QEMU user, mode 0600) and serves one request of a peer running as
 * that user, or gives up after timeout_ms. Returns 0 when the fds were handed over; otherwise the reason
 * (also sent to the peer) is in e. */
int devmem_helper_listen(const struct hvt_lv_domain *d, const char *sock, struct hvt_err *e);
int devmem_helper_serve(const struct hvt_lv_domain *d, int lsock, int timeout_ms, struct hvt_err *e);

#endif
