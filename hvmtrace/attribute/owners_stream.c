// SPDX-License-Identifier: MIT
/* The owners stream splitter (owners_stream.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute/owners_stream.h"
#include "hvmtrace/owners_format.h"

#define MAGIC_LEN 8

static uint64_t le(const uint8_t *p, size_t bytes)
{
	uint64_t v = 0;

	for (size_t i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int owners_stream_init(struct owners_stream *st, uint64_t max_body)
{
	memset(st, 0, sizeof(*st));
	st->max_body = max_body < HVT_OWN_MAX_BODY ? max_body : HVT_OWN_MAX_BODY;
	st->cap = HVT_OWN_HEADER_BYTES + (size_t)st->max_body;
	st->buf = malloc(st->cap);
	return st->buf ? 0 : -ENOMEM;
}

void owners_stream_fini(struct owners_stream *st)
{
	free(st->buf);
	memset(st, 0, sizeof(*st));
}

uint8_t *owners_stream_room(struct owners_stream *st, size_t *room)
{
	if (st->len == st->cap && st->start) { /* the split bytes go; what is left moves to the front */
		memmove(st->buf, st->buf + st->start, st->len - st->start);
		st->len -= st->start;
		st->start = 0;
	}
	*room = st->cap - st->len;
	return st->buf + st->len;
}

void owners_stream_fill(struct owners_stream *st, size_t n)
{
	st->len += n;
}

/* Skips to the first magic in the bytes there are, keeping a tail that may be the start of one. True when
 * buf[start] begins a whole magic. */
static bool seek_magic(struct owners_stream *st)
{
	const uint8_t *p = st->buf + st->start;
	size_t n = st->len - st->start;
	const uint8_t *m = n >= MAGIC_LEN ? memmem(p, n, HVT_OWN_MAGIC, MAGIC_LEN) : NULL;
	size_t skip;

	if (m) {
		skip = (size_t)(m - p);
	} else { /* keep the longest tail that is a prefix of the magic */
		size_t keep = n < MAGIC_LEN - 1 ? n : MAGIC_LEN - 1;

		while (keep && memcmp(p + n - keep, HVT_OWN_MAGIC, keep))
			keep--;
		skip = n - keep;
	}
	st->start += skip;
	st->skipped += skip;
	if (st->start == st->len)
		st->start = st->len = 0;
	return m != NULL;
}

/* The header's rules that need nothing but its 40 bytes; 0 or why not in why. */
static int check_header(const struct owners_stream *st, const uint8_t *h, char *why, size_t whylen)
{
	uint64_t version = le(h + 8, 2), flags = le(h + 10, 2), page = le(h + 12, 4), owners = le(h + 16, 4);
	uint64_t reserved = le(h + 20, 4), body = le(h + 32, 8);

	if (version != HVT_OWN_VERSION)
		snprintf(why, whylen, "version %" PRIu64 " (this reader knows %d)", version, HVT_OWN_VERSION);
	else if ((flags & ~(uint64_t)HVT_OWN_TRUNCATED) || reserved)
		snprintf(why, whylen, "unknown flags %#" PRIx64 " or reserved field %" PRIu64, flags,
			 reserved);
	else if (page < HVT_OWN_MIN_PAGE || page > HVT_OWN_MAX_PAGE || (page & (page - 1)))
		snprintf(why, whylen, "page size %" PRIu64 " (a power of two, %u to %u)", page,
			 HVT_OWN_MIN_PAGE, HVT_OWN_MAX_PAGE);
	else if (body > st->max_body)
		snprintf(why, whylen, "body_bytes %" PRIu64 ", beyond the %" PRIu64 " allowed", body,
			 st->max_body);
	else if (owners > HVT_OWN_MAX_OWNERS || owners * HVT_OWN_OWNER_BYTES > body)
		snprintf(why, whylen, "%" PRIu64 " owners in %" PRIu64 " bytes (%d bytes each, limit %u)",
			 owners, body, HVT_OWN_OWNER_BYTES, HVT_OWN_MAX_OWNERS);
	else
		return 0;
	return -EINVAL;
}

enum owners_split owners_stream_next(struct owners_stream *st, const uint8_t **frame, size_t *len, char *why,
				     size_t whylen)
{
	const uint8_t *h;
	uint64_t body;

	if (!seek_magic(st) || st->len - st->start < HVT_OWN_HEADER_BYTES)
		return OWNERS_MORE;
	h = st->buf + st->start;
	body = le(h + 32, 8);
	if (check_header(st, h, why, whylen)) {
		st->frames++;
		owners_stream_done(st, false);
		return OWNERS_REFUSED;
	}
	if (st->len - st->start < HVT_OWN_HEADER_BYTES + body)
		return OWNERS_MORE;
	st->frames++;
	*frame = h;
	*len = HVT_OWN_HEADER_BYTES + (size_t)body;
	return OWNERS_FRAME;
}

void owners_stream_done(struct owners_stream *st, bool taken)
{
	size_t drop = 1; /* refused: the next magic may begin inside it */

	if (taken)
		drop = HVT_OWN_HEADER_BYTES + (size_t)le(st->buf + st->start + 32, 8);
	st->start += drop;
	if (st->start == st->len)
		st->start = st->len = 0;
}
