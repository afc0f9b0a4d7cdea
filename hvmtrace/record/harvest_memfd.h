/* SPDX-License-Identifier: MIT */
/*
 * What modes dirty-log and dirty-ring share (harvest_dirty_log.c): the VMM's harvest thread writes the
 * interval into the shared memfd when asked (attach.h); the tracer asks, waits, and copies it out under the
 * memfd's sequence word. Only the copy differs: a mode gives its load function at attach.
 */
#ifndef HVT_RECORD_HARVEST_MEMFD_H
#define HVT_RECORD_HARVEST_MEMFD_H

#include <stdint.h>

struct hvt_err;
struct hvt_interval;
struct hvt_msg;
struct hvt_msg_harvested;
struct session;

/* One copy out of the memfd, run under bus_guard between the two reads of the sequence word. */
struct memfd_copy {
	const struct session *s;
	const uint8_t *area; /* after the header: bitmap_bytes of the layout in force */
	const struct hvt_msg_harvested *h;
	struct hvt_interval *iv; /* initialised, empty */
	char bad[160];           /* set by the load when what it read is not what the protocol allows */
};
typedef void (*memfd_load_fn)(struct memfd_copy *c);

/* dirty-log's load: the bitmaps, one per slot in layout order. */
void memfd_load_bitmaps(struct memfd_copy *c);

int memfd_attach(struct session *s, struct hvt_msg *attached, memfd_load_fn load, struct hvt_err *err);
int memfd_layout(struct session *s, struct hvt_msg *layout, struct hvt_err *err);
int memfd_harvest(struct session *s, struct hvt_interval *iv, int timeout_ms, struct hvt_err *err);
int memfd_after_end(struct session *s, struct hvt_interval *iv, struct hvt_err *err);
void memfd_close(struct session *s);
void memfd_describe(const struct session *s, char *buf, size_t len);

#endif
