// SPDX-License-Identifier: MIT
/*
 * Unit tests for the tracer's harvest modes (hvmtrace/record/harvest*.c) and what the session hands them: the
 * table, and each mode's attach, layout, VMM-message, after-end and close hooks, over a socketpair playing
 * the VMM.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../hvmtrace/record/harvest.h"
#include "../../hvmtrace/record/session.h"
#include "hvmtrace/attach.h"
#include "hvmtrace/error.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/util.h"

#define PAGE 4096ull

struct vmm {
	int tracer, vmm; /* the two ends of the connection */
	struct session s;
};

static int setup(void **state)
{
	struct vmm *v = calloc(1, sizeof(*v));
	int sv[2];

	if (!v || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	v->tracer = sv[0];
	v->vmm = sv[1];
	v->s.sock = v->tracer;
	v->s.path = "test.sock";
	snprintf(v->s.hello.vmm, sizeof(v->s.hello.vmm), "fakevmm 1.0");
	*state = v;
	return 0;
}

static int teardown(void **state)
{
	struct vmm *v = *state;

	session_close(&v->s, "test over"); /* closes the tracer's end */
	close(v->vmm);
	free(v);
	return 0;
}

/* Two slots: 64 pages at GPA 0, and `high_pages` pages at 1 GiB. */
static void make_layout(struct hvt_layout *l, uint64_t generation, uint64_t high_pages)
{
	memset(l, 0, sizeof(*l));
	l->generation = generation;
	l->page_size = PAGE;
	l->nslots = 2;
	l->slots = calloc(2, sizeof(*l->slots));
	assert_non_null(l->slots);
	l->slots[0] = (struct hvt_memslot){.slot = 0, .size = 64 * PAGE, .backing = "anon", .name = "low"};
	l->slots[1] = (struct hvt_memslot){
	    .slot = 1, .gpa = 1ull << 30, .size = high_pages * PAGE, .backing = "anon", .name = "high"};
}

static void send_ok(int sock, struct hvt_msg *m)
{
	struct hvt_err err = {{0}};
	int rc = hvt_msg_send(sock, m, &err);

	if (rc)
		fail_msg("hvt_msg_send: %d %s", rc, err.msg);
}

/* The shared memfd of layout l (header, then bitmaps) with page `page` of slot `slot` written, and the
 * sequence word saying harvest `seq` is done. */
static int bitmaps_with(const struct hvt_layout *l, uint32_t slot, uint64_t page, uint64_t seq)
{
	uint64_t bytes = hvt_layout_bitmap_bytes(l), word = hvt_bitmap_seq_done(seq);
	int fd = memfd_create("bitmaps", MFD_CLOEXEC);
	uint8_t bit = (uint8_t)(1u << (page % 8));

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(HVT_BITMAP_HEADER_BYTES + bytes)), 0);
	assert_int_equal(
	    pwrite(fd, &bit, 1,
		   (off_t)(HVT_BITMAP_HEADER_BYTES + hvt_layout_bitmap_offset(l, slot) + page / 8)),
	    1);
	assert_int_equal(pwrite(fd, &word, 8, 0), 8);
	return fd;
}

/* Sets the sequence word of a shared memfd (what the VMM does around its writes). */
static void set_seq_word(int fd, uint64_t word)
{
	assert_int_equal(pwrite(fd, &word, 8, 0), 8);
}

static void send_attached(struct vmm *v, enum hvt_mode mode, uint64_t generation, uint64_t bitmap_bytes,
			  int fd)
{
	struct hvt_msg m = {.type = HVT_MSG_ATTACHED, .nfds = 1, .fds = {fd}};

	m.u.attached = (struct hvt_msg_attached){.mode = mode,
						 .cpu = 3,
						 .generation = generation,
						 .t_armed_ns = hvt_now_ns(),
						 .bitmap_bytes = bitmap_bytes};
	send_ok(v->vmm, &m);
	close(fd);
}

/* The VMM's answer to harvest `seq` (queued before the tracer asks: the socket holds it). */
static void send_harvested(struct vmm *v, uint64_t seq, uint64_t generation, uint64_t dirty_pages, bool final)
{
	uint64_t now = hvt_now_ns();
	struct hvt_msg m = {.type = HVT_MSG_HARVESTED};

	m.u.harvested = (struct hvt_msg_harvested){.seq = seq,
						   .generation = generation,
						   .t_start_ns = now - 1000,
						   .t_end_ns = now - 500,
						   .t_done_ns = now,
						   .dirty_pages = dirty_pages,
						   .final = final};
	send_ok(v->vmm, &m);
}

static void send_bye(struct vmm *v)
{
	struct hvt_msg m = {.type = HVT_MSG_BYE};

	snprintf(m.u.bye.reason, sizeof(m.u.bye.reason), "guest finished");
	send_ok(v->vmm, &m);
}

/* The tracer's harvest request `seq`, as the VMM receives it. */
static void expect_request(struct vmm *v, uint64_t seq)
{
	struct hvt_err err = {{0}};
	struct hvt_msg m;

	assert_int_equal(hvt_msg_recv(v->vmm, &m, 2000, &err), 0);
	assert_int_equal(m.type, HVT_MSG_HARVEST);
	assert_int_equal(m.u.harvest.seq, seq);
}

static void send_layout(struct vmm *v, uint64_t generation, uint64_t high_pages, int fd)
{
	struct hvt_msg m = {.type = HVT_MSG_LAYOUT};

	make_layout(&m.u.layout.layout, generation, high_pages);
	if (fd >= 0) {
		m.u.layout.bitmap_bytes = hvt_layout_bitmap_bytes(&m.u.layout.layout);
		m.nfds = 1;
		m.fds[0] = fd;
	}
	send_ok(v->vmm, &m);
	hvt_msg_fini(&m); /* closes fd */
}

/* Receives one message on the tracer's side, as the recorder does between deadlines. */
static int recv_tracer(struct vmm *v, struct hvt_msg *m, struct hvt_err *err)
{
	return session_recv(&v->s, m, 2000, err);
}

/* Attaches in h's mode to a VMM that answers "attached" for the session's layout. */
static void attach_ok(struct vmm *v, const struct harvester *h, uint64_t bitmap_bytes, int fd)
{
	struct hvt_err err = {{0}};
	struct hvt_msg m;

	send_attached(v, h->mode, v->s.layout.generation, bitmap_bytes, fd);
	if (session_attach(&v->s, h, 3, &err))
		fail_msg("session_attach: %s", err.msg);
	assert_ptr_equal(v->s.harvester, h);
	assert_non_null(v->s.harvester_state);
	assert_int_equal(hvt_msg_recv(v->vmm, &m, 2000, &err), 0);
	assert_int_equal(m.type, HVT_MSG_ATTACH);
	assert_int_equal(m.u.attach.mode, h->mode);
	assert_int_equal(m.u.attach.cpu, 3);
	hvt_msg_fini(&m);
}

/* ---- the table ---- */

static void test_table(void **state)
{
	uint32_t found = 0;
	char list[64];

	(void)state;
	for (unsigned m = 0; m < 32; m++) {
		const struct harvester *h = harvester_for_mode((enum hvt_mode)m);

		if (!h)
			continue;
		found |= HVT_MODE_BIT(m);
		assert_int_equal(h->mode, m);
		/* What every mode must have: the recorder and the session call these unchecked. */
		assert_non_null(h->attach);
		assert_non_null(h->harvest);
		assert_non_null(h->close);
		assert_non_null(h->describe);
		assert_true(h->sets & HVT_IV_WRITTEN);
	}
	const uint32_t dl = HVT_MODE_BIT(HVT_MODE_DIRTY_LOG), ad = HVT_MODE_BIT(HVT_MODE_AD),
		       ring = HVT_MODE_BIT(HVT_MODE_DIRTY_RING);
	assert_int_equal(found & (dl | ad | ring), dl | ad | ring);
	assert_false(harvester_for_mode(HVT_MODE_DIRTY_RING)->sets & HVT_IV_ACCESSED);
	assert_true(harvester_for_mode(HVT_MODE_AD)->sets & HVT_IV_ACCESSED);
	assert_false(harvester_for_mode(HVT_MODE_DIRTY_LOG)->sets & HVT_IV_ACCESSED);
	assert_null(harvester_for_mode(HVT_MODE_NONE));
	assert_null(harvester_for_mode((enum hvt_mode)31));

	/* auto: ad when offered (it sees accessed pages too), else dirty-ring (its cost follows the pages
	 * written), else dirty-log, also when nothing is. */
	assert_int_equal(harvester_auto_mode(dl | ad), HVT_MODE_AD);
	assert_int_equal(harvester_auto_mode(ring | ad), HVT_MODE_AD);
	assert_int_equal(harvester_auto_mode(ring), HVT_MODE_DIRTY_RING);
	assert_int_equal(harvester_auto_mode(ring | dl), HVT_MODE_DIRTY_RING);
	assert_int_equal(harvester_auto_mode(ad), HVT_MODE_AD);
	assert_int_equal(harvester_auto_mode(dl), HVT_MODE_DIRTY_LOG);
	assert_int_equal(harvester_auto_mode(0), HVT_MODE_DIRTY_LOG);
	assert_int_equal(harvester_auto_mode(HVT_MODE_BIT(31)), HVT_MODE_DIRTY_LOG);

	harvester_list_modes(list, sizeof(list));
	assert_string_equal(list, "dirty-log, ad and dirty-ring");
	memset(list, 'x', sizeof(list));
	harvester_list_modes(list, 6); /* cut, still terminated */
	assert_string_equal(list, "dirty");
}

/* ---- dirty-log ---- */

/* Layout generation 1 (128 high pages) attached in mode dirty-log, page `page` of slot `slot` written in the
 * shared bitmaps (harvest 1 done); returns the test's own descriptor of that memfd. */
static int attach_dirty_log(struct vmm *v, uint32_t slot, uint64_t page)
{
	int fd;

	make_layout(&v->s.layout, 1, 128);
	fd = bitmaps_with(&v->s.layout, slot, page, 1);
	attach_ok(v, harvester_for_mode(HVT_MODE_DIRTY_LOG), hvt_layout_bitmap_bytes(&v->s.layout), dup(fd));
	return fd;
}

static void test_dirty_log_harvest_and_final(void **state)
{
	struct vmm *v = *state;
	const struct harvester *h = harvester_for_mode(HVT_MODE_DIRTY_LOG);
	struct hvt_interval iv = {0};
	struct hvt_err err = {{0}};
	struct hvt_msg m;
	char line[64];
	int fd;

	fd = attach_dirty_log(v, 1, 70);
	v->s.harvest_cpu = 3;
	h->describe(&v->s, line, sizeof(line));
	assert_string_equal(line, "VMM harvest thread on CPU 3");

	/* An interval answers our request, with the page the bitmaps hold. */
	send_harvested(v, 1, 1, 1, false);
	assert_int_equal(h->harvest(&v->s, &iv, 2000, &err), 0);
	expect_request(v, 1);
	assert_int_equal(iv.seq, 1);
	assert_false(iv.flags & HVT_IV_FINAL);
	assert_int_equal(iv.generation, 1);
	assert_int_equal(iv.nslots, 2);
	assert_null(iv.accessed);
	assert_true(hvt_pageset_test(&iv.written[1], 70));
	assert_int_equal(hvt_interval_count_pages(iv.written, iv.nslots), 1);
	hvt_interval_fini(&iv);

	/* The guest stops: bye, and the last interval answers the tracer's next request. */
	send_bye(v);
	assert_int_equal(recv_tracer(v, &m, &err), -EPIPE);
	assert_true(v->s.said_bye);
	set_seq_word(fd, hvt_bitmap_seq_done(2));
	send_harvested(v, 2, 1, 1, true);
	assert_int_equal(h->after_end(&v->s, &iv, &err), 1);
	expect_request(v, 2);
	assert_int_equal(iv.seq, 2);
	assert_true(iv.flags & HVT_IV_FINAL);
	hvt_interval_fini(&iv);
	assert_int_equal(h->after_end(&v->s, &iv, &err), 0); /* taken once */
	close(fd);
}

/* The guest stopped while our request was on its way: bye comes first, then the answer, final. */
static void test_dirty_log_bye_during_harvest(void **state)
{
	struct vmm *v = *state;
	const struct harvester *h = harvester_for_mode(HVT_MODE_DIRTY_LOG);
	struct hvt_interval iv = {0};
	struct hvt_err err = {{0}};

	close(attach_dirty_log(v, 0, 5));
	send_bye(v);
	send_harvested(v, 1, 1, 1, true);
	assert_int_equal(h->harvest(&v->s, &iv, 2000, &err), 0);
	assert_true(v->s.said_bye && v->s.vmm_gone);
	assert_true(iv.flags & HVT_IV_FINAL);
	assert_true(hvt_pageset_test(&iv.written[0], 5));
	hvt_interval_fini(&iv);
	assert_int_equal(h->after_end(&v->s, &iv, &err), 0);
	assert_null(iv.written);
}

static void test_dirty_log_counts_checked(void **state)
{
	struct vmm *v = *state;
	const struct harvester *h = harvester_for_mode(HVT_MODE_DIRTY_LOG);
	struct hvt_interval iv = {0};
	struct hvt_err err = {{0}};

	close(attach_dirty_log(v, 0, 5));
	send_harvested(v, 1, 1, 2, false); /* announces 2 pages, the bitmaps hold 1 */
	assert_int_equal(h->harvest(&v->s, &iv, 2000, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "announced 2 dirty pages, its bitmaps hold 1"));
	assert_null(iv.written);
}

/* A sequence word other than "harvest N done" means the VMM wrote (or writes) under us: discarded, even
 * when the page count agrees. */
static void test_dirty_log_sequence_word_checked(void **state)
{
	struct vmm *v = *state;
	const struct harvester *h = harvester_for_mode(HVT_MODE_DIRTY_LOG);
	struct hvt_interval iv = {0};
	struct hvt_err err = {{0}};
	/* For harvests 1 to 4: still writing it; harvest 1's word at harvest 2; a later harvest's; none. */
	const uint64_t words[] = {hvt_bitmap_seq_writing(1), hvt_bitmap_seq_done(1), hvt_bitmap_seq_done(4),
				  0};
	int fd;

	fd = attach_dirty_log(v, 0, 5);
	for (unsigned i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		set_seq_word(fd, words[i]);
		send_harvested(v, i + 1, 1, 1, false);
		assert_int_equal(h->harvest(&v->s, &iv, 2000, &err), -EPROTO);
		assert_non_null(strstr(err.msg, "wrote the shared bitmaps while the tracer read them"));
		assert_non_null(strstr(err.msg, "fakevmm"));
		assert_null(iv.written);
		expect_request(v, i + 1);
	}
	/* And the right one is taken. */
	set_seq_word(fd, hvt_bitmap_seq_done(5));
	send_harvested(v, 5, 1, 1, false);
	assert_int_equal(h->harvest(&v->s, &iv, 2000, &err), 0);
	assert_true(hvt_pageset_test(&iv.written[0], 5));
	hvt_interval_fini(&iv);
	close(fd);
}

/* A VMM that shrinks the memfd under our mapping: SIGBUS is caught, the interval discarded, the VMM named. */
static void test_dirty_log_memfd_shrunk(void **state)
{
	struct vmm *v = *state;
	const struct harvester *h = harvester_for_mode(HVT_MODE_DIRTY_LOG);
	struct hvt_interval iv = {0};
	struct hvt_err err = {{0}};
	int fd;

	fd = attach_dirty_log(v, 0, 5);
	assert_int_equal(ftruncate(fd, 0), 0);
	send_harvested(v, 1, 1, 1, false);
	assert_int_equal(h->harvest(&v->s, &iv, 2000, &err), -EFAULT);
	assert_non_null(strstr(err.msg, "shrank the shared bitmap memfd"));
	assert_non_null(strstr(err.msg, "fakevmm"));
	assert_null(iv.written);
	close(fd);
}

static void test_dirty_log_layouts(void **state)
{
	struct vmm *v = *state;
	const struct harvester *h = harvester_for_mode(HVT_MODE_DIRTY_LOG);
	struct hvt_interval iv = {0};
	struct hvt_err err = {{0}};
	struct hvt_msg m;

	close(attach_dirty_log(v, 1, 70));

	/* A layout without its memfd is refused, and the one in force stays. */
	send_layout(v, 2, 256, -1);
	assert_int_equal(recv_tracer(v, &m, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "layout generation 2 came without its memfd"));
	assert_int_equal(v->s.layout.generation, 1);
	assert_int_equal(v->s.layout.slots[1].size, 128 * PAGE);

	/* With it, the harvests read the new bitmaps. */
	struct hvt_layout next;
	make_layout(&next, 2, 256);
	send_layout(v, 2, 256, bitmaps_with(&next, 1, 200, 1));
	hvt_layout_fini(&next);
	assert_int_equal(recv_tracer(v, &m, &err), 0);
	assert_int_equal(m.type, HVT_MSG_LAYOUT);
	hvt_msg_fini(&m);
	assert_int_equal(v->s.layout.generation, 2);
	send_harvested(v, 1, 2, 1, false);
	assert_int_equal(h->harvest(&v->s, &iv, 2000, &err), 0);
	expect_request(v, 1);
	assert_true(hvt_pageset_test(&iv.written[1], 200));
	assert_false(hvt_pageset_test(&iv.written[1], 70));
	hvt_interval_fini(&iv);

	/* The session's close says bye, and the harvester's state goes with it (LeakSanitizer checks). */
	session_close(&v->s, "done");
	assert_null(v->s.harvester);
	assert_null(v->s.harvester_state);
	assert_int_equal(hvt_msg_recv(v->vmm, &m, 2000, &err), 0);
	assert_int_equal(m.type, HVT_MSG_BYE);
	assert_string_equal(m.u.bye.reason, "done");
}

static void test_dirty_log_attach_refused(void **state)
{
	struct vmm *v = *state;
	const struct harvester *h = harvester_for_mode(HVT_MODE_DIRTY_LOG);
	struct hvt_err err = {{0}};

	make_layout(&v->s.layout, 1, 128);
	send_attached(v, HVT_MODE_DIRTY_LOG, 1, hvt_layout_bitmap_bytes(&v->s.layout) + 8,
		      bitmaps_with(&v->s.layout, 0, 0, 1));
	assert_int_equal(session_attach(&v->s, h, 3, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "bytes of bitmaps, layout generation 1 needs"));
	assert_null(v->s.harvester);
	assert_null(v->s.harvester_state);
}

/* ---- ad ---- */

/* ---- dirty-ring ---- */

/* dirty-ring: a listed interval is its entries (a repeat is one page); an entry outside the layout, or a
 * list longer than the memfd holds, discards the interval; an unlisted one is read as bitmaps. */
static void test_dirty_ring_list(void **state)
{
	struct vmm *v = *state;
	const struct harvester *h = harvester_for_mode(HVT_MODE_DIRTY_RING);
	struct hvt_interval iv = {0};
	struct hvt_err err = {{0}};
	uint64_t list[3] = {htole64(5), htole64(1ull << 48 | 70), htole64(5)};
	struct hvt_msg m = {.type = HVT_MSG_HARVESTED};
	int fd;

	make_layout(&v->s.layout, 1, 128);
	fd = bitmaps_with(&v->s.layout, 1, 9, 1); /* the bitmaps say slot 1 page 9: a list must not */
	attach_ok(v, h, hvt_layout_bitmap_bytes(&v->s.layout), dup(fd));
	assert_int_equal(pwrite(fd, list, sizeof(list), HVT_BITMAP_HEADER_BYTES), (ssize_t)sizeof(list));
	m.u.harvested = (struct hvt_msg_harvested){
	    .seq = 1, .generation = 1, .t_end_ns = 1, .t_done_ns = 2, .dirty_pages = 3, .listed = true};
	send_ok(v->vmm, &m);
	assert_int_equal(h->harvest(&v->s, &iv, 2000, &err), 0);
	expect_request(v, 1);
	assert_true(hvt_pageset_test(&iv.written[0], 5));
	assert_true(hvt_pageset_test(&iv.written[1], 70));
	assert_int_equal(hvt_interval_count_pages(iv.written, iv.nslots), 2);
	hvt_interval_fini(&iv);

	/* Not listed: the interval outgrew the list and came as bitmaps. */
	uint8_t bit = 1u << (9 % 8);

	assert_int_equal(pwrite(fd, (uint64_t[]){0, 0, 0}, 24, HVT_BITMAP_HEADER_BYTES), 24);
	assert_int_equal(
	    pwrite(fd, &bit, 1,
		   (off_t)(HVT_BITMAP_HEADER_BYTES + hvt_layout_bitmap_offset(&v->s.layout, 1) + 9 / 8)),
	    1);
	set_seq_word(fd, hvt_bitmap_seq_done(2));
	m.u.harvested = (struct hvt_msg_harvested){
	    .seq = 2, .generation = 1, .t_end_ns = 1, .t_done_ns = 2, .dirty_pages = 1};
	send_ok(v->vmm, &m);
	assert_int_equal(h->harvest(&v->s, &iv, 2000, &err), 0);
	expect_request(v, 2);
	assert_true(hvt_pageset_test(&iv.written[1], 9));
	assert_int_equal(hvt_interval_count_pages(iv.written, iv.nslots), 1);
	hvt_interval_fini(&iv);

	/* Page 128 of a 128-page slot. */
	list[0] = htole64(1ull << 48 | 128);
	assert_int_equal(pwrite(fd, list, 8, HVT_BITMAP_HEADER_BYTES), 8);
	set_seq_word(fd, hvt_bitmap_seq_done(3));
	m.u.harvested = (struct hvt_msg_harvested){
	    .seq = 3, .generation = 1, .t_end_ns = 1, .t_done_ns = 2, .dirty_pages = 1, .listed = true};
	send_ok(v->vmm, &m);
	assert_int_equal(h->harvest(&v->s, &iv, 2000, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "names page 128 of slot 1, outside the layout"));
	assert_null(iv.written);

	/* More entries than the memfd's bitmap bytes / 8. */
	set_seq_word(fd, hvt_bitmap_seq_done(4));
	m.u.harvested =
	    (struct hvt_msg_harvested){.seq = 4,
				       .generation = 1,
				       .t_end_ns = 1,
				       .t_done_ns = 2,
				       .dirty_pages = hvt_layout_bitmap_bytes(&v->s.layout) / 8 + 1,
				       .listed = true};
	send_ok(v->vmm, &m);
	assert_int_equal(h->harvest(&v->s, &iv, 2000, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "longer than the memfd holds"));
	close(fd);
}

static void test_ad_attach_and_end(void **state)
{
	struct vmm *v = *state;
	const struct harvester *h = harvester_for_mode(HVT_MODE_AD);
	struct hvt_interval iv = {0};
	struct hvt_err err = {{0}};
	char line[64];
	int status;

	make_layout(&v->s.layout, 1, 128);
	/* ad mode has no bitmaps to share. */
	send_attached(v, HVT_MODE_AD, 1, 64, open("/dev/null", O_RDONLY | O_CLOEXEC));
	assert_int_equal(session_attach(&v->s, h, 3, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "attached in mode ad with 64 bitmap bytes, expected 0"));
	assert_null(v->s.harvester_state);
	struct hvt_msg m;
	assert_int_equal(hvt_msg_recv(v->vmm, &m, 2000, &err), 0); /* the first attach */
	hvt_msg_fini(&m);

	/* An fd that is no A/D fd: attach keeps it, and a harvest through it fails. */
	attach_ok(v, h, 0, open("/dev/null", O_RDONLY | O_CLOEXEC));
	h->describe(&v->s, line, sizeof(line));
	assert_string_equal(line, "the tracer harvests the A/D bits itself");
	v->s.ad_walk = "pruned"; /* what the first harvest found (integration/record_ad_walk tests that) */
	h->describe(&v->s, line, sizeof(line));
	assert_string_equal(line, "the tracer harvests the A/D bits itself (pruned walk)");
	v->s.ad_walk = NULL;

	/* After the VMM's end, the last interval is taken only while its process holds the guest's memory. */
	pid_t child = fork();
	if (!child)
		_exit(0);
	assert_true(child > 0);
	v->s.vmm_pid = child;
	assert_int_equal(waitid(P_PID, (id_t)child, &(siginfo_t){0}, WEXITED | WNOWAIT), 0); /* a zombie */
	assert_int_equal(h->after_end(&v->s, &iv, &err), 0);
	assert_int_equal(waitpid(child, &status, 0), child); /* gone */
	assert_int_equal(h->after_end(&v->s, &iv, &err), 0);
	assert_null(iv.written);

	v->s.vmm_pid = getpid(); /* running: the harvest is tried, and fails on this fd */
	assert_true(h->after_end(&v->s, &iv, &err) < 0);
	assert_non_null(strstr(err.msg, "KVM_AD_HARVEST on slot 0"));
	assert_null(iv.written);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test_setup_teardown(test_dirty_log_harvest_and_final, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dirty_log_bye_during_harvest, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dirty_log_counts_checked, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dirty_log_sequence_word_checked, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dirty_log_memfd_shrunk, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dirty_log_layouts, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dirty_log_attach_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_dirty_ring_list, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_ad_attach_and_end, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
