// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the owners stream splitter (hvmtrace/attribute/owners_stream.h), which splits the bytes
 * of a guest's virtio-serial port into snapshots. The first byte of the input chooses the bound on a body and
 * the size of the reads; the rest is the stream, fed in reads of that size. What the splitter gives must
 * hold what record relies on: a frame begins with the magic and is exactly its header and body_bytes, within
 * the bound and inside the bytes fed; a refusal says why; every byte fed is split, skipped or still held, and
 * the buffer never holds more than one frame at the bound.
 */
#include <string.h>

#include "fuzz_common.h"
#include "hvmtrace/owners_format.h"
#include "../../hvmtrace/attribute/owners_stream.h"

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct owners_stream st;
	uint64_t max_body;
	size_t chunk, at = 1;

	if (!size)
		return 0;
	max_body = 20u << (data[0] & 15); /* 20 bytes to 640 KiB */
	chunk = 1 + (size_t)(data[0] >> 4) * 7;
	if (owners_stream_init(&st, max_body))
		abort();
	while (at < size) {
		size_t room, n;
		uint8_t *into = owners_stream_room(&st, &room);

		if (!room) /* a whole frame must have been taken before the buffer fills */
			abort();
		n = size - at < chunk ? size - at : chunk;
		n = n < room ? n : room;
		memcpy(into, data + at, n);
		owners_stream_fill(&st, n);
		at += n;
		for (;;) {
			const uint8_t *frame;
			size_t len;
			char why[300] = "";
			enum owners_split sp = owners_stream_next(&st, &frame, &len, why, sizeof(why));

			if (st.len > st.cap || st.start > st.len)
				abort();
			if (sp == OWNERS_MORE)
				break;
			if (sp == OWNERS_REFUSED) {
				if (!why[0])
					abort();
				continue;
			}
			if (len < HVT_OWN_HEADER_BYTES || memcmp(frame, HVT_OWN_MAGIC, 8) ||
			    le64(frame + 32) != len - HVT_OWN_HEADER_BYTES ||
			    len - HVT_OWN_HEADER_BYTES > max_body || frame < st.buf ||
			    frame + len > st.buf + st.len)
				abort();
			owners_stream_done(&st, frame[8] & 1); /* taken or refused, as the input says */
		}
	}
	owners_stream_fini(&st);
	return 0;
}
