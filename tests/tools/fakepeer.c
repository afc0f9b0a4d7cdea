// SPDX-License-Identifier: MIT
/*
 * fakepeer: a misbehaving peer on an attach socket, for the tracer's error-path tests.
 *   fakepeer SOCK garbage         accept, write an HTTP response, close          (not a VMM)
 *   fakepeer SOCK silent          accept, say nothing                             (not a VMM)
 *   fakepeer SOCK busy            answer with error "busy"
 *   fakepeer SOCK version         hello with protocol 2; exit 0 only if the tracer answers error "version"
 *   fakepeer SOCK disconnect N    a proper VMM with one 16 MiB slot that answers N harvests (page i of
 *                                 harvest i written), then drops the connection on harvest N+1
 *   fakepeer SOCK as-uid UID ...  listen as another uid (the tracer must refuse it), then act as "busy"
 *   fakepeer SOCK devmem          like disconnect, but the slot is "devmem" whose extents name channels
 *                                 of the stand-in PMU tree (s0.mc0.ch1, s1.mc0.ch0, s0.mc0.ch1 again), and
 *                                 it answers every harvest until the tracer leaves. The extents' host
 *                                 addresses are made up: nothing is mapped (a stand-in for a devmem VM)
 *   fakepeer SOCK hotplug SIZE    like devmem's endless harvests on an anon slot, but before answering the
 *                                 4th harvest it announces layout generation 2, which adds a slot of SIZE
 *                                 (K/M/G/T) at 1 TiB (memory hot-plug); later harvests write page i of it
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

#include "hvmtrace/attach.h"
#include "hvmtrace/error.h"
#include "hvmtrace/util.h"

#define SLOT_PAGES 4096

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
	    .slot = 0, .gpa = 0, .size = SLOT_PAGES * 4096ull, .backing = "anon", .name = "fake"};
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

/* A memfd of `bytes` bytes of bitmaps, mapped at *bits. */
static int bitmap_memfd(size_t bytes, uint64_t **bits)
{
	int memfd = memfd_create("fakepeer-bitmaps", MFD_CLOEXEC);

	if (memfd < 0 || ftruncate(memfd, (off_t)bytes))
		fail("memfd", NULL);
	*bits = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (*bits == MAP_FAILED)
		fail("mmap", NULL);
	return memfd;
}

/* Layout generation 2: the first slot and a hot-plugged one of grow_bytes at 1 TiB. Returns its bitmap
 * bytes; *bits maps the new memfd. */
static size_t announce_hotplug(int c, uint64_t grow_bytes, uint64_t **bits)
{
	struct hvt_memslot *slots = calloc(2, sizeof(*slots));
	struct hvt_msg m = {.type = HVT_MSG_LAYOUT, .nfds = 1};
	struct hvt_err e;

	slots[0] = (struct hvt_memslot){
	    .slot = 0, .gpa = 0, .size = SLOT_PAGES * 4096ull, .backing = "anon", .name = "fake"};
	slots[1] = (struct hvt_memslot){
	    .slot = 1, .gpa = 1ull << 40, .size = grow_bytes, .backing = "anon", .name = "plugged"};
	m.u.layout.layout =
	    (struct hvt_layout){.generation = 2, .page_size = 4096, .nslots = 2, .slots = slots};
	m.u.layout.bitmap_bytes = hvt_layout_bitmap_bytes(&m.u.layout.layout);
	m.fds[0] = bitmap_memfd(m.u.layout.bitmap_bytes, bits);
	if (hvt_msg_send(c, &m, &e))
		fail("sending layout", &e);
	close(m.fds[0]);
	size_t bytes = m.u.layout.bitmap_bytes;
	hvt_layout_fini(&m.u.layout.layout);
	return bytes;
}

/*
 * A dirty-log VMM with one slot: answers `answers` harvests (page i of harvest i written), then drops. With
 * grow_bytes, a slot of that size is plugged in before the 4th harvest; page i of it is written from then on.
 */
static int serve_harvests(int c, int answers, bool devmem, uint64_t grow_bytes)
{
	size_t bytes = SLOT_PAGES / 8;
	uint64_t *bits, last_done, generation = 1, dirty = 1;
	int memfd = bitmap_memfd(bytes, &bits);
	struct hvt_msg m;
	struct hvt_err e;

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
		if (i > answers) {
			fprintf(stderr, "fakepeer: dropping the connection on harvest %d\n", i);
			return 0;
		}
		if (grow_bytes && i == 4) {
			munmap(bits, bytes);
			bytes = announce_hotplug(c, grow_bytes, &bits);
			generation = 2;
			dirty = 2;
		}
		memset(bits, 0, bytes);
		bits[(i % SLOT_PAGES) / 64] |= 1ull << (i % 64);
		if (generation == 2) /* the plugged slot's bitmap follows the first one's */
			bits[SLOT_PAGES / 64 + (uint64_t)i % (grow_bytes / 4096) / 64] |= 1ull << (i % 64);
		uint64_t end = hvt_now_ns();
		m = (struct hvt_msg){.type = HVT_MSG_HARVESTED};
		m.u.harvested = (struct hvt_msg_harvested){.seq = (uint64_t)i,
							   .generation = generation,
							   .t_start_ns = last_done,
							   .t_end_ns = end,
							   .t_done_ns = end,
							   .dirty_pages = dirty};
		last_done = end;
		if (hvt_msg_send(c, &m, &e))
			fail("sending harvested", &e);
	}
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
		    "usage: fakepeer SOCK garbage|silent|busy|version|disconnect N|devmem|hotplug SIZE|ad|as-uid UID MODE\n");
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
		send_hello(c, 2, false, HVT_MODE_BIT(HVT_MODE_DIRTY_LOG));
		if (hvt_msg_recv(c, &m, 5000, &e))
			fail("expected the tracer's error message", &e);
		if (m.type != HVT_MSG_ERROR || strcmp(m.u.error.code, "version")) {
			fprintf(stderr, "fakepeer: the tracer answered %s, not error version\n",
				hvt_msg_type_name(m.type));
			return 1;
		}
		printf("tracer said: %s\n", m.u.error.message);
	} else if (!strcmp(mode, "disconnect") && argi + 1 < argc) {
		serve_harvests(c, atoi(argv[argi + 1]), false, 0);
	} else if (!strcmp(mode, "devmem")) {
		serve_harvests(c, INT_MAX, true, 0);
	} else if (!strcmp(mode, "hotplug") && argi + 1 < argc) {
		uint64_t grow;

		if (hvt_parse_size(argv[argi + 1], &grow) || grow % 4096 || grow < 64 * 4096)
			fail("hotplug SIZE: a size of whole pages, at least 256K", NULL);
		serve_harvests(c, INT_MAX, false, grow);
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
