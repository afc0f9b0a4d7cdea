/* SPDX-License-Identifier: MIT */
/*
 * Splitting a stream of owners snapshots from a guest (a virtio-serial port) into frames: a 40-byte header
 * whose magic starts it, and body_bytes after it. Every byte is hostile: bytes before a magic are skipped,
 * a header that breaks the format's first rules (version, page size, owner count, a body beyond the bound
 * given) is refused as soon as its 40 bytes are there, without waiting for the body it claims, and after any
 * refusal the splitter resynchronises on the next magic after the refused one. Memory: one buffer of the
 * largest frame allowed, whatever the stream holds.
 */
#ifndef HVT_ATTRIBUTE_OWNERS_STREAM_H
#define HVT_ATTRIBUTE_OWNERS_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct owners_stream {
	uint8_t *buf;
	size_t start, len, cap; /* the bytes not yet split: buf[start, len); cap = the largest frame */
	uint64_t max_body;
	uint64_t frames;  /* headers found so far: the number of the one being split, from 1 */
	uint64_t skipped; /* bytes skipped looking for a magic */
};

/* The buffer for frames up to HVT_OWN_HEADER_BYTES + max_body; 0 or -ENOMEM. */
int owners_stream_init(struct owners_stream *st, uint64_t max_body);
void owners_stream_fini(struct owners_stream *st);

/* Where to put bytes read from the stream (*room of them, at least 1), then owners_stream_fill with how many
 * were put there. */
uint8_t *owners_stream_room(struct owners_stream *st, size_t *room);
void owners_stream_fill(struct owners_stream *st, size_t n);

enum owners_split {
	OWNERS_MORE,    /* no whole frame yet: read more */
	OWNERS_FRAME,   /* *frame, *len: a whole frame; owners_stream_done says whether it was taken */
	OWNERS_REFUSED, /* a header broke a rule (why says which); the splitter has moved past its magic */
};

/* The next frame, refusal, or the need for more bytes. Frame and refusal are number st->frames. */
enum owners_split owners_stream_next(struct owners_stream *st, const uint8_t **frame, size_t *len, char *why,
				     size_t whylen);

/* After OWNERS_FRAME: taken (its bytes are dropped) or refused by the caller (the splitter resynchronises on
 * the next magic after its first byte). */
void owners_stream_done(struct owners_stream *st, bool taken);

#endif
