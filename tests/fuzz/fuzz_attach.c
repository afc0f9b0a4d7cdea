// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the attach protocol as a tracer or a VMM receives it (hvt_msg_recv: framing, JSON,
 * every message's fields, fd rules), from a peer that sends anything.
 *
 * Input: byte 0 even: the rest is the byte stream as it arrives. Byte 0 odd: the rest, cut at NUL bytes,
 * is a series of frame payloads that the harness frames with their true lengths, so that the fuzzer works
 * on the messages. Every message received must be one that hvt_msg_send can send and hvt_msg_recv read
 * back as the same type.
 */
#include <sys/socket.h>

#include "fuzz_common.h"
#include "hvmtrace/attach.h"
#include "hvmtrace/error.h"

#define MAX_MESSAGES 64

static void put(int fd, const void *p, size_t n)
{
	if (n && write(fd, p, n) != (ssize_t)n)
		abort();
}

static void echo_back(const struct hvt_msg *m)
{
	struct hvt_err err = {{0}};
	struct hvt_msg back;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	if (hvt_msg_send(sv[0], m, &err) || hvt_msg_recv(sv[1], &back, 0, &err) || back.type != m->type) {
		fprintf(stderr, "a received %s message does not survive sending: %s\n",
			hvt_msg_type_name(m->type), err.msg);
		abort();
	}
	hvt_msg_fini(&back);
	close(sv[0]);
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hvt_err err = {{0}};
	uint8_t *stream;
	size_t len = 0;
	int sv[2];

	/* The stream goes into the socket with one write before anything is read, so it must fit the
	 * socket's buffer. */
	if (size == 0 || size > 32768)
		return 0;
	stream = malloc(size + 4 * FUZZ_MAX_FIELDS);
	if (!stream)
		abort();
	if (data[0] & 1) {
		struct fuzz_fields ff;

		fuzz_split(&ff, data + 1, size - 1);
		for (size_t i = 0; i < ff.n; i++) {
			uint32_t n = (uint32_t)strlen(ff.f[i]);

			stream[len++] = (uint8_t)n;
			stream[len++] = (uint8_t)(n >> 8);
			stream[len++] = (uint8_t)(n >> 16);
			stream[len++] = (uint8_t)(n >> 24);
			memcpy(stream + len, ff.f[i], n);
			len += n;
		}
		fuzz_fields_free(&ff);
	} else {
		memcpy(stream, data + 1, size - 1);
		len = size - 1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	put(sv[0], stream, len);
	free(stream);
	close(sv[0]);
	for (int i = 0; i < MAX_MESSAGES; i++) {
		struct hvt_msg m;

		if (hvt_msg_recv(sv[1], &m, 0, &err))
			break;
		if (m.nfds != 0)
			abort(); /* nothing here sends descriptors */
		echo_back(&m);
		hvt_msg_fini(&m);
	}
	close(sv[1]);
	return 0;
}
