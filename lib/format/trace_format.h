/* SPDX-License-Identifier: MIT */
/*
 * Internal to libhvmtrace: the on-disk layout of .hvt files (docs/formats.md, "Trace file (.hvt)"), shared
 * by the writer, the reader and the interval payload code. Every integer is little-endian with the width
 * given here; nothing is read by casting a struct over file bytes.
 */
#ifndef HVMTRACE_LIB_TRACE_FORMAT_H
#define HVMTRACE_LIB_TRACE_FORMAT_H

#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/crc.h>

#include "hvmtrace/trace.h"

/* File header: magic[8], u32 version, u32 flags. */
#define HVT_FILE_MAGIC       "HVMTRACE"
#define HVT_FILE_HEADER_SIZE 16
/* Flag bits 0-15 change how the file must be read: a reader refuses any it does not know. Bits 16-31 are
 * informational and ignored. Version 1 defines none. */
#define HVT_FILE_FLAGS_MUST_KNOW 0x0000ffffu

/* Record header: u32 type, u32 payload length, u32 CRC32C, u32 reserved (0); then the payload, then zero
 * padding to the next multiple of 8. The CRC covers the header with its crc field zeroed, then the payload.
 */
#define HVT_REC_HEADER_SIZE 16
#define HVT_REC_CRC_OFFSET  8
#define HVT_REC_ALIGN       8
/* Linux moves at most 0x7ffff000 bytes in one write(); a record must fit one. */
#define HVT_REC_MAX_PAYLOAD 0x7ff00000u

enum hvt_rec_type {
	HVT_REC_META = 1,
	HVT_REC_LAYOUT = 2,
	HVT_REC_INTERVAL = 3,
	HVT_REC_INDEX = 4,
	HVT_REC_OWNERS = 0x8001, /* an owners snapshot (optional: see HVT_REC_OPTIONAL) */
};

/* Types from here up are optional: a reader that does not know one checks its frame and CRC and reads past
 * it; a bad one ends the walk like any bad record. Readers before this rule stopped at them. */
#define HVT_REC_OPTIONAL 0x8000u

/* OWNERS payload: u64 at_ns, u64 after_seq, then the snapshot's bytes as the guest agent sent them. */
#define HVT_OWNERS_FIXED_SIZE 16

/* INTERVAL payload: fixed part, then channels, then one block per slot (docs/formats.md). The fixed part
 * is 72 bytes, followed by u64 written_not_accessed when flag WNA_COUNTED (bit 5) is set, then u64
 * tracer_cpu_ns when flag TRACER_CPU (bit 6) is set, then u64 ring_full when flag RING_FULL (bit 9) is set.
 */
#define HVT_IV_FIXED_SIZE   72
#define HVT_IV_WNA_SIZE     8
#define HVT_IV_CPU_SIZE     8
#define HVT_IV_RING_SIZE    8
#define HVT_IV_CHANNEL_SIZE 24
#define HVT_IV_SET_HDR_SIZE 16
#define HVT_IV_KNOWN_FLAGS  0x3ffu
#define HVT_IV_SET_FLAGS    0x3u /* HVT_IV_WRITTEN | HVT_IV_ACCESSED: the sets a slot block holds */

/* Where tracer_cpu_ns lies in the fixed part of an interval with these flags. */
static inline size_t hvt_iv_cpu_offset(uint32_t flags)
{
	return HVT_IV_FIXED_SIZE + ((flags & HVT_IV_WNA_COUNTED) ? HVT_IV_WNA_SIZE : 0);
}

/* Where ring_full lies in the fixed part of an interval with these flags. */
static inline size_t hvt_iv_ring_offset(uint32_t flags)
{
	return hvt_iv_cpu_offset(flags) + ((flags & HVT_IV_TRACER_CPU) ? HVT_IV_CPU_SIZE : 0);
}

/* The size of the fixed part of an interval with these flags. */
static inline size_t hvt_iv_fixed_size(uint32_t flags)
{
	return hvt_iv_ring_offset(flags) + ((flags & HVT_IV_RING_FULL) ? HVT_IV_RING_SIZE : 0);
}

/* INDEX payload: u64 nlayouts, u64 nintervals, then the entries. */
#define HVT_INDEX_HEADER_SIZE   16
#define HVT_INDEX_LAYOUT_SIZE   16 /* u64 offset, u64 generation */
#define HVT_INDEX_INTERVAL_SIZE 32 /* u64 offset, u64 seq, u64 generation, u64 t_start_ns */

/* Trailer: u64 INDEX record offset, u64 interval count, u32 CRC32C, u32 reserved, magic[8]. The CRC covers
 * the 32 bytes with the crc field zeroed. */
#define HVT_TRAILER_SIZE       32
#define HVT_TRAILER_CRC_OFFSET 16
#define HVT_TRAILER_MAGIC      "HVTEND\0\0"

static inline uint64_t hvt_rec_padded(uint64_t len)
{
	return (len + HVT_REC_ALIGN - 1) & ~(uint64_t)(HVT_REC_ALIGN - 1);
}

/* ---- little-endian fields ---- */

static inline void hvt_put_le32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static inline void hvt_put_le64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static inline uint32_t hvt_get_le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline uint64_t hvt_get_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

/* A growing byte buffer, for assembling a record in memory before its single write(). */
struct hvt_buf {
	uint8_t *p;
	size_t len, cap;
};

/* Makes room for n more bytes, exactly (touching none of them), unless there is room already. 0 or -ENOMEM.
 */
static inline int hvt_buf_reserve(struct hvt_buf *b, size_t n)
{
	uint8_t *p;

	if (b->cap - b->len >= n)
		return 0;
	if (n > SIZE_MAX / 2 - b->len)
		return -ENOMEM;
	p = realloc(b->p, b->len + n);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = b->len + n;
	return 0;
}

/* Appends n zero bytes and returns them, or NULL when memory runs out (the buffer stays valid). */
static inline uint8_t *hvt_buf_append(struct hvt_buf *b, size_t n)
{
	uint8_t *p;

	if (n > SIZE_MAX / 2 - b->len)
		return NULL;
	if (b->cap - b->len < n) {
		size_t cap = b->cap ? b->cap : 4096;

		while (cap - b->len < n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return NULL;
		b->p = p;
		b->cap = cap;
	}
	p = b->p + b->len;
	memset(p, 0, n);
	b->len += n;
	return p;
}

/* A bounded reader over a payload: reads past the end set `bad` and yield zeros, so parsers check once. */
struct hvt_cursor {
	const uint8_t *p;
	size_t left;
	bool bad;
};

static inline const uint8_t *hvt_cursor_take(struct hvt_cursor *c, size_t n)
{
	const uint8_t *p = c->p;

	if (c->bad || n > c->left) {
		c->bad = true;
		return NULL;
	}
	c->p += n;
	c->left -= n;
	return p;
}

static inline uint32_t hvt_cursor_u32(struct hvt_cursor *c)
{
	const uint8_t *p = hvt_cursor_take(c, 4);

	return p ? hvt_get_le32(p) : 0;
}

static inline uint64_t hvt_cursor_u64(struct hvt_cursor *c)
{
	const uint8_t *p = hvt_cursor_take(c, 8);

	return p ? hvt_get_le64(p) : 0;
}

/* ---- CRC32C (Castagnoli), as in iSCSI, ext4 and btrfs ---- */

/*
 * Continues a CRC32C over more bytes: start with crc = 0, pass the result on. ISA-L's crc32_iscsi takes and
 * returns the register without the final inversions of the standard, and an int length, hence the wrapper.
 */
static inline uint32_t hvt_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	unsigned int reg = ~crc;

	while (len) {
		int n = len > (size_t)INT_MAX ? INT_MAX : (int)len;

		reg = crc32_iscsi((unsigned char *)(uintptr_t)p, n, reg);
		p += n;
		len -= (size_t)n;
	}
	return ~reg;
}

/* The record CRC: the 16-byte header with its crc field taken as zero, then the payload. */
static inline uint32_t hvt_rec_crc(const uint8_t *hdr, const void *payload, size_t len)
{
	uint8_t h[HVT_REC_HEADER_SIZE];

	memcpy(h, hdr, sizeof(h));
	memset(h + HVT_REC_CRC_OFFSET, 0, 4);
	return hvt_crc32c(hvt_crc32c(0, h, sizeof(h)), payload, len);
}

/* ---- INTERVAL payload (lib/format/trace_interval.c, trace_interval_decode.c) ---- */

/*
 * The most bytes iv's payload can take, its record's padding included: its sets at the worst case of the
 * writer's codec choice (hvt_pageset_encode_auto_bound). Never more than a record can hold: a larger payload
 * fails as it is encoded, not as it is reserved.
 */
size_t hvt_interval_bound(const struct hvt_interval *iv);

/* Appends the payload of iv, an interval of layout l, to b, whose room it first makes hvt_interval_bound. The
 * sets are encoded straight into that room, never copied. -EINVAL (with a message) if iv does not fit l. */
int hvt_interval_encode(const struct hvt_interval *iv, const struct hvt_layout *l, struct hvt_buf *b,
			struct hvt_err *err);

/* The fixed fields every reader checks before decoding the sets. */
struct hvt_interval_head {
	uint64_t seq;
	uint64_t t_start_ns;
	uint64_t generation;
	uint32_t nslots;
};

int hvt_interval_parse_head(const uint8_t *payload, size_t len, struct hvt_interval_head *h,
			    struct hvt_err *err);

/* Decodes a payload for layout l into iv (initialised here; finalised again on error): the runs of
 * hvt_iv_runs_decode (trace_decode.h), set in bitmaps. */
int hvt_interval_decode(struct hvt_interval *iv, const struct hvt_layout *l, const uint8_t *payload,
			size_t len, struct hvt_err *err);

#endif
