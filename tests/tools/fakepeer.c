// SPDX-License-Identifier: MIT
/*
 * fakepeer: a misbehaving peer on an attach socket, for the tracer's error-path tests.
 *   fakepeer SOCK garbage         accept, write an HTTP response, close          (not a VMM)
 *   fakepeer SOCK silent          accept, say nothing                             (not a VMM)
 *   fakepeer SOCK busy            answer with error "busy"
 *   fakepeer SOCK version         hello with protocol 1 (whose VMM sent its final interval unasked); exit 0
 *                                 only if the tracer answers error "version"
 *   fakepeer SOCK disconnect N    a proper VMM with one 16 MiB slot that answers N harvests (page i of
 *                                 harvest i written), then drops the connection on harvest N+1
 *   fakepeer SOCK shrink N        like disconnect, but on harvest N+1 it truncates the (unsealed) bitmap
 *                                 memfd to 0 bytes and answers: the tracer's read of it meets SIGBUS
 *   fakepeer SOCK scribble N      like disconnect, but on harvest N+1 it answers with the sequence word
 *                                 left odd, as if it were still writing the bitmaps the tracer reads
 *   fakepeer SOCK slow-bye N      answers N harvests, then its guest stops: bye, sent in two pieces 1.5 s
 *                                 apart, then the final interval on the tracer's next request
 *   fakepeer SOCK bye-not-final N answers N harvests, then says bye and answers the next request as an
 *                                 interval that is not final (the guest's last one never comes)
 *   fakepeer SOCK bye-close N     answers N harvests, then says bye and closes without answering again
 *   fakepeer SOCK attach-close    hello, then closes the connection when the tracer sends attach
 *   fakepeer SOCK huge            hello whose layout has a 2^60-byte slot (sent as raw JSON)
 *   fakepeer SOCK null            a frame holding JSON null in place of hello
 *   fakepeer SOCK as-uid UID ...  listen as another uid (the tracer must refuse it), then act as "busy"
 *   fakepeer SOCK devmem          like disconnect, but the slot is "devmem" whose extents name channels
 *                                 of the stand-in PMU tree (s0.mc0.ch1, s1.mc0.ch0, s0.mc0.ch1 again), and
 *                                 it answers every harvest until the tracer leaves. The extents' host
 *                                 addresses are made up: nothing is mapped (a stand-in for a devmem VM)
 *   fakepeer SOCK hotplug SIZE    like devmem's endless harvests on an anon slot, but before answering the
 *                                 4th harvest it announces layout generation 2, which adds a slot of SIZE
 *                                 (K/M/G/T) at 1 TiB (memory hot-plug); later harvests write page i of it
 *   fakepeer SOCK ram SIZE        like devmem's endless harvests, on one anon slot of SIZE (K/M/G/T) at 0
 *   fakepeer SOCK ad              offers mode ad only, and hands over /dev/null as the A/D fd: the tracer's
 *                                 KVM_AD_HARVEST must come from a stand-in (tests/preload/fake_kvm_ad.c).
 *                                 It waits until the tracer leaves
 * It serves one connection and exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <endian.h>

#include "hvmtrace/attach.h"
#include "hvmtrace/error.h"
#include "hvmtrace/util.h"

#define SLOT_PAGES 4096

static uint64_t slot_pages = SLOT_PAGES; /* of slot 0 ("ram SIZE" changes it) */

static void fail(const char *what, const struct hvt_err *e)
{
	fprintf(stderr, "fakepeer: %s%s%s\n", what, e ? ": " : "", e ? e->msg : "");
	exit(3);
}

/* Extents of the devmem slot: 4 + 8 + 4 MiB over two channels, the first channel twice. */
static const struct hvt_extent devmem_extents[] = {
    {.gpa = 0, .hpa = 0x900000000ull, .size = 4ull << 20, .channel = "s0.mc0.ch1"},
    {.gpa = 4ull << 20, .hpa = 0x1900000000ull, .size = 8ull << 20, .channel = "s1.mc0.ch0"},
    {.gpa = 12ull << 20, .hpa = 0x900400000ull, .size = 4ull << 20, .channel = "s0.mc0.ch1"},
};

static void send_hello(int c, uint32_t protocol, bool devmem, uint32_t modes)
{
	struct hvt_msg m = {.type = HVT_MSG_HELLO};
	struct hvt_memslot *slot = calloc(1, sizeof(*slot));
	struct hvt_err e;

	*slot = (struct hvt_memslot){
	    .slot = 0, .gpa = 0, .size = slot_pages * 4096ull, .backing = "anon", .name = "fake"};
	if (devmem) {
		snprintf(slot->backing, sizeof(slot->backing), "devmem");
		slot->nextents = sizeof(devmem_extents) / sizeof(devmem_extents[0]);
		slot->extents = malloc(sizeof(devmem_extents));
		if (!slot->extents)
			fail("out of memory", NULL);
		memcpy(slot->extents, devmem_extents, sizeof(devmem_extents));
	}
	m.u.hello = (struct hvt_msg_hello){.protocol = protocol,
					   .vmm = "fakepeer",
					   .vm_name = "fake",
					   .vm_pid = getpid(),
					   .accel = "kvm",
					   .page_size = 4096,
					   .modes = modes,
					   .default_cpu = -1};
	m.u.hello.layout =
	    (struct hvt_layout){.generation = 1, .page_size = 4096, .nslots = 1, .slots = slot};
	if (hvt_msg_send(c, &m, &e))
		fail("sending hello", &e);
	hvt_layout_fini(&m.u.hello.layout);
}

/* BYE_NOT_FINAL: bye, then the next request answered "final": false (what QEMU did when a harvest was in
 * flight as its guest stopped); BYE_CLOSE: bye, then the connection closed with the request unanswered. */
enum misbehaviour { HONEST, DROP, SHRINK, SCRIBBLE, SLOW_BYE, BYE_NOT_FINAL, BYE_CLOSE };

/* Sends a frame in two pieces, pause_ms apart. */
static void send_split(int c, const struct hvt_msg *m, int pause_ms)
{
	int sv[2];
	char buf[4096];
	ssize_t n;
	struct hvt_err e;

	/* The library frames it into a socketpair; we forward the bytes by hand. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) || hvt_msg_send(sv[0], m, &e))
		fail("framing a message", NULL);
	close(sv[0]);
	n = read(sv[1], buf, sizeof(buf));
	close(sv[1]);
	if (n < 8 || write(c, buf, 6) != 6)
		fail("sending the first piece", NULL);
	usleep((useconds_t)pause_ms * 1000);
	if (write(c, buf + 6, (size_t)n - 6) != n - 6)
		fail("sending the rest", NULL);
}

/* A memfd of the bitmap header (its sequence word) and `bytes` bytes of bitmaps; *map maps it whole. */
static int bitmap_memfd(size_t bytes, uint64_t **map)
{
	size_t map_bytes = HVT_BITMAP_HEADER_BYTES + bytes;
	int memfd = memfd_create("fakepeer-bitmaps", MFD_CLOEXEC);

	if (memfd < 0 || ftruncate(memfd, (off_t)map_bytes))
		fail("memfd", NULL);
	*map = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (*map == MAP_FAILED)
		fail("mmap", NULL);
	return memfd;
}

/* Layout generation 2: the first slot and a hot-plugged one of grow_bytes at 1 TiB. Returns its bitmap
 * bytes; *map maps the new memfd. */
static size_t announce_hotplug(int c, uint64_t grow_bytes, uint64_t **map)
{
	struct hvt_memslot *slots = calloc(2, sizeof(*slots));
	struct hvt_msg m = {.type = HVT_MSG_LAYOUT, .nfds = 1};
	struct hvt_err e;

	slots[0] = (struct hvt_memslot){
	    .slot = 0, .gpa = 0, .size = slot_pages * 4096ull, .backing = "anon", .name = "fake"};
	slots[1] = (struct hvt_memslot){
	    .slot = 1, .gpa = 1ull << 40, .size = grow_bytes, .backing = "anon", .name = "plugged"};
	m.u.layout.layout =
	    (struct hvt_layout){.generation = 2, .page_size = 4096, .nslots = 2, .slots = slots};
	m.u.layout.bitmap_bytes = hvt_layout_bitmap_bytes(&m.u.layout.layout);
	m.fds[0] = bitmap_memfd(m.u.layout.bitmap_bytes, map);
	if (hvt_msg_send(c, &m, &e))
		fail("sending layout", &e);
	close(m.fds[0]);
	size_t bytes = m.u.layout.bitmap_bytes;
	hvt_layout_fini(&m.u.layout.layout);
	return bytes;
}

/*
 * A dirty-log VMM with one slot: answers `answers` harvests (page i of harvest i written), then misbehaves
 * as told on the next one. With grow_bytes, a slot of that size is plugged in before the 4th harvest; page
 * i of it is written from then on.
 */
static int serve_harvests(int c, int answers, bool devmem, enum misbehaviour how, uint64_t grow_bytes)
{
	size_t bytes = (size_t)(slot_pages + 63) / 64 * 8;
	uint64_t *map, *bits, last_done, generation = 1, dirty = 1;
	int memfd = bitmap_memfd(bytes, &map);
	bool final = false;
	struct hvt_msg m;
	struct hvt_err e;

	bits = map + HVT_BITMAP_HEADER_BYTES / 8;
	send_hello(c, HVT_ATTACH_PROTOCOL, devmem, HVT_MODE_BIT(HVT_MODE_DIRTY_LOG));
	if (hvt_msg_recv(c, &m, 5000, &e) || m.type != HVT_MSG_ATTACH)
		fail("expected attach", &e);
	hvt_msg_fini(&m);
	last_done = hvt_now_ns();
	m = (struct hvt_msg){.type = HVT_MSG_ATTACHED, .nfds = 1, .fds = {memfd}};
	m.u.attached = (struct hvt_msg_attached){.mode = HVT_MODE_DIRTY_LOG,
						 .cpu = -1,
						 .generation = 1,
						 .t_armed_ns = last_done,
						 .bitmap_bytes = bytes};
	if (hvt_msg_send(c, &m, &e))
		fail("sending attached", &e);
	for (int i = 1;; i++) {
		if (hvt_msg_recv(c, &m, 10000, &e))
			return 0; /* the tracer left */
		if (m.type != HVT_MSG_HARVEST) {
			hvt_msg_fini(&m);
			return 0;
		}
		if (i > answers && (how == DROP || how == BYE_CLOSE)) {
			fprintf(stderr, "fakepeer: dropping the connection on harvest %d\n", i);
			return 0;
		}
		if (grow_bytes && i == 4) {
			munmap(map, HVT_BITMAP_HEADER_BYTES + bytes);
			bytes = announce_hotplug(c, grow_bytes, &map);
			bits = map + HVT_BITMAP_HEADER_BYTES / 8;
			generation = 2;
			dirty = 2;
		}
		map[0] = htole64(hvt_bitmap_seq_writing((uint64_t)i));
		memset(bits, 0, bytes);
		bits[((uint64_t)i % slot_pages) / 64] |= 1ull << (i % 64);
		if (generation == 2) /* the plugged slot's bitmap follows the first one's */
			bits[slot_pages / 64 + (uint64_t)i % (grow_bytes / 4096) / 64] |= 1ull << (i % 64);
		if (i <= answers || how != SCRIBBLE)
			map[0] = htole64(hvt_bitmap_seq_done((uint64_t)i));
		if (i > answers && how == SHRINK && ftruncate(memfd, 0))
			fail("truncating the memfd", NULL);
		uint64_t end = hvt_now_ns();
		m = (struct hvt_msg){.type = HVT_MSG_HARVESTED};
		m.u.harvested = (struct hvt_msg_harvested){.seq = (uint64_t)i,
							   .generation = generation,
							   .t_start_ns = last_done,
							   .t_end_ns = end,
							   .t_done_ns = end,
							   .dirty_pages = dirty,
							   .final = final};
		last_done = end;
		if (hvt_msg_send(c, &m, &e))
			fail("sending harvested", &e);
		if (final || i > answers)
			return 0;
		if (i == answers && how == SLOW_BYE) {
			m = (struct hvt_msg){.type = HVT_MSG_BYE};
			snprintf(m.u.bye.reason, sizeof(m.u.bye.reason), "fakepeer's guest stopped");
			send_split(c, &m, 1500);
			final = true; /* the next request gets the last interval */
		}
		if (i == answers && (how == BYE_NOT_FINAL || how == BYE_CLOSE)) {
			m = (struct hvt_msg){.type = HVT_MSG_BYE};
			snprintf(m.u.bye.reason, sizeof(m.u.bye.reason), "fakepeer's guest stopped");
			if (hvt_msg_send(c, &m, &e))
				fail("sending bye", &e);
		}
	}
}

/* A frame of raw JSON text, for what the library would refuse to send. */
static void send_raw_frame(int c, const char *json)
{
	uint32_t len = htole32((uint32_t)strlen(json));

	if (write(c, &len, 4) != 4 || write(c, json, strlen(json)) != (ssize_t)strlen(json))
		fail("sending a raw frame", NULL);
}

/* A VMM in mode ad: the tracer harvests through the fd, so after attached there is nothing to answer. */
static void serve_ad(int c)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct hvt_msg m;
	struct hvt_err e;

	if (fd < 0)
		fail("/dev/null", NULL);
	send_hello(c, HVT_ATTACH_PROTOCOL, false, HVT_MODE_BIT(HVT_MODE_AD));
	if (hvt_msg_recv(c, &m, 5000, &e) || m.type != HVT_MSG_ATTACH || m.u.attach.mode != HVT_MODE_AD)
		fail("expected attach in mode ad", &e);
	hvt_msg_fini(&m);
	m = (struct hvt_msg){.type = HVT_MSG_ATTACHED, .nfds = 1, .fds = {fd}};
	m.u.attached = (struct hvt_msg_attached){
	    .mode = HVT_MODE_AD, .cpu = -1, .generation = 1, .t_armed_ns = hvt_now_ns()};
	if (hvt_msg_send(c, &m, &e))
		fail("sending attached", &e);
	close(fd);
	while (!hvt_msg_recv(c, &m, 60000, &e)) {
		bool bye = m.type == HVT_MSG_BYE;

		hvt_msg_fini(&m);
		if (bye)
			break;
	}
}

int main(int argc, char **argv)
{
	struct hvt_err e;
	struct hvt_msg m;
	const char *mode;
	int l, c, argi = 2;

	if (argc < 3) {
		fprintf(
		    stderr,
		    "usage: fakepeer SOCK garbage|silent|busy|version|disconnect N|shrink N|scribble N|slow-bye N|bye-not-final N|bye-close N|\n"
		    "       attach-close|huge|null|devmem|hotplug SIZE|ad|as-uid UID MODE\n");
		return 2;
	}
	if (!strcmp(argv[2], "as-uid") && argc > 3) {
		uid_t uid = (uid_t)atoi(argv[3]);

		if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
			fail("setresuid", NULL);
		argi = 4;
	}
	mode = argi < argc ? argv[argi] : "busy";
	l = hvt_attach_listen(argv[1], &e);
	if (l < 0)
		fail("listen", &e);
	printf("ready\n");
	fflush(stdout);
	c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		fail("accept", NULL);

	if (!strcmp(mode, "garbage")) {
		const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi";
		if (write(c, resp, sizeof(resp) - 1) < 0)
			fail("write", NULL);
		sleep(1);
	} else if (!strcmp(mode, "silent")) {
		sleep(8);
	} else if (!strcmp(mode, "busy")) {
		m = (struct hvt_msg){.type = HVT_MSG_ERROR};
		snprintf(m.u.error.code, sizeof(m.u.error.code), "busy");
		snprintf(m.u.error.message, sizeof(m.u.error.message), "another tracer is attached");
		hvt_msg_send(c, &m, NULL);
	} else if (!strcmp(mode, "version")) {
		send_hello(c, 1, false, HVT_MODE_BIT(HVT_MODE_DIRTY_LOG));
		if (hvt_msg_recv(c, &m, 5000, &e))
			fail("expected the tracer's error message", &e);
		if (m.type != HVT_MSG_ERROR || strcmp(m.u.error.code, "version")) {
			fprintf(stderr, "fakepeer: the tracer answered %s, not error version\n",
				hvt_msg_type_name(m.type));
			return 1;
		}
		printf("tracer said: %s\n", m.u.error.message);
	} else if (!strcmp(mode, "disconnect") && argi + 1 < argc) {
		serve_harvests(c, atoi(argv[argi + 1]), false, DROP, 0);
	} else if (!strcmp(mode, "shrink") && argi + 1 < argc) {
		serve_harvests(c, atoi(argv[argi + 1]), false, SHRINK, 0);
	} else if (!strcmp(mode, "scribble") && argi + 1 < argc) {
		serve_harvests(c, atoi(argv[argi + 1]), false, SCRIBBLE, 0);
	} else if (!strcmp(mode, "bye-not-final") && argi + 1 < argc) {
		serve_harvests(c, atoi(argv[argi + 1]), false, BYE_NOT_FINAL, 0);
	} else if (!strcmp(mode, "bye-close") && argi + 1 < argc) {
		serve_harvests(c, atoi(argv[argi + 1]), false, BYE_CLOSE, 0);
	} else if (!strcmp(mode, "slow-bye") && argi + 1 < argc) {
		serve_harvests(c, atoi(argv[argi + 1]), false, SLOW_BYE, 0);
	} else if (!strcmp(mode, "devmem")) {
		serve_harvests(c, INT_MAX, true, HONEST, 0);
	} else if (!strcmp(mode, "hotplug") && argi + 1 < argc) {
		uint64_t grow;

		if (hvt_parse_size(argv[argi + 1], &grow) || grow % 4096 || grow < 64 * 4096)
			fail("hotplug SIZE: a size of whole pages, at least 256K", NULL);
		serve_harvests(c, INT_MAX, false, HONEST, grow);
	} else if (!strcmp(mode, "ram") && argi + 1 < argc) {
		uint64_t size;

		if (hvt_parse_size(argv[argi + 1], &size) || size % (64 * 4096) || !size)
			fail("ram SIZE: a size of whole 256 KiB blocks", NULL);
		slot_pages = size / 4096;
		serve_harvests(c, INT_MAX, false, HONEST, 0);
	} else if (!strcmp(mode, "attach-close")) {
		send_hello(c, HVT_ATTACH_PROTOCOL, false, HVT_MODE_BIT(HVT_MODE_DIRTY_LOG));
		if (hvt_msg_recv(c, &m, 5000, &e) || m.type != HVT_MSG_ATTACH)
			fail("expected attach", &e);
		hvt_msg_fini(&m);
	} else if (!strcmp(mode, "huge")) {
		send_raw_frame(
		    c,
		    "{\"type\":\"hello\",\"protocol\":2,\"vmm\":\"fakepeer\",\"vm\":{\"name\":\"fake\",\"uuid\":\"\",\"pid\":1},"
		    "\"accel\":\"kvm\",\"page_size\":4096,\"modes\":[\"dirty-log\"],\"default_cpu\":-1,\"vcpu_tids\":[],"
		    "\"layout\":{\"generation\":1,\"page_size\":4096,\"slots\":[{\"slot\":0,\"gpa\":0,"
		    "\"size\":1152921504606846976,\"backing\":\"anon\"}]}}");
		sleep(2);
	} else if (!strcmp(mode, "null")) {
		send_raw_frame(c, "null");
		sleep(2);
	} else if (!strcmp(mode, "ad")) {
		serve_ad(c);
	} else {
		fprintf(stderr, "fakepeer: unknown mode '%s'\n", mode);
		return 2;
	}
	close(c);
	close(l);
	unlink(argv[1]);
	return 0;
}
