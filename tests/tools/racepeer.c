// SPDX-License-Identifier: MIT
/*
 * racepeer: a dirty-log VMM whose guest stops at random points, many times, for the final-harvest race test
 * (tests/integration/final_harvest_race.sh).
 *   racepeer SOCK SESSIONS ORACLE_DIR [--unasked-final]
 * Serves SESSIONS tracers one after another on SOCK. Session k (its seed) answers every harvest with 16 pages
 * of one 4 GiB slot chosen from (k, seq), always 16 so that the page count cannot tell one interval from
 * another, and writes what it put in the bitmaps to ORACLE_DIR/k.jsonl as {"seq","final","written"} lines
 * (the shape of `hvmtrace export --jsonl`). Its guest stops at a random moment 0-40 ms after attach, or
 * right after it sent a harvested (while the tracer reads those bitmaps), or once the tracer's next request
 * has arrived unread (in flight). Then, as protocol 2 says, it sends bye and answers the tracer's request in
 * flight, or its next one, as the final interval.
 * With --unasked-final it does what version 1 did instead: it writes the final interval into the bitmaps
 * at once, unasked, sends it and bye. A tracer must then never record wrong pages (the sequence word).
 * At the end it prints how many stops came right after a harvested and how many met a request in flight.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hvmtrace/attach.h"
#include "hvmtrace/error.h"
#include "hvmtrace/util.h"

#define SLOT_BYTES    (4ull << 30)
#define SLOT_PAGES    (SLOT_BYTES / 4096)
#define SET_PAGES     16
#define STOP_MAX_NS   40000000ull
#define FINAL_WAIT_MS 5000

struct stats {
	unsigned after_harvested; /* stops right after a harvested was sent */
	unsigned in_flight;       /* stops that met a request already sent */
	unsigned finals;          /* final intervals sent */
};

static void fail(const char *what, const struct hvt_err *e)
{
	fprintf(stderr, "racepeer: %s%s%s\n", what, e ? ": " : "", e ? e->msg : "");
	exit(3);
}

/* The pages of harvest `seq` of session `seed`: one in each 1/16 of the slot, never adjacent. */
static void pattern(uint64_t seed, uint64_t seq, uint64_t pages[SET_PAGES])
{
	const uint64_t stride = SLOT_PAGES / SET_PAGES;
	uint64_t state = seed * 1000003 + seq;

	for (int j = 0; j < SET_PAGES; j++)
		pages[j] = (uint64_t)j * stride + hvt_splitmix64(&state) % (stride - 1);
}

struct session {
	int sock;
	uint64_t seed;
	uint64_t *map; /* header, then the bitmap */
	uint64_t last_done;
	FILE *oracle;
};

/* Writes harvest seq's bitmaps between the two values of the sequence word, and logs them. */
static void write_bitmaps(struct session *s, uint64_t seq, bool final)
{
	uint64_t *bits = s->map + HVT_BITMAP_HEADER_BYTES / 8, pages[SET_PAGES];

	__atomic_store_n(&s->map[0], htole64(hvt_bitmap_seq_writing(seq)), __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memset(bits, 0, SLOT_PAGES / 8);
	pattern(s->seed, seq, pages);
	for (int j = 0; j < SET_PAGES; j++)
		bits[pages[j] / 64] |= htole64(1ull << (pages[j] % 64));
	__atomic_store_n(&s->map[0], htole64(hvt_bitmap_seq_done(seq)), __ATOMIC_RELEASE);
	fprintf(s->oracle, "{\"seq\":%llu,\"final\":%s,\"written\":[", (unsigned long long)seq,
		final ? "true" : "false");
	for (int j = 0; j < SET_PAGES; j++)
		fprintf(s->oracle, "%s[%llu,1]", j ? "," : "", (unsigned long long)pages[j]);
	fprintf(s->oracle, "]}\n");
	fflush(s->oracle);
}

static void send_harvested(struct session *s, uint64_t seq, bool final)
{
	struct hvt_msg m = {.type = HVT_MSG_HARVESTED};
	uint64_t end = hvt_now_ns();
	struct hvt_err e;

	m.u.harvested = (struct hvt_msg_harvested){.seq = seq,
						   .generation = 1,
						   .t_start_ns = s->last_done,
						   .t_end_ns = end,
						   .t_done_ns = end,
						   .dirty_pages = SET_PAGES,
						   .final = final};
	s->last_done = end;
	if (hvt_msg_send(s->sock, &m, &e))
		fprintf(stderr, "racepeer: session %llu: harvested %llu: %s\n", (unsigned long long)s->seed,
			(unsigned long long)seq, e.msg);
}

static void send_bye(struct session *s)
{
	struct hvt_msg m = {.type = HVT_MSG_BYE};

	snprintf(m.u.bye.reason, sizeof(m.u.bye.reason), "racepeer's guest stopped");
	hvt_msg_send(s->sock, &m, NULL);
}

static void handshake(struct session *s, int memfd)
{
	struct hvt_memslot slot = {.slot = 0, .gpa = 0, .size = SLOT_BYTES, .backing = "anon", .name = "ram"};
	struct hvt_msg m = {.type = HVT_MSG_HELLO};
	struct hvt_err e;

	m.u.hello = (struct hvt_msg_hello){.protocol = HVT_ATTACH_PROTOCOL,
					   .vmm = "racepeer",
					   .vm_name = "race",
					   .vm_pid = getpid(),
					   .accel = "kvm",
					   .page_size = 4096,
					   .modes = HVT_MODE_BIT(HVT_MODE_DIRTY_LOG),
					   .default_cpu = -1};
	m.u.hello.layout =
	    (struct hvt_layout){.generation = 1, .page_size = 4096, .nslots = 1, .slots = &slot};
	if (hvt_msg_send(s->sock, &m, &e))
		fail("sending hello", &e);
	if (hvt_msg_recv(s->sock, &m, 10000, &e) || m.type != HVT_MSG_ATTACH)
		fail("expected attach", &e);
	hvt_msg_fini(&m);
	s->last_done = hvt_now_ns();
	m = (struct hvt_msg){.type = HVT_MSG_ATTACHED, .nfds = 1, .fds = {memfd}};
	m.u.attached = (struct hvt_msg_attached){.mode = HVT_MODE_DIRTY_LOG,
						 .cpu = -1,
						 .generation = 1,
						 .t_armed_ns = s->last_done,
						 .bitmap_bytes = SLOT_PAGES / 8};
	if (hvt_msg_send(s->sock, &m, &e))
		fail("sending attached", &e);
}

/* Protocol 2's end: bye, then the request in flight or the next one gets the final interval. */
static void stop_asked(struct session *s, uint64_t *seq, struct stats *st)
{
	struct pollfd p = {.fd = s->sock, .events = POLLIN};
	struct hvt_msg m;
	struct hvt_err e;

	if (poll(&p, 1, 0) == 1)
		st->in_flight++;
	send_bye(s);
	if (hvt_msg_recv(s->sock, &m, FINAL_WAIT_MS, &e))
		return; /* the tracer left: its last interval is lost, which the test counts */
	if (m.type == HVT_MSG_HARVEST && m.u.harvest.seq == *seq + 1) {
		*seq += 1;
		write_bitmaps(s, *seq, true);
		send_harvested(s, *seq, true);
		st->finals++;
	}
	hvt_msg_fini(&m);
}

/* Version 1's end: the final interval written and sent unasked, then bye. */
static void stop_unasked(struct session *s, uint64_t *seq, struct stats *st)
{
	*seq += 1;
	write_bitmaps(s, *seq, true);
	send_harvested(s, *seq, true);
	send_bye(s);
	st->finals++;
}

static void serve(struct session *s, bool unasked, struct stats *st)
{
	uint64_t rng = s->seed * 7919, seq = 0;
	unsigned kind = (unsigned)(hvt_splitmix64(&rng) % 3); /* 0: a moment; 1, 2: after a harvested */
	bool after_harvested = kind > 0;
	uint64_t stop_at = hvt_now_ns() + hvt_splitmix64(&rng) % STOP_MAX_NS;
	uint64_t stop_after = 1 + hvt_splitmix64(&rng) % 8;

	for (;;) {
		struct pollfd p = {.fd = s->sock, .events = POLLIN};
		uint64_t now = hvt_now_ns();
		int timeout = after_harvested  ? 10000
			      : now >= stop_at ? 0
					       : (int)((stop_at - now) / 1000000) + 1;
		struct hvt_msg m;
		struct hvt_err e;

		if (!after_harvested && now >= stop_at)
			break;
		if (poll(&p, 1, timeout) == 0)
			continue;
		if (hvt_msg_recv(s->sock, &m, 1000, &e))
			return; /* the tracer left */
		if (m.type != HVT_MSG_HARVEST || m.u.harvest.seq != seq + 1) {
			hvt_msg_fini(&m);
			return;
		}
		seq++;
		write_bitmaps(s, seq, false);
		send_harvested(s, seq, false);
		if (after_harvested && seq == stop_after) {
			struct pollfd next = {.fd = s->sock, .events = POLLIN};

			/* kind 2: the guest stops once the next request is on its way, unread */
			if (kind == 2 && poll(&next, 1, 10000) != 1)
				return;
			if (kind == 1)
				st->after_harvested++;
			break;
		}
	}
	if (unasked)
		stop_unasked(s, &seq, st);
	else
		stop_asked(s, &seq, st);
}

int main(int argc, char **argv)
{
	struct stats st = {0};
	struct hvt_err e;
	bool unasked;
	long sessions;
	int l;

	if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "--unasked-final"))) {
		fprintf(stderr, "usage: racepeer SOCK SESSIONS ORACLE_DIR [--unasked-final]\n");
		return 2;
	}
	sessions = strtol(argv[2], NULL, 10);
	unasked = argc == 5;
	l = hvt_attach_listen(argv[1], &e);
	if (l < 0)
		fail("listen", &e);
	for (long k = 1; k <= sessions; k++) {
		struct session s = {.seed = (uint64_t)k};
		size_t map_bytes = HVT_BITMAP_HEADER_BYTES + SLOT_PAGES / 8;
		int memfd = memfd_create("racepeer-bitmaps", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		char path[4096];

		if (memfd < 0 || ftruncate(memfd, (off_t)map_bytes) ||
		    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
			fail("memfd", NULL);
		s.map = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
		snprintf(path, sizeof(path), "%s/%ld.jsonl", argv[3], k);
		s.oracle = fopen(path, "w");
		if (s.map == MAP_FAILED || !s.oracle)
			fail("mapping the memfd or opening the oracle", NULL);
		s.sock = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		if (s.sock < 0)
			fail("accept", NULL);
		handshake(&s, memfd);
		close(memfd);
		serve(&s, unasked, &st);
		close(s.sock);
		fclose(s.oracle);
		munmap(s.map, map_bytes);
	}
	close(l);
	unlink(argv[1]);
	printf(
	    "racepeer: %ld stops: %u right after a harvested, %u with a request in flight; %u final intervals sent\n",
	    sessions, st.after_harvested, st.in_flight, st.finals);
	return 0;
}
