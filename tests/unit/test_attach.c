// SPDX-License-Identifier: MIT
/* Unit tests for the attach protocol (lib/protocol/) over socketpairs and real listening sockets. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "hvmtrace/attach.h"
#include "hvmtrace/error.h"
#include "hvmtrace/util.h"
#include "test_qemu_layout.h"

#define GiB (1ull << 30)

struct pair {
	int a, b;
};

static int setup_pair(void **state)
{
	struct pair *p = malloc(sizeof(*p));
	int sv[2];

	if (!p || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	p->a = sv[0];
	p->b = sv[1];
	*state = p;
	return 0;
}

static int teardown_pair(void **state)
{
	struct pair *p = *state;

	if (p->a >= 0)
		close(p->a);
	if (p->b >= 0)
		close(p->b);
	free(p);
	return 0;
}

static void send_ok(int sock, const struct hvt_msg *m)
{
	struct hvt_err err = {{0}};
	int rc = hvt_msg_send(sock, m, &err);

	if (rc)
		fail_msg("hvt_msg_send: %d %s", rc, err.msg);
}

static void recv_ok(int sock, struct hvt_msg *m)
{
	struct hvt_err err = {{0}};
	int rc = hvt_msg_recv(sock, m, 2000, &err);

	if (rc)
		fail_msg("hvt_msg_recv: %d %s", rc, err.msg);
}

/* Writes bytes (and fds) with one sendmsg, bypassing the library: for frames it would never send. */
static void send_raw(int sock, const void *bytes, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {(void *)bytes, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (nfds) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	assert_int_equal(sendmsg(sock, &mh, MSG_NOSIGNAL), (ssize_t)len);
}

static void send_frame_text(int sock, const char *json, const int *fds, int nfds)
{
	size_t len = strlen(json);
	uint8_t *buf = malloc(len + 4);

	assert_non_null(buf);
	for (int i = 0; i < 4; i++)
		buf[i] = (uint8_t)(len >> (8 * i));
	memcpy(buf + 4, json, len);
	send_raw(sock, buf, len + 4, fds, nfds);
	free(buf);
}

static void expect_recv_error(int sock, int want, const char *needle)
{
	struct hvt_msg m;
	struct hvt_err err = {{0}};
	int rc = hvt_msg_recv(sock, &m, 2000, &err);

	if (rc != want)
		fail_msg("hvt_msg_recv returned %d (%s), expected %d", rc, err.msg, want);
	if (needle && !strstr(err.msg, needle))
		fail_msg("message \"%s\" does not mention \"%s\"", err.msg, needle);
	assert_int_equal(m.nfds, 0);
}

/* A frame the receiver refuses with -EPROTO, and what its message must mention. */
struct refused_frame {
	const char *text;
	const char *needle;
};

/* Sends each frame in turn and expects it refused, as send_frame_text then expect_recv_error would. */
static void expect_frames_refused(const struct pair *p, const struct refused_frame *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		send_frame_text(p->a, f[i].text, NULL, 0);
		expect_recv_error(p->b, -EPROTO, f[i].needle);
	}
}

static int memfd_with(const char *text)
{
	int fd = memfd_create("test", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4096), 0);
	assert_int_equal(pwrite(fd, text, strlen(text), 0), (ssize_t)strlen(text));
	return fd;
}

static void expect_fd_content(int fd, const char *text)
{
	char buf[64] = {0};

	assert_int_equal(pread(fd, buf, strlen(text), 0), (ssize_t)strlen(text));
	assert_string_equal(buf, text);
}

/* ---- round trips ---- */

static void test_hello_round_trip(void **state)
{
	struct pair *p = *state;
	struct hvt_msg m = {.type = HVT_MSG_HELLO}, r;
	struct hvt_msg_hello *h = &m.u.hello;

	strcpy(h->vmm, "hvmtrace-vmm 0.1.0");
	strcpy(h->vm_name, "guest-ä");
	strcpy(h->vm_uuid, "6f1c2e0a-3b7d-4d59-9a41-1f0e2d3c4b5a");
	h->protocol = HVT_ATTACH_PROTOCOL;
	h->vm_pid = 4242;
	strcpy(h->accel, "kvm");
	h->page_size = 4096;
	h->modes = HVT_MODE_BIT(HVT_MODE_DIRTY_LOG) | HVT_MODE_BIT(HVT_MODE_AD);
	h->default_cpu = 1;
	h->nvcpu_tids = 3;
	h->vcpu_tids[0] = 100;
	h->vcpu_tids[1] = 101;
	h->vcpu_tids[2] = 2147483647;
	qemu_layout(&h->layout, 5);
	send_ok(p->a, &m);
	recv_ok(p->b, &r);

	assert_int_equal(r.type, HVT_MSG_HELLO);
	assert_int_equal(r.u.hello.protocol, HVT_ATTACH_PROTOCOL);
	assert_string_equal(r.u.hello.vmm, h->vmm);
	assert_string_equal(r.u.hello.vm_name, h->vm_name);
	assert_string_equal(r.u.hello.vm_uuid, h->vm_uuid);
	assert_int_equal(r.u.hello.vm_pid, 4242);
	assert_string_equal(r.u.hello.accel, "kvm");
	assert_int_equal(r.u.hello.page_size, 4096);
	assert_int_equal(r.u.hello.modes, h->modes);
	assert_int_equal(r.u.hello.default_cpu, 1);
	assert_int_equal(r.u.hello.nvcpu_tids, 3);
	assert_memory_equal(r.u.hello.vcpu_tids, h->vcpu_tids, 3 * sizeof(int32_t));
	assert_int_equal(r.u.hello.layout.generation, 5);
	assert_int_equal(r.u.hello.layout.nslots, 2);
	assert_int_equal(r.u.hello.layout.slots[1].gpa, 4 * GiB);
	assert_int_equal(r.u.hello.layout.slots[1].size, GiB);
	assert_string_equal(r.u.hello.layout.slots[1].name, "high");
	assert_int_equal(r.nfds, 0);
	hvt_msg_fini(&r);
	hvt_msg_fini(&m);

	/* default_cpu -1 (none) and no modes survive as well. */
	m = (struct hvt_msg){.type = HVT_MSG_HELLO};
	m.u.hello.page_size = 4096;
	m.u.hello.default_cpu = -1;
	qemu_layout(&m.u.hello.layout, 1);
	send_ok(p->a, &m);
	recv_ok(p->b, &r);
	assert_int_equal(r.u.hello.default_cpu, -1);
	assert_int_equal(r.u.hello.modes, 0);
	assert_int_equal(r.u.hello.nvcpu_tids, 0);
	hvt_msg_fini(&r);
	hvt_msg_fini(&m);
}

static void test_attach_round_trip(void **state)
{
	struct pair *p = *state;
	struct hvt_msg m = {.type = HVT_MSG_ATTACH}, r;

	m.u.attach = (struct hvt_msg_attach){.protocol = 1,
					     .mode = HVT_MODE_DIRTY_LOG,
					     .cpu = 7,
					     .tracer = "hvmtrace 0.1.0",
					     .tracer_pid = 99};
	send_ok(p->b, &m);
	recv_ok(p->a, &r);
	assert_int_equal(r.type, HVT_MSG_ATTACH);
	assert_int_equal(r.u.attach.protocol, 1);
	assert_int_equal(r.u.attach.mode, HVT_MODE_DIRTY_LOG);
	assert_int_equal(r.u.attach.cpu, 7);
	assert_string_equal(r.u.attach.tracer, "hvmtrace 0.1.0");
	assert_int_equal(r.u.attach.tracer_pid, 99);

	/* A mode the VMM does not know arrives as NONE, so the VMM can answer "mode". */
	send_frame_text(
	    p->b,
	    "{\"type\":\"attach\",\"protocol\":1,\"mode\":\"quantum\",\"cpu\":-1,\"tracer\":{\"name\":\"t\",\"pid\":1}}",
	    NULL, 0);
	recv_ok(p->a, &r);
	assert_int_equal(r.u.attach.mode, HVT_MODE_NONE);
	assert_int_equal(r.u.attach.cpu, -1);
}

static void test_attached_passes_memfd(void **state)
{
	struct pair *p = *state;
	struct hvt_msg m = {.type = HVT_MSG_ATTACHED}, r;
	int fd = memfd_with("before");
	char *map;

	m.u.attached = (struct hvt_msg_attached){.mode = HVT_MODE_DIRTY_LOG,
						 .cpu = -1,
						 .generation = 3,
						 .t_armed_ns = 123456789012345ull,
						 .bitmap_bytes = 4096};
	m.nfds = 1;
	m.fds[0] = fd;
	send_ok(p->a, &m);
	recv_ok(p->b, &r);
	assert_int_equal(r.type, HVT_MSG_ATTACHED);
	assert_int_equal(r.u.attached.mode, HVT_MODE_DIRTY_LOG);
	assert_int_equal(r.u.attached.cpu, -1);
	assert_int_equal(r.u.attached.generation, 3);
	assert_true(r.u.attached.t_armed_ns == 123456789012345ull);
	assert_int_equal(r.u.attached.bitmap_bytes, 4096);
	assert_int_equal(r.nfds, 1);
	assert_true(r.fds[0] >= 0 && r.fds[0] != fd);
	assert_true(fcntl(r.fds[0], F_GETFD) & FD_CLOEXEC);

	/* The received fd is the same memory: a write through it shows in the sender's mapping. */
	map = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(pwrite(r.fds[0], "written by receiver", 19, 0), 19);
	assert_memory_equal(map, "written by receiver", 19);
	munmap(map, 4096);

	int received = r.fds[0];
	hvt_msg_fini(&r); /* closes it */
	assert_int_equal(fcntl(received, F_GETFD), -1);
	close(fd);
}

static void test_layout_round_trip_and_fd_order(void **state)
{
	struct pair *p = *state;
	struct hvt_msg a = {.type = HVT_MSG_ATTACHED}, l = {.type = HVT_MSG_LAYOUT}, r1, r2;
	int fd1 = memfd_with("first"), fd2 = memfd_with("second");

	a.u.attached =
	    (struct hvt_msg_attached){.mode = HVT_MODE_DIRTY_LOG, .generation = 1, .bitmap_bytes = 64};
	a.nfds = 1;
	a.fds[0] = fd1;
	qemu_layout(&l.u.layout.layout, 2);
	l.u.layout.layout.slots[1].size = 2 * GiB;
	l.u.layout.bitmap_bytes = (3 * GiB + 2 * GiB) / 4096 / 8;
	l.nfds = 1;
	l.fds[0] = fd2;
	/* Both frames are queued before either is read: each fd must stay with its own frame. */
	send_ok(p->a, &a);
	send_ok(p->a, &l);
	recv_ok(p->b, &r1);
	recv_ok(p->b, &r2);
	assert_int_equal(r1.type, HVT_MSG_ATTACHED);
	assert_int_equal(r1.nfds, 1);
	expect_fd_content(r1.fds[0], "first");
	assert_int_equal(r2.type, HVT_MSG_LAYOUT);
	assert_int_equal(r2.nfds, 1);
	expect_fd_content(r2.fds[0], "second");
	assert_int_equal(r2.u.layout.layout.generation, 2);
	assert_int_equal(r2.u.layout.layout.slots[1].size, 2 * GiB);
	assert_int_equal(r2.u.layout.bitmap_bytes, 5 * GiB / 4096 / 8);
	hvt_msg_fini(&r1);
	hvt_msg_fini(&r2);
	hvt_msg_fini(&l);
	close(fd1);
	close(fd2);

	/* ad mode: a layout without bitmaps carries no fd. */
	l = (struct hvt_msg){.type = HVT_MSG_LAYOUT};
	qemu_layout(&l.u.layout.layout, 3);
	send_ok(p->a, &l);
	recv_ok(p->b, &r1);
	assert_int_equal(r1.nfds, 0);
	assert_int_equal(r1.u.layout.bitmap_bytes, 0);
	hvt_msg_fini(&r1);
	hvt_msg_fini(&l);
}

static void test_harvest_bye_error_round_trip(void **state)
{
	struct pair *p = *state;
	struct hvt_msg m, r;

	m = (struct hvt_msg){.type = HVT_MSG_HARVEST, .u.harvest.seq = UINT64_MAX};
	send_ok(p->b, &m);
	recv_ok(p->a, &r);
	assert_int_equal(r.type, HVT_MSG_HARVEST);
	assert_true(r.u.harvest.seq == UINT64_MAX);

	m = (struct hvt_msg){.type = HVT_MSG_HARVESTED};
	m.u.harvested = (struct hvt_msg_harvested){.seq = 17,
						   .generation = 2,
						   .t_start_ns = 1000,
						   .t_end_ns = 2000,
						   .t_done_ns = 2500,
						   .dirty_pages = 1ull << 40,
						   .lost_pages = 3,
						   .final = true};
	send_ok(p->a, &m);
	recv_ok(p->b, &r);
	assert_int_equal(r.type, HVT_MSG_HARVESTED);
	assert_int_equal(r.u.harvested.seq, 17);
	assert_int_equal(r.u.harvested.generation, 2);
	assert_int_equal(r.u.harvested.t_start_ns, 1000);
	assert_int_equal(r.u.harvested.t_end_ns, 2000);
	assert_int_equal(r.u.harvested.t_done_ns, 2500);
	assert_true(r.u.harvested.dirty_pages == 1ull << 40);
	assert_int_equal(r.u.harvested.lost_pages, 3);
	assert_true(r.u.harvested.final);
	m.u.harvested.final = false;
	send_ok(p->a, &m);
	recv_ok(p->b, &r);
	assert_false(r.u.harvested.final);

	m = (struct hvt_msg){.type = HVT_MSG_BYE};
	strcpy(m.u.bye.reason, "guest finished");
	send_ok(p->a, &m);
	recv_ok(p->b, &r);
	assert_int_equal(r.type, HVT_MSG_BYE);
	assert_string_equal(r.u.bye.reason, "guest finished");
	send_frame_text(p->a, "{\"type\":\"bye\"}", NULL, 0); /* reason is optional */
	recv_ok(p->b, &r);
	assert_string_equal(r.u.bye.reason, "");

	m = (struct hvt_msg){.type = HVT_MSG_ERROR};
	strcpy(m.u.error.code, "busy");
	strcpy(m.u.error.message, "another tracer (pid 12) is attached");
	send_ok(p->a, &m);
	recv_ok(p->b, &r);
	assert_int_equal(r.type, HVT_MSG_ERROR);
	assert_string_equal(r.u.error.code, "busy");
	assert_string_equal(r.u.error.message, "another tracer (pid 12) is attached");
}

static void test_unknown_members_ignored(void **state)
{
	struct pair *p = *state;
	struct hvt_msg r;

	send_frame_text(p->a, " {\"future\":{\"x\":[1,2]},\"type\":\"harvest\",\"seq\":4,\"more\":null}\n",
			NULL, 0);
	recv_ok(p->b, &r);
	assert_int_equal(r.type, HVT_MSG_HARVEST);
	assert_int_equal(r.u.harvest.seq, 4);
}

static void test_long_free_text_is_cut(void **state)
{
	struct pair *p = *state;
	char json[1024];
	char msg[400];
	struct hvt_msg r;

	memset(msg, 'x', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	snprintf(json, sizeof(json), "{\"type\":\"error\",\"code\":\"internal\",\"message\":\"%s\"}", msg);
	send_frame_text(p->a, json, NULL, 0);
	recv_ok(p->b, &r);
	assert_int_equal(strlen(r.u.error.message), sizeof(r.u.error.message) - 1);
	/* Identifiers are not cut: they are refused. */
	send_frame_text(p->a, "{\"type\":\"error\",\"code\":\"a-code-longer-than-16\",\"message\":\"m\"}",
			NULL, 0);
	expect_recv_error(p->b, -EPROTO, "error message: \"code\" is longer than 15 bytes");
}

/* ---- malformed input ---- */

static void test_bad_lengths(void **state)
{
	struct pair *p = *state;
	uint8_t zero[4] = {0, 0, 0, 0};
	uint32_t big = HVT_ATTACH_MAX_FRAME + 1;
	uint8_t too_big[4] = {(uint8_t)big, (uint8_t)(big >> 8), (uint8_t)(big >> 16), (uint8_t)(big >> 24)};

	send_raw(p->a, zero, 4, NULL, 0);
	expect_recv_error(p->b, -EPROTO, "bad frame length 0");
	send_raw(p->a, too_big, 4, NULL, 0);
	expect_recv_error(p->b, -EPROTO, "bad frame length 16777217");
}

static void test_not_json(void **state)
{
	struct pair *p = *state;

	static const struct refused_frame refused[] = {
	    {"{\"type\":\"harvest\",\"seq\":", "not JSON"},
	    {"hello", "not JSON"},
	    {"{\"type\":\"harvest\",\"seq\":1} {}", "not JSON"},
	    {"{\"type\":\"bye\",\"reason\":\"\xff\xfe\"}", "not JSON"},
	    {"[1,2]", "not an object"},
	    {"42", "not an object"},
	    {"null", "frame holds JSON null, not an object"}, /* json-c parses it to NULL with "success" */
	};

	expect_frames_refused(p, refused, sizeof(refused) / sizeof(refused[0]));
	/* The stream is still in step after all of these. */
	send_frame_text(p->a, "{\"type\":\"harvest\",\"seq\":9}", NULL, 0);
	struct hvt_msg r;
	recv_ok(p->b, &r);
	assert_int_equal(r.u.harvest.seq, 9);
}

/* A layout is bounded in guest RAM (HVT_ATTACH_MAX_GUEST_BYTES): a 2^60-byte slot is refused on receipt,
 * and the library will not send one either. */
static void test_guest_ram_bound(void **state)
{
	struct pair *p = *state;
	struct hvt_msg m = {.type = HVT_MSG_LAYOUT};
	struct hvt_err err = {{0}};

	send_frame_text(
	    p->a,
	    "{\"type\":\"hello\",\"protocol\":2,\"vmm\":\"x\",\"vm\":{\"name\":\"\",\"uuid\":\"\",\"pid\":1},"
	    "\"accel\":\"kvm\",\"page_size\":4096,\"modes\":[\"dirty-log\"],\"default_cpu\":-1,"
	    "\"vcpu_tids\":[],\"layout\":{\"generation\":1,\"page_size\":4096,\"slots\":[{\"slot\":0,"
	    "\"gpa\":0,\"size\":1152921504606846976,\"backing\":\"anon\"}]}}",
	    NULL, 0);
	expect_recv_error(p->b, -EPROTO, "past the attach protocol's bound of 17592186044416 bytes (16 TiB)");
	/* Two slots of 8 TiB fit exactly; a third page does not. */
	qemu_layout(&m.u.layout.layout, 3);
	m.u.layout.layout.slots[0].size = 8ull << 40;
	m.u.layout.layout.slots[1].gpa = 16ull << 40;
	m.u.layout.layout.slots[1].size = 8ull << 40;
	assert_int_equal(hvt_msg_send(p->a, &m, &err), 0);
	struct hvt_msg r;
	recv_ok(p->b, &r);
	hvt_msg_fini(&r);
	m.u.layout.layout.slots[1].size += 4096;
	assert_int_equal(hvt_msg_send(p->a, &m, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "layout message: slot"));
	hvt_msg_fini(&m);
}

static void test_bad_types_and_fields(void **state)
{
	struct pair *p = *state;

	static const struct refused_frame refused[] = {
	    {"{\"type\":\"teleport\"}", "unknown message type \"teleport\""},
	    {"{\"seq\":1}", "without a string \"type\""},
	    {"{\"type\":\"harvested\",\"generation\":1}", "harvested message: missing \"seq\""},
	    {"{\"type\":\"harvested\",\"seq\":1,\"generation\":1,\"t_start_ns\":1,\"t_end_ns\":2,\"t_done_ns\":3,\"dirty_pages\":0,\"lost_pages\":0}",
	     "harvested message: missing \"final\""},
	    {"{\"type\":\"harvest\",\"seq\":-1}", "harvest message: \"seq\" = -1 is out of range"},
	    {"{\"type\":\"harvest\",\"seq\":\"1\"}", "harvest message: \"seq\" is not an integer"},
	    {"{\"type\":\"attach\",\"protocol\":1,\"mode\":\"ad\",\"cpu\":-2,\"tracer\":{\"name\":\"t\",\"pid\":1}}",
	     "attach message: \"cpu\" = -2 is out of range"},
	    {"{\"type\":\"attached\",\"mode\":\"warp\",\"cpu\":0,\"generation\":1,\"t_armed_ns\":1,\"bitmap_bytes\":8}",
	     "attached message: unknown mode \"warp\""},
	    {"{\"type\":\"layout\",\"bitmap_bytes\":0,\"layout\":{\"generation\":1,\"page_size\":4096}}",
	     "layout message: layout: top level: missing \"slots\""},
	    {"{\"type\":\"layout\",\"bitmap_bytes\":0,\"layout\":{\"generation\":0,\"page_size\":4096,\"slots\":[]}}",
	     "generation 0"},
	};

	expect_frames_refused(p, refused, sizeof(refused) / sizeof(refused[0]));
}

static void test_eof(void **state)
{
	struct pair *p = *state;
	uint8_t partial[10] = {100, 0, 0, 0, '{', '"', 't', 'y', 'p', 'e'};

	send_raw(p->a, partial, sizeof(partial), NULL, 0);
	close(p->a);
	p->a = -1;
	expect_recv_error(p->b, -ECONNRESET, "middle of a frame");
}

static void test_eof_in_length(void **state)
{
	struct pair *p = *state;
	uint8_t partial[2] = {5, 0};

	send_raw(p->a, partial, sizeof(partial), NULL, 0);
	close(p->a);
	p->a = -1;
	expect_recv_error(p->b, -ECONNRESET, NULL);
}

static void test_eof_at_boundary(void **state)
{
	struct pair *p = *state;
	struct hvt_msg m = {.type = HVT_MSG_HARVEST, .u.harvest.seq = 1}, r;

	send_ok(p->a, &m);
	close(p->a);
	p->a = -1;
	recv_ok(p->b, &r); /* the whole frame is still delivered */
	expect_recv_error(p->b, -EPIPE, "closed the connection");
	/* Sending to a closed peer is -EPIPE, not SIGPIPE. */
	struct hvt_err err;
	assert_int_equal(hvt_msg_send(p->b, &m, &err), -EPIPE);
}

/* A pipe's write end as the stray fd: once the receiver closes its copy, the read end sees EOF. */
static void test_stray_fd_closed(void **state)
{
	struct pair *p = *state;
	int pipefd[2];
	char c;

	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	send_frame_text(p->a, "{\"type\":\"harvest\",\"seq\":2}", &pipefd[1], 1);
	close(pipefd[1]);
	expect_recv_error(p->b, -EPROTO, "harvest message carries 1 stray file descriptor");
	assert_int_equal(read(pipefd[0], &c, 1), 0);
	close(pipefd[0]);
}

static void test_fd_count_rules(void **state)
{
	struct pair *p = *state;
	struct hvt_err err = {{0}};
	int fds[5];

	/* attached needs its fd. */
	send_frame_text(
	    p->a,
	    "{\"type\":\"attached\",\"mode\":\"dirty-log\",\"cpu\":0,\"generation\":1,\"t_armed_ns\":1,\"bitmap_bytes\":8}",
	    NULL, 0);
	expect_recv_error(p->b, -EPROTO, "attached message without its file descriptor");

	/* More fds than any message may carry. */
	for (int i = 0; i < 5; i++)
		fds[i] = memfd_with("x");
	send_frame_text(
	    p->a,
	    "{\"type\":\"attached\",\"mode\":\"dirty-log\",\"cpu\":0,\"generation\":1,\"t_armed_ns\":1,\"bitmap_bytes\":8}",
	    fds, 5);
	expect_recv_error(p->b, -EPROTO, "more than 4 file descriptors");
	for (int i = 0; i < 5; i++)
		close(fds[i]);

	/* The sender refuses to put fds on a message that carries none. */
	struct hvt_msg m = {.type = HVT_MSG_HARVEST, .u.harvest.seq = 1, .nfds = 1};
	m.fds[0] = 0;
	assert_int_equal(hvt_msg_send(p->a, &m, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "stray"));
}

static void test_timeout(void **state)
{
	struct pair *p = *state;
	struct hvt_msg m;
	struct hvt_err err;
	uint64_t t0 = hvt_now_ns();

	assert_int_equal(hvt_msg_recv(p->b, &m, 50, &err), -ETIMEDOUT);
	uint64_t waited = hvt_now_ns() - t0;
	assert_true(waited >= 50000000ull);
	assert_true(waited < 1000000000ull);
}

struct late_rest {
	int sock;
	int pause_ms;
	const char *rest;
};

static void *send_rest_later(void *arg)
{
	struct late_rest *l = arg;

	usleep((useconds_t)l->pause_ms * 1000);
	if (l->rest)
		assert_int_equal(write(l->sock, l->rest, strlen(l->rest)), (ssize_t)strlen(l->rest));
	return NULL;
}

/* A frame begun is read whole across a pause longer than the caller's timeout (the caller's timeout only
 * bounds the wait for a frame's first byte), and the stream stays in step. */
static void test_frame_in_pieces(void **state)
{
	struct pair *p = *state;
	const char *json = "{\"type\":\"harvest\",\"seq\":7}";
	uint8_t head[4 + 6] = {(uint8_t)strlen(json), 0, 0, 0};
	struct late_rest l = {.sock = p->a, .pause_ms = 1200, .rest = json + 6};
	struct hvt_err err = {{0}};
	struct hvt_msg m;
	pthread_t t;

	memcpy(head + 4, json, 6);
	send_raw(p->a, head, sizeof(head), NULL, 0);
	assert_int_equal(pthread_create(&t, NULL, send_rest_later, &l), 0);
	if (hvt_msg_recv(p->b, &m, 100, &err))
		fail_msg("a frame paused for 1.2 s was not read whole: %s", err.msg);
	pthread_join(t, NULL);
	assert_int_equal(m.type, HVT_MSG_HARVEST);
	assert_int_equal(m.u.harvest.seq, 7);
	send_frame_text(p->a, "{\"type\":\"harvest\",\"seq\":8}", NULL, 0);
	recv_ok(p->b, &m);
	assert_int_equal(m.u.harvest.seq, 8);
}

/* A peer that stalls mid-frame longer than the documented pause is a protocol error, not a hang. */
static void test_frame_stalled(void **state)
{
	struct pair *p = *state;
	uint8_t half[6] = {10, 0, 0, 0, '{', '}'};
	uint64_t t0 = hvt_now_ns();

	send_raw(p->a, half, sizeof(half), NULL, 0);
	expect_recv_error(p->b, -EPROTO, "stalled in the middle of a frame (6 bytes read");
	uint64_t waited_ms = (hvt_now_ns() - t0) / 1000000;
	assert_true(waited_ms >= HVT_ATTACH_FRAME_PAUSE_MS);
	assert_true(waited_ms < HVT_ATTACH_FRAME_PAUSE_MS + 2000);
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void test_eintr(void **state)
{
	struct pair *p = *state;
	struct sigaction sa = {.sa_handler = on_alarm}, old;
	struct itimerval it = {.it_value = {0, 20000}};
	struct hvt_msg m;
	struct hvt_err err;

	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0); /* no SA_RESTART */
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	assert_int_equal(hvt_msg_recv(p->b, &m, 5000, &err), -EINTR);
	sigaction(SIGALRM, &old, NULL);
}

/* A frame far larger than the socket buffer: sendmsg goes out in pieces while the peer reads. */
struct big_send {
	int sock;
	struct hvt_msg *m;
	int rc;
};

static void *big_sender(void *arg)
{
	struct big_send *b = arg;
	struct hvt_err err;

	b->rc = hvt_msg_send(b->sock, b->m, &err);
	return NULL;
}

static void test_big_frame(void **state)
{
	struct pair *p = *state;
	struct hvt_msg m = {.type = HVT_MSG_LAYOUT}, r;
	struct hvt_layout *l = &m.u.layout.layout;
	struct big_send b = {.sock = p->a, .m = &m};
	pthread_t t;
	int fd = memfd_with("big");

	l->generation = 9;
	l->page_size = 4096;
	l->nslots = HVT_LAYOUT_MAX_SLOTS;
	l->slots = calloc(l->nslots, sizeof(*l->slots));
	assert_non_null(l->slots);
	for (uint32_t i = 0; i < l->nslots; i++)
		l->slots[i] = (struct hvt_memslot){.slot = i,
						   .gpa = (uint64_t)i << 30,
						   .size = 1ull << 29,
						   .backing = "anon",
						   .name = "a-long-name-0123456789"};
	m.u.layout.bitmap_bytes = hvt_layout_bitmap_bytes(l);
	m.nfds = 1;
	m.fds[0] = fd;
	assert_int_equal(pthread_create(&t, NULL, big_sender, &b), 0);
	recv_ok(p->b, &r);
	pthread_join(t, NULL);
	assert_int_equal(b.rc, 0);
	assert_int_equal(r.u.layout.layout.nslots, HVT_LAYOUT_MAX_SLOTS);
	assert_int_equal(r.u.layout.layout.slots[4095].gpa, 4095ull << 30);
	assert_int_equal(r.nfds, 1);
	expect_fd_content(r.fds[0], "big");
	hvt_msg_fini(&r);
	hvt_msg_fini(&m); /* closes fd */
}

/* ---- sockets ---- */

static void test_check_peer(void **state)
{
	struct pair *p = *state;
	pid_t pid = 0;
	uid_t uid = 12345;
	struct hvt_err err;

	assert_int_equal(hvt_attach_check_peer(p->b, &pid, &uid, &err), 0);
	assert_int_equal(pid, getpid());
	assert_int_equal(uid, geteuid());
	assert_int_equal(hvt_attach_check_peer(-1, NULL, NULL, &err), -EBADF);
}

static int count_entries(const char *d)
{
	DIR *dd = opendir(d);
	struct dirent *e;
	int n = 0;

	assert_non_null(dd);
	while ((e = readdir(dd)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(dd);
	return n;
}

static void test_listen_and_connect(void **state)
{
	char dir[] = "/tmp/hvt-attach-XXXXXX";
	char path[128], file[128];
	struct hvt_err err = {{0}};
	struct stat st;
	int l, c, s, fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/vm.sock", dir);
	snprintf(file, sizeof(file), "%s/file", dir);

	mode_t old = umask(0); /* the socket is 0600 whatever the umask */
	l = hvt_attach_listen(path, &err);
	umask(old);
	assert_true(l >= 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	/* set up under a name of its own and renamed into place: nothing else is left beside it */
	assert_int_equal(count_entries(dir), 1);

	/* A live listener is not replaced. */
	assert_int_equal(hvt_attach_listen(path, &err), -EADDRINUSE);
	assert_non_null(strstr(err.msg, path));
	s = accept(l, NULL, NULL); /* the probe that found it alive */
	assert_true(s >= 0);
	close(s);

	c = hvt_attach_connect(path, &err);
	assert_true(c >= 0);
	s = accept(l, NULL, NULL);
	assert_true(s >= 0);
	assert_int_equal(hvt_attach_check_peer(s, NULL, NULL, &err), 0);
	struct hvt_msg m = {.type = HVT_MSG_HARVEST, .u.harvest.seq = 3}, r;
	send_ok(c, &m);
	recv_ok(s, &r);
	assert_int_equal(r.u.harvest.seq, 3);
	close(s);
	close(c);
	close(l);

	/* The listener is gone, the file stays: it is stale and gets replaced. */
	l = hvt_attach_listen(path, &err);
	assert_true(l >= 0);
	close(l);
	unlink(path);

	/* Another kind of file is never replaced. */
	fd = open(file, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	assert_int_equal(hvt_attach_listen(file, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "not a socket"));
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_size, 4);
	unlink(file);

	assert_int_equal(hvt_attach_connect(path, &err), -ENOENT);
	assert_non_null(strstr(err.msg, path));

	/* A path with no room beside it for the temporary name is bound in place, the same in the end. */
	int n = snprintf(path, sizeof(path), "%s/", dir);
	memset(path + n, 's', 104 - (size_t)n);
	path[104] = 0;
	l = hvt_attach_listen(path, &err);
	assert_true(l >= 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(count_entries(dir), 1);
	c = hvt_attach_connect(path, &err);
	assert_true(c >= 0);
	close(c);
	close(l);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_hello_round_trip, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_attach_round_trip, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_attached_passes_memfd, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_layout_round_trip_and_fd_order, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_harvest_bye_error_round_trip, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_unknown_members_ignored, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_long_free_text_is_cut, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_bad_lengths, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_not_json, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_bad_types_and_fields, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_eof, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_eof_in_length, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_eof_at_boundary, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_stray_fd_closed, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_fd_count_rules, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_timeout, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_frame_in_pieces, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_frame_stalled, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_guest_ram_bound, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_eintr, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_big_frame, setup_pair, teardown_pair),
	    cmocka_unit_test_setup_teardown(test_check_peer, setup_pair, teardown_pair),
	    cmocka_unit_test(test_listen_and_connect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
