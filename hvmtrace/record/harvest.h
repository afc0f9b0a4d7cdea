/* SPDX-License-Identifier: MIT */
/*
 * Harvest modes: one interval's page sets from the VMM, whatever the mode. Each mode is one harvest_*.c
 * file that defines its `struct harvester`, and one row of the table in harvest.c. A mode owns what the
 * conversation hands it for its own use (the fds of "attached" and "layout", the messages only it
 * expects) and keeps it in the session's harvester_state, which no other file reads.
 */
#ifndef HVT_RECORD_HARVEST_H
#define HVT_RECORD_HARVEST_H

#include <stddef.h>
#include <stdint.h>

#include "hvmtrace/options.h" /* struct hvt_opt_choice, of harvester_mode_choices */
#include "hvmtrace/tracking_mode.h"

struct hvt_err;
struct hvt_interval;
struct hvt_msg;
struct session;

struct harvester {
	enum hvt_mode mode;
	unsigned sets; /* HVT_IV_WRITTEN, HVT_IV_ACCESSED: what its intervals hold */
	/*
	 * On "attached" (already checked for its mode, generation and one fd): sets up the mode's state in
	 * s->harvester_state, taking the fds it keeps out of m (m->fds[i] = -1). On failure it leaves no
	 * state and takes nothing.
	 */
	int (*attach)(struct session *s, struct hvt_msg *attached, struct hvt_err *err);
	/* Optional, right after attach: opens the first interval (may move s->t_armed_ns to when it did). */
	int (*start)(struct session *s, struct hvt_err *err);
	/*
	 * Optional: a newer layout is now s->layout (the session checked its generation); takes what the
	 * message brings for the mode, as attach does. On failure the session keeps the old layout.
	 */
	int (*layout)(struct session *s, struct hvt_msg *layout, struct hvt_err *err);
	/*
	 * Harvests the interval that ends now into iv (initialised here for the session's current layout,
	 * with the sets the mode provides). timeout_ms bounds the wait for the VMM. Sets HVT_IV_FINAL when
	 * the VMM says this is its last interval.
	 */
	int (*harvest)(struct session *s, struct hvt_interval *iv, int timeout_ms, struct hvt_err *err);
	/*
	 * Optional: a message the VMM sent between deadlines that the session does not handle itself (it
	 * applies layouts, and ends on bye and error). Returns 1 when the message brought an interval (into
	 * iv, as harvest does), 0 when the mode expects no such message (the caller reports it), or a
	 * negative errno with err set.
	 */
	int (*vmm_message)(struct session *s, const struct hvt_msg *m, struct hvt_interval *iv,
			   struct hvt_err *err);
	/*
	 * Optional: the VMM ended the conversation (bye or EOF). Returns 1 when the mode could still take
	 * the guest's last interval, which no message brought (into iv, as harvest does, with HVT_IV_FINAL
	 * set only if it is the guest's last: record says so when a trace ends without one), 0 when there
	 * is none to take, or a negative errno with err set.
	 */
	int (*after_end)(struct session *s, struct hvt_interval *iv, struct hvt_err *err);
	/* Releases the state attach set up (called once, by session_close, while the socket is open). */
	void (*close)(struct session *s);
	/* What harvests the intervals, for the line record prints once attached. */
	void (*describe)(const struct session *s, char *buf, size_t len);
};

/* The harvester of a mode; NULL when this hvmtrace does not implement it. */
const struct harvester *harvester_for_mode(enum hvt_mode mode);

/* The mode `--mode auto` takes when the VMM offers `offered` (HVT_MODE_BIT()s). */
enum hvt_mode harvester_auto_mode(uint32_t offered);

/* The names --mode accepts: "auto" (HVT_MODE_NONE) and every mode of the table, ending with {NULL}. */
const struct hvt_opt_choice *harvester_mode_choices(void);

/* Writes the modes this hvmtrace implements into buf, in the protocol's order: "dirty-log and ad". */
void harvester_list_modes(char *buf, size_t len);

#endif
