/* SPDX-License-Identifier: MIT */
/*
 * The guest agent's port on the host (record --owners-port): a unix stream socket QEMU's chardev serves for
 * the guest's virtio-serial port org.hvmtrace.owners.0. Every byte is hostile. The peer must be the VMM
 * whose memory is traced (SO_PEERCRED); a snapshot must fit the bound given, pass every rule of the snapshot
 * reader and name only pages inside the guest's memory (the layout's slots), or it is refused with one line
 * naming the port, the snapshot and the rule, and the stream resynchronises on the next magic. At most one
 * snapshot is stored per interval, and a bounded number of bytes and snapshots is read per interval: past
 * them the port is not read until the next interval, and the guest waits on virtio-serial's backpressure.
 * A port that cannot be reached, or closes, is a warning: the trace goes on.
 */
#ifndef HVT_ATTRIBUTE_OWNERS_PORT_H
#define HVT_ATTRIBUTE_OWNERS_PORT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "attribute/owners_stream.h"
#include "hvmtrace/error.h"
#include "hvmtrace/layout.h"

/* Stores a snapshot that passed every check, received complete at at_ns; 0 or -errno (then recording ends
 * as for any output that fails: the trace cannot be written). */
typedef int (*owners_store_fn)(void *ctx, uint64_t at_ns, const uint8_t *snap, size_t len,
			       struct hvt_err *err);

struct owners_port {
	const char *path;
	pid_t vmm_pid; /* the only peer taken */
	int fd;        /* -1: not connected */
	struct owners_stream st;
	owners_store_fn store;
	void *ctx;
	uint64_t next_connect_ns; /* when to try again, while not connected */
	uint64_t last_read_ns;    /* when the last bytes came: a waiting snapshot was complete then */
	bool refused_peer, warned_unreachable, ever_connected;
	/* this interval */
	uint64_t read_now;
	unsigned checked_now;
	bool stored_now;
	/* the run */
	uint64_t stored, refused, dropped, bytes_read, stored_bytes, closes;
	unsigned logged;
};

/* The per-interval bounds. */
#define OWNERS_PORT_CHECKS_PER_INTERVAL 4  /* whole snapshots checked against every rule */
#define OWNERS_PORT_REFUSALS_LOGGED     20 /* one line each; later ones are counted only */

/* Resident memory the port can take with snapshots of up to max_bytes (header included): its buffer, the
 * reader's checks of one, and the trace record that stores it. */
uint64_t owners_port_memory(uint64_t max_bytes);

/* Sets the port up and tries to connect (a failure is a warning, and connecting is tried again once a
 * second). 0, or -ENOMEM. */
int owners_port_open(struct owners_port *p, const char *path, pid_t vmm_pid, uint64_t max_bytes,
		     owners_store_fn store, void *ctx);
void owners_port_close(struct owners_port *p);

/* The fd to poll for reading now, or -1: not connected, or this interval's bytes, checks or snapshot are
 * spent, or the next harvest (at deadline) is less than a quarter of an interval away. */
int owners_port_pollfd(struct owners_port *p, uint64_t now_ns, uint64_t deadline_ns, uint64_t interval_ns);

/* The fd is readable: one read, then the snapshots it completes, checked against layout l. 0, or the store's
 * error. */
int owners_port_read(struct owners_port *p, const struct hvt_layout *l, struct hvt_err *err);

/* An interval was written: this interval's bounds start again, and a snapshot waiting in the buffer is
 * taken. 0, or the store's error. */
int owners_port_next_interval(struct owners_port *p, const struct hvt_layout *l, struct hvt_err *err);

#endif
