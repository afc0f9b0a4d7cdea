/* SPDX-License-Identifier: MIT */
/*
 * The attach protocol, version 2: how a tracer (`hvmtrace record`) attaches to a VMM (patched QEMU, or
 * tests/vmm) and harvests guest page sets. This header and docs/attach-protocol.md are the specification;
 * the QEMU and KVM work implement against them. Every field of every message is listed below.
 *
 * Transport. AF_UNIX SOCK_STREAM socket at a path the VMM creates with mode 0600. Both sides check the
 * peer's SO_PEERCRED: the uid must be 0 or the checker's own uid, otherwise the connection is closed. The
 * VMM serves one tracer at a time; a second connection gets an "error" ("busy") and is closed.
 *
 * Framing. Each message is one frame: a 32-bit little-endian length N (1 <= N <= HVT_ATTACH_MAX_FRAME),
 * then N bytes of UTF-8 JSON holding one object whose string member "type" names the message. A frame is
 * sent with one sendmsg(); its file descriptors (SCM_RIGHTS, at most HVT_ATTACH_MAX_FDS) ride on that
 * sendmsg, i.e. with the frame's first byte. Only "attached" and "layout" carry fds; a receiver that gets
 * fds on another message, or fewer than the message needs, fails with a protocol error. Unknown members
 * are ignored (later versions only add members); an unknown "type" is a protocol error.
 *
 * Conversation (VMM = V, tracer = T):
 *   V→T hello        at once after accept (or "error" busy)
 *   T→V attach       mode and harvest CPU; V answers "attached" (+ fd) or "error" and closes
 *   V→T layout       whenever guest RAM slots change (+ a new memfd in dirty-log mode)
 *   T→V harvest      dirty-log and dirty-ring modes, once per interval;  V→T harvested   the answer
 *   V→T bye          the guest stopped; the VMM then waits (a few seconds at most) for the tracer to take
 *                    the last interval: dirty-log, one more "harvest" (or the one in flight), answered with
 *                    "final": true; ad, the tracer's own harvest. Then it closes.
 *   T→V bye          orderly end; the VMM disarms tracking and the migration blocker and closes
 *   either error     {code, message}, then close
 * The VMM never sends "harvested" unasked (version 1 sent the final one so, which could overwrite bitmaps
 * the tracer was still reading). A VMM notices a vanished tracer only when it next reads, so a tracer that
 * meets "busy" may retry for a few seconds before giving up.
 *
 * Intervals (dirty-log mode). The VMM keeps KVM's dirty log in manual-protect mode (or QEMU's own dirty
 * tracking under TCG). A harvest takes a snapshot of the log (KVM_GET_DIRTY_LOG) at t_end_ns and re-arms
 * the snapshot's pages (KVM_CLEAR_DIRTY_LOG), finishing at t_done_ns. The set of interval n therefore holds
 * every page written in [t_start_ns, t_end_ns], where t_start_ns is the previous harvest's t_done_ns (the
 * first interval starts at attached.t_armed_ns), and may also hold pages written during the two harvests
 * around it. All times are CLOCK_MONOTONIC nanoseconds of the host both peers run on.
 *
 * Shared bitmaps (dirty-log mode). The memfd starts with a header of HVT_BITMAP_HEADER_BYTES whose first
 * 64-bit little-endian word is the sequence word; the bitmaps follow it, one per slot in layout order,
 * packed: slot i's bitmap starts HVT_BITMAP_HEADER_BYTES + hvt_layout_bitmap_offset(layout, i) bytes in
 * and is ceil(npages/64) 64-bit little-endian words; bit b of word w is page 64*w + b of the slot. The VMM
 * writes the memfd only between receiving "harvest" N and sending "harvested" N: it sets the sequence word
 * to 2N-1 before it writes the bitmaps and to 2N after (a seqlock). The tracer reads the bitmaps only
 * between "harvested" N and its next "harvest", and checks that the word reads 2N before and after it
 * copies them: any other value means the VMM wrote under it, and the copy is discarded, never recorded.
 * A VMM seals the memfd against shrinking (F_SEAL_SHRINK) where it can; a tracer survives one that shrinks
 * it anyway (SIGBUS on its mapping ends the run with the trace closed).
 *
 * Mode "ad" (kernel with KVM_CAP_AD_HARVEST, include/hvmtrace/kvm_ad.h). "attached" carries the fd made by
 * KVM_CREATE_AD_FD; the VMM does not enable dirty logging. The tracer calls KVM_AD_HARVEST on that fd itself,
 * per slot ("slot" of the layout: the KVM slot id) per interval, and sends no "harvest"; "attach.cpu" and
 * the VMM's harvest thread play no part. Its first harvest only clears stale bits and opens the first
 * interval (attached.t_armed_ns is when the VMM created the fd). When the guest stops, the VMM sends bye but
 * keeps the VM (and so its SPTEs) alive until the tracer closes, for a few seconds at most, so the tracer can
 * take the last interval.
 *
 * Mode "dirty-ring" (a VMM whose vCPUs run on KVM's dirty rings, KVM_CAP_DIRTY_LOG_RING: such a VM has
 * no dirty bitmaps to get). The conversation, the memfd, its sequence word and its size are dirty-log's;
 * only what the area after the header holds differs. The VMM reaps its vCPUs' rings (when asked, and on
 * each KVM_EXIT_DIRTY_RING_FULL, counted in "ring_full") and KVM_RESET_DIRTY_RINGS re-arms the reaped
 * pages. When "listed" is true the area holds a page list: dirty_pages 64-bit little-endian entries, each
 * (i << 48) | p for page p of slot i of the layout (a page may be listed more than once); the list holds at
 * most bitmap_bytes / 8 entries. An interval that writes more pages than that is handed over as bitmaps,
 * exactly as in dirty-log ("listed" false, dirty_pages the bits set): no page is ever dropped. Layout
 * changes are not supported in this mode yet (the test VMM adds no slot while a tracer is attached).
 *
 * Layout changes. Slots split and merge (e.g. during firmware boot). The VMM sends "layout" with a higher
 * generation before any "harvested" that refers to it. If the slots change between hello and attached,
 * the VMM sends the new "layout" (without fd) before "attached", whose memfd then matches it. In dirty-log
 * mode it syncs a slot's log before it removes the slot, and carries the bits, by GFN, into the next
 * "harvested"; bits whose GFN belongs to no slot of the new layout are counted in "lost_pages".
 */
#ifndef HVMTRACE_ATTACH_H
#define HVMTRACE_ATTACH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "layout.h"
#include "tracking_mode.h" /* enum hvt_mode: the modes hello offers and attach asks for */

struct hvt_err;

#define HVT_ATTACH_PROTOCOL    2
#define HVT_ATTACH_MAX_FRAME   (16u << 20)
#define HVT_ATTACH_MAX_FDS     4
#define HVT_ATTACH_SOCKET_MODE 0600
#define HVT_ATTACH_MAX_VCPUS   1024
/* Once a frame has begun, each further piece must arrive within HVT_ATTACH_FRAME_PAUSE_MS of the last, and
 * the whole frame within HVT_ATTACH_FRAME_MS of its first byte; a pause shorter than that is waited out. */
#define HVT_ATTACH_FRAME_PAUSE_MS 5000
#define HVT_ATTACH_FRAME_MS       30000
/* Guest RAM a layout may describe, in all its slots (16 TiB): the tracer maps, locks and copies a bitmap
 * of it (512 MiB at this bound), so a VMM cannot make it take more. */
#define HVT_ATTACH_MAX_GUEST_BYTES (1ull << 44)

/* dirty-log mode's memfd: this header, then the bitmaps. Word 0 is the sequence word (see above). */
#define HVT_BITMAP_HEADER_BYTES 64
static inline uint64_t hvt_bitmap_seq_writing(uint64_t harvest_seq)
{
	return 2 * harvest_seq - 1;
}
static inline uint64_t hvt_bitmap_seq_done(uint64_t harvest_seq)
{
	return 2 * harvest_seq;
}

enum hvt_msg_type {
	HVT_MSG_HELLO = 1,
	HVT_MSG_ATTACH,
	HVT_MSG_ATTACHED,
	HVT_MSG_LAYOUT,
	HVT_MSG_HARVEST,
	HVT_MSG_HARVESTED,
	HVT_MSG_BYE,
	HVT_MSG_ERROR,
};
const char *hvt_msg_type_name(enum hvt_msg_type t); /* the JSON "type" string */

/* {"type":"hello","protocol":2,"vmm":"…","vm":{"name":"…","uuid":"…","pid":N},"accel":"kvm",
 *  "page_size":4096,"modes":["dirty-log",…],"default_cpu":N,"vcpu_tids":[N,…],"layout":{…}} */
struct hvt_msg_hello {
	uint32_t protocol;          /* HVT_ATTACH_PROTOCOL of the VMM */
	char vmm[64];               /* software and version, "hvmtrace-vmm 0.1.0", "QEMU 10.0.2" */
	char vm_name[HVT_NAME_MAX]; /* "" if none */
	char vm_uuid[40];           /* "" if none */
	int32_t vm_pid;             /* the VMM's pid */
	char accel[16];             /* "kvm" or "tcg" */
	uint32_t page_size;
	uint32_t modes;      /* HVT_MODE_BIT()s the VMM offers now */
	int32_t default_cpu; /* host CPU configured for the harvest thread, -1 if none */
	uint32_t nvcpu_tids;
	int32_t vcpu_tids[HVT_ATTACH_MAX_VCPUS]; /* threads that run vCPUs (for the CPU-overlap warning) */
	struct hvt_layout layout;                /* generation >= 1 */
};

/* {"type":"attach","protocol":2,"mode":"dirty-log","cpu":N,"tracer":{"name":"…","pid":N}} */
struct hvt_msg_attach {
	uint32_t protocol;
	enum hvt_mode mode;
	int32_t cpu; /* host CPU for the VMM's harvest thread; -1: the VMM's default_cpu (unpinned if none) */
	char tracer[64];
	int32_t tracer_pid;
};

/* {"type":"attached","mode":"…","cpu":N,"generation":G,"t_armed_ns":T,"bitmap_bytes":B}
 * fds[0]: dirty-log, dirty-ring: the memfd (at least HVT_BITMAP_HEADER_BYTES + bitmap_bytes long; map it
 * read-only, MAP_SHARED); ad: the A/D fd from KVM_CREATE_AD_FD (bitmap_bytes is 0). */
struct hvt_msg_attached {
	enum hvt_mode mode;
	int32_t cpu;         /* CPU the harvest thread runs on, -1 if unpinned */
	uint64_t generation; /* layout generation in force */
	uint64_t t_armed_ns; /* tracking armed: start of the first interval */
	uint64_t bitmap_bytes;
};

/* {"type":"layout","layout":{…},"bitmap_bytes":B}; fds[0]: dirty-log: the new memfd; ad, or before
 * "attached": none. A layout message carries an fd exactly when bitmap_bytes > 0. */
struct hvt_msg_layout {
	struct hvt_layout layout;
	uint64_t bitmap_bytes;
};

/* {"type":"harvest","seq":N}: seq starts at 1 and grows by one per request. */
struct hvt_msg_harvest {
	uint64_t seq;
};

/* {"type":"harvested","seq":N,"generation":G,"t_start_ns":…,"t_end_ns":…,"t_done_ns":…,
 *  "dirty_pages":N,"lost_pages":N,"final":false[,"listed":true][,"ring_full":N]}
 * Always the answer to the "harvest" with the same seq; "final": true when the guest has stopped (the answer
 * after the VMM's bye). */
struct hvt_msg_harvested {
	uint64_t seq;
	uint64_t generation;
	uint64_t t_start_ns;
	uint64_t t_end_ns;
	uint64_t t_done_ns;
	uint64_t dirty_pages; /* pages set in the shared bitmaps */
	uint64_t lost_pages;  /* written pages whose slot vanished in a layout change (see above) */
	bool final;
	/* dirty-ring only (optional members, absent = false / 0): */
	bool listed;        /* the memfd holds a page list of dirty_pages entries, not the bitmaps */
	uint64_t ring_full; /* the interval's KVM_EXIT_DIRTY_RING_FULL exits, reaped by the vCPU thread */
};

/* {"type":"bye","reason":"…"} */
struct hvt_msg_bye {
	char reason[128];
};

/* {"type":"error","code":"version|mode|cpu|busy|protocol|permission|internal","message":"…"} */
struct hvt_msg_error {
	char code[16];
	char message[256];
};

struct hvt_msg {
	enum hvt_msg_type type;
	union {
		struct hvt_msg_hello hello;
		struct hvt_msg_attach attach;
		struct hvt_msg_attached attached;
		struct hvt_msg_layout layout;
		struct hvt_msg_harvest harvest;
		struct hvt_msg_harvested harvested;
		struct hvt_msg_bye bye;
		struct hvt_msg_error error;
	} u;
	int nfds;
	int fds[HVT_ATTACH_MAX_FDS]; /* owned by the message until taken (set to -1) */
};

/* Frees the layout (hello, layout) and closes fds still owned. Safe on a zeroed message. */
void hvt_msg_fini(struct hvt_msg *m);

/*
 * Sends one message with its fds. 0, or -EPIPE (peer gone), -EMSGSIZE, -errno; err says what failed.
 */
int hvt_msg_send(int sock, const struct hvt_msg *m, struct hvt_err *err);

/*
 * Receives one message, waiting up to timeout_ms (-1: forever; 0: only what has already arrived). 0, or
 *   -EPIPE      the peer closed the connection at a frame boundary,
 *   -ECONNRESET the peer vanished in the middle of a frame,
 *   -ETIMEDOUT  nothing complete arrived in time,
 *   -EPROTO     not this protocol: bad length, not JSON, unknown type, missing or bad fields, stray fds,
 *   -EINTR      a signal arrived before anything of a frame was read.
 * On error nothing is left in m (fds received are closed).
 */
int hvt_msg_recv(int sock, struct hvt_msg *m, int timeout_ms, struct hvt_err *err);

/* Checks SO_PEERCRED (uid 0 or ours); fills pid/uid if not NULL. -EACCES names the peer's uid and pid. */
int hvt_attach_check_peer(int sock, pid_t *pid, uid_t *uid, struct hvt_err *err);

/* Tracer side: connects to a VMM socket path. Returns the fd or -errno with the path in the message. */
int hvt_attach_connect(const char *path, struct hvt_err *err);

/* VMM side: creates the listening socket at path with mode HVT_ATTACH_SOCKET_MODE (replacing a stale
 * socket file, never another kind of file). Returns the fd or -errno. */
int hvt_attach_listen(const char *path, struct hvt_err *err);

#endif
