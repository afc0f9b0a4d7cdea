/* SPDX-License-Identifier: MIT */
/*
 * The channel map (chanmap.json, docs/architecture.md §3.6; schema in docs/chanmap.md): which host-physical
 * ranges belong to which memory channel, as found by `chanmap probe`. Read by `chanmap show/reserve/verify`,
 * the QEMU devmem backend (channel ids → extents) and `hvmtrace record` (extents → the channels to count).
 *
 * Ranges are host-physical byte ranges; a channel's ranges are sorted and never overlap another channel's
 * ranges or an interleaved region. Addresses are written as "0x…" strings in the file.
 */
#ifndef HVMTRACE_CHANMAP_H
#define HVMTRACE_CHANMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h" /* HVT_CHANNEL_MAX */

struct hvt_err;
struct json_object;

#define HVT_CHANMAP_SCHEMA    "hvmtrace-chanmap"
#define HVT_CHANMAP_VERSION   1
#define HVT_CHANMAP_GRANULE   (64ull << 20) /* SKX decode granule: channel boundaries are 64 MiB aligned */
#define HVT_CHANMAP_MAX_BYTES (64u << 20)   /* the largest chanmap.json read: far above any real map's size */

struct hvt_range {
	uint64_t start, size;
};

struct hvt_chanmap_channel {
	char id[HVT_CHANNEL_MAX]; /* "s0.mc1.ch0" */
	unsigned socket, controller, channel;
	char pmu[64];  /* "uncore_imc_3" */
	bool inferred; /* the PMU's box → (controller, channel) numbering is an inference, not kernel fact */
	size_t nranges; /* 0: unpopulated, or none of its memory was touchable when probed */
	struct hvt_range *ranges;
	/* Per range, the share (0-1) of the probe's measurements there that showed exactly this channel;
	 * NULL when not recorded (maps from before the probe recorded it), a range's entry < 0 likewise. */
	double *confidence;
};

/* A range whose lines are spread over several channels (BIOS channel/IMC/socket interleave). */
struct hvt_chanmap_interleave {
	struct hvt_range range;
	size_t nchannels;
	unsigned *channels; /* indices into hvt_chanmap.channels */
	double confidence;  /* as a channel range's; < 0: not recorded */
};

/* How the map was made (the probe's parameters and effort). */
struct hvt_chanmap_probe_info {
	char memory[32]; /* where touchable memory came from: "devmem", "hugetlb", "model" */
	uint64_t window_ns, sample_bytes, step_bytes, granule_bytes;
	unsigned reps, calibration_windows;
	uint64_t windows;       /* measurement windows used in all */
	uint64_t probed_bytes;  /* touchable memory covered */
	double implied_seconds; /* windows × window length: the probe's time on hardware */
};

struct hvt_chanmap {
	char created[32]; /* UTC, ISO 8601 */
	char source[288]; /* "hardware", or "MODEL …" / "replay of …" for maps not measured on this host */
	struct {
		char hostname[256], kernel[128], machine_id[64];
	} host;
	struct {
		char vendor[16], name[128], generation[16];
		unsigned family, model;
	} cpu;
	unsigned sockets;
	size_t nchannels;
	struct hvt_chanmap_channel *channels;
	size_t ninterleaved;
	struct hvt_chanmap_interleave *interleaved;
	char advice[512]; /* what to change in the BIOS when interleaving was found, or "" */
	struct hvt_chanmap_probe_info probe;
};

void hvt_chanmap_init(struct hvt_chanmap *m);
void hvt_chanmap_free(struct hvt_chanmap *m);

/* Adds a channel (ranges empty); returns its index or -ENOMEM / -EINVAL (bad or duplicate id). */
int hvt_chanmap_add_channel(struct hvt_chanmap *m, const struct hvt_chanmap_channel *c, struct hvt_err *e);
/* Appends a range to channel ci, merging it with the channel's last range when adjacent. */
int hvt_chanmap_add_range(struct hvt_chanmap *m, size_t ci, uint64_t start, uint64_t size);
/* Records range ri of channel ci's confidence (0-1); after its ranges are added. -ENOMEM. */
int hvt_chanmap_set_confidence(struct hvt_chanmap *m, size_t ci, size_t ri, double confidence);
/* Range ri of channel ci's confidence, or < 0 when the map does not record it. */
double hvt_chanmap_confidence(const struct hvt_chanmap_channel *c, size_t ri);
/* Adds an interleaved region over the channel indices given; merges with the previous one when adjacent
 * and over the same channels. */
int hvt_chanmap_add_interleave(struct hvt_chanmap *m, uint64_t start, uint64_t size, const unsigned *channels,
			       size_t nchannels);

/* Checks the invariants (ids match socket/controller/channel, ranges page aligned, sorted, no overlap
 * anywhere, sockets cover every channel); the message names the channel and range. */
int hvt_chanmap_validate(const struct hvt_chanmap *m, struct hvt_err *e);

/* Parses and validates a chanmap.json text; `name` is used in messages. Unknown members are ignored,
 * a newer major version is refused. */
int hvt_chanmap_parse(const char *text, const char *name, struct hvt_chanmap *m, struct hvt_err *e);
/* Reads and parses a file; -EFBIG beyond HVT_CHANMAP_MAX_BYTES. */
int hvt_chanmap_read(const char *path, struct hvt_chanmap *m, struct hvt_err *e);
/* The JSON text (pretty printed, newline at the end); free() it. NULL on ENOMEM. */
char *hvt_chanmap_to_string(const struct hvt_chanmap *m);
/* Writes atomically (temporary file + rename). */
int hvt_chanmap_write(const struct hvt_chanmap *m, const char *path, struct hvt_err *e);

/* The map as a JSON object, and back (validated; `name` is used in messages): chanmap.json's document, also
 * embedded in the probe log's header. */
struct json_object *hvt_chanmap_to_json(const struct hvt_chanmap *m);
int hvt_chanmap_from_json(struct json_object *o, const char *name, struct hvt_chanmap *m, struct hvt_err *e);

/* How many channels (or the interleave list) differ between two maps; diff gets the first difference. */
int hvt_chanmap_compare(const struct hvt_chanmap *want, const struct hvt_chanmap *got, char *diff,
			size_t len);

/* The channel with this id, or -1. */
int hvt_chanmap_find(const struct hvt_chanmap *m, const char *id);
/* The channel whose ranges hold all of [start, start+size), or -ENOENT / -ERANGE (partly, or across
 * channels or an interleaved region), with a message naming the extent and what it overlaps. */
int hvt_chanmap_channel_of(const struct hvt_chanmap *m, uint64_t start, uint64_t size, struct hvt_err *e);

/* Whether an id is of the form s<socket>.mc<controller>.ch<channel>; fills the numbers. */
bool hvt_chanmap_parse_id(const char *id, unsigned *socket, unsigned *controller, unsigned *channel);

#endif
