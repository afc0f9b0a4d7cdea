// SPDX-License-Identifier: MIT
/*
 * attach_probe: a protocol-2 tracer of its own that says what a VMM answered, for the tests of a VMM's side
 * of the attach protocol (tests/e2e/qemu_attach_races.sh). It attaches in mode dirty-log and reads nothing
 * of the bitmaps; it prints one line per message it receives, in order.
 *   attach_probe SOCK race      asks for the next interval as soon as the last one is answered (back to back,
 *                               so a request is nearly always in flight when the guest stops), until the VMM
 *                               closes. Ends with "summary harvested=N nonfinal_after_bye=K final=F
 *                               final_after_bye=B end=eof|error|timeout".
 *   attach_probe SOCK bad-seq   asks for interval 1, then for interval 3 (out of order), and says whether
 *                               the VMM answered error and closed: "summary error=CODE closed=yes|no".
 * Exit 0 when it could talk to the VMM at all (the lines tell what it said), 1 otherwise.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hvmtrace/attach.h"
#include "hvmtrace/error.h"

#define ANSWER_MS 10000 /* a VMM that is alive answers within this */

static int attach(const char *path)
{
	struct hvt_err err = {{0}};
	struct hvt_msg m = {0};
	int sock = hvt_attach_connect(path, &err);

	if (sock < 0) {
		fprintf(stderr, "attach_probe: %s\n", err.msg);
		return -1;
	}
	if (hvt_msg_recv(sock, &m, ANSWER_MS, &err) || m.type != HVT_MSG_HELLO) {
		fprintf(stderr, "attach_probe: %s: no hello (%s)\n", path, err.msg);
		goto fail;
	}
	hvt_msg_fini(&m);
	m = (struct hvt_msg){.type = HVT_MSG_ATTACH};
	m.u.attach.protocol = HVT_ATTACH_PROTOCOL;
	m.u.attach.mode = HVT_MODE_DIRTY_LOG;
	m.u.attach.cpu = -1;
	m.u.attach.tracer_pid = getpid();
	snprintf(m.u.attach.tracer, sizeof(m.u.attach.tracer), "attach_probe");
	if (hvt_msg_send(sock, &m, &err))
		goto fail;
	for (;;) {
		if (hvt_msg_recv(sock, &m, ANSWER_MS, &err)) {
			fprintf(stderr, "attach_probe: %s: attaching: %s\n", path, err.msg);
			goto fail;
		}
		enum hvt_msg_type type = m.type;

		hvt_msg_fini(&m);
		if (type == HVT_MSG_ATTACHED)
			return sock;
		if (type != HVT_MSG_LAYOUT) {
			fprintf(stderr, "attach_probe: %s: expected attached, got %s\n", path,
				hvt_msg_type_name(type));
			goto fail;
		}
	}
fail:
	close(sock);
	return -1;
}

static int ask(int sock, uint64_t seq)
{
	struct hvt_msg m = {.type = HVT_MSG_HARVEST};
	struct hvt_err err = {{0}};

	m.u.harvest.seq = seq;
	return hvt_msg_send(sock, &m, &err);
}

/* Prints one received message; returns its type, or 0 at the end of the conversation (end says how). */
static int receive(int sock, struct hvt_msg *m, const char **end)
{
	struct hvt_err err = {{0}};
	int rc = hvt_msg_recv(sock, m, ANSWER_MS, &err);

	if (rc) {
		*end = rc == -EPIPE ? "eof" : rc == -ETIMEDOUT ? "timeout" : "error";
		printf("%s%s%s\n", *end, rc == -EPIPE ? "" : " ", rc == -EPIPE ? "" : err.msg);
		return 0;
	}
	switch (m->type) {
	case HVT_MSG_HARVESTED:
		printf("harvested %llu final=%d\n", (unsigned long long)m->u.harvested.seq,
		       m->u.harvested.final);
		break;
	case HVT_MSG_BYE:
		printf("bye %s\n", m->u.bye.reason);
		break;
	case HVT_MSG_ERROR:
		printf("error %s %s\n", m->u.error.code, m->u.error.message);
		break;
	default:
		printf("%s\n", hvt_msg_type_name(m->type));
		break;
	}
	fflush(stdout);
	return m->type;
}

static int race(int sock)
{
	unsigned harvested = 0, nonfinal_after_bye = 0;
	bool bye = false, final = false, final_after_bye = false, in_flight;
	const char *end = "eof";
	uint64_t seq = 1;
	struct hvt_msg m;
	int type;

	in_flight = !ask(sock, seq);
	while ((type = receive(sock, &m, &end))) {
		if (type == HVT_MSG_BYE)
			bye = true;
		if (type == HVT_MSG_HARVESTED) {
			harvested++;
			final |= m.u.harvested.final;
			final_after_bye |= bye && m.u.harvested.final;
			nonfinal_after_bye += bye && !m.u.harvested.final;
			in_flight = false;
		}
		hvt_msg_fini(&m);
		/* Back to back; after bye one more request, the final one, unless one is in flight. */
		if (!in_flight && !final)
			in_flight = !ask(sock, ++seq);
	}
	printf("summary harvested=%u nonfinal_after_bye=%u final=%d final_after_bye=%d end=%s\n", harvested,
	       nonfinal_after_bye, final, final_after_bye, end);
	return 0;
}

static int bad_seq(int sock)
{
	char code[sizeof(((struct hvt_msg_error *)0)->code)] = "none";
	const char *end = "open";
	struct hvt_msg m;
	int type;

	ask(sock, 1);
	ask(sock, 3);
	while ((type = receive(sock, &m, &end))) {
		if (type == HVT_MSG_ERROR)
			snprintf(code, sizeof(code), "%s", m.u.error.code);
		hvt_msg_fini(&m);
	}
	printf("summary error=%s closed=%s\n", code, strcmp(end, "eof") ? "no" : "yes");
	return 0;
}

int main(int argc, char **argv)
{
	int sock, rc;

	if (argc != 3 || (strcmp(argv[2], "race") && strcmp(argv[2], "bad-seq"))) {
		fprintf(stderr, "usage: attach_probe SOCK race|bad-seq\n");
		return 2;
	}
	sock = attach(argv[1]);
	if (sock < 0)
		return 1;
	printf("attached\n");
	fflush(stdout);
	rc = strcmp(argv[2], "race") ? bad_seq(sock) : race(sock);
	close(sock);
	return rc;
}
