/* SPDX-License-Identifier: MIT */
/* The tracer's side of the attach protocol: connect, hello, attach, and the messages that arrive later. */
#ifndef HVT_RECORD_SESSION_H
#define HVT_RECORD_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "hvmtrace/attach.h"
#include "hvmtrace/trace.h"

struct harvester;
struct hvt_err;

struct session {
	int sock;
	const char *path;
	pid_t vmm_pid;              /* from SO_PEERCRED, not from what the VMM says */
	struct hvt_msg_hello hello; /* its layout is moved into `layout` */
	enum hvt_mode mode;
	int harvest_cpu;
	uint64_t t_armed_ns;
	struct hvt_layout layout; /* the layout in force */
	/* The harvester of the mode attached in (harvest.h), from "attached" to session_close, and its
	 * private state, which only its harvest_*.c reads. */
	const struct harvester *harvester;
	void *harvester_state;
	uint64_t seq;  /* last harvest sent */
	bool vmm_gone; /* connection closed (bye, EOF or error) */
	bool said_bye; /* the VMM ended the conversation properly */
	/* The largest guest RAM a layout may have (the memory budget's, mem_budget.h); 0: any. A layout
	 * beyond it is refused: layout_refused is set and session_recv fails with -E2BIG. */
	uint64_t max_guest_bytes;
	bool layout_refused;
	/* Mode ad: ask KVM_AD_HARVEST for the full walk (record --ad-walk full) rather than the pruned one;
	 * and the walk the kernel did, "pruned" or "full" (NULL before the first harvest; docs/kvm-ad.md). */
	bool ad_walk_full;
	const char *ad_walk;
	char end_reason[400];
	/* The last interval's sets, cleared, for the next one (session_interval_init): allocating and zeroing
	 * a TiB guest's bitmaps each interval cost the tracer more than the pages it recorded. */
	struct hvt_interval spare;
};

/* Connects, authenticates the peer and reads its hello. Fails if the peer is not a VMM or speaks another
 * protocol version (it is told why). The peer must run as root, as our uid, or as vmm_uid (-1: none; the
 * unprivileged user libvirt runs QEMU as). */
int session_connect(struct session *s, const char *path, long vmm_uid, struct hvt_err *err);

/* Sends attach in h's mode and waits for attached, whose fd h then takes (harvest.h). */
int session_attach(struct session *s, const struct harvester *h, int cpu, struct hvt_err *err);

/* Installs a layout message's layout, and hands what else it brings to the harvester. */
int session_apply_layout(struct session *s, struct hvt_msg *m, struct hvt_err *err);

/*
 * Receives one message and handles what every state handles alike: "layout" is applied (returns 0 with
 * m->type == HVT_MSG_LAYOUT), "bye" and "error" end the session (-EPIPE / -ECONNABORTED, with the reason
 * in err), EOF ends it (-EPIPE). Other messages are left to the caller.
 */
int session_recv(struct session *s, struct hvt_msg *m, int timeout_ms, struct hvt_err *err);

/*
 * An interval of the layout in force with the sets flags names (HVT_IV_WRITTEN, HVT_IV_ACCESSED), all clear:
 * the spare's sets when they are the layout's, else new ones. 0 or -ENOMEM.
 */
int session_interval_init(struct session *s, struct hvt_interval *iv, uint32_t flags);

/* Done with iv (recorded or dropped): its sets are cleared, which costs the pages they held (pageset.h's
 * marks), and kept as the spare; the rest is freed. */
void session_interval_done(struct session *s, struct hvt_interval *iv);

/* Sends bye (if the VMM is still there) and releases everything, the harvester's state included (in ad
 * mode, the A/D fd keeps the VM alive). */
void session_close(struct session *s, const char *reason);

#endif
