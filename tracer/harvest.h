/* SPDX-License-Identifier: MIT */
/* Harvest backends: one interval's page sets from the VMM, whatever the mode. */
#ifndef TRACER_HARVEST_H
#define TRACER_HARVEST_H

#include "hvmtrace/trace.h"
#include "session.h"

struct harvester {
	const char *name;
	enum hvt_mode mode;
	/*
	 * Harvests the interval that ends now into iv (initialised here for the session's current layout,
	 * with the sets the mode provides). timeout_ms bounds the wait for the VMM. Sets HVT_IV_FINAL when
	 * the VMM says this is its last interval.
	 */
	int (*harvest)(struct session *s, struct hvt_interval *iv, int timeout_ms, struct hvt_err *err);
	/* Optional, right after attach: opens the first interval (may move s->t_armed_ns to when it did). */
	int (*start)(struct session *s, struct hvt_err *err);
	/* Optional: after the VMM ended the conversation (bye or EOF), whether harvest() can still take the
	 * guest's last interval, which no "harvested" brought (ad mode: the VM still exists). */
	bool (*can_harvest_after_end)(const struct session *s);
};

extern const struct harvester harvester_dirty_log;
extern const struct harvester harvester_ad;

/* Fills iv from a "harvested" message in dirty-log mode (also used for the VMM's unsolicited final one). */
int dirty_log_collect(struct session *s, const struct hvt_msg_harvested *h, struct hvt_interval *iv,
		      struct hvt_err *err);

const struct harvester *harvester_for_mode(enum hvt_mode mode);

#endif
