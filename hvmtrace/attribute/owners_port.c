// SPDX-License-Identifier: MIT
/* The guest agent's port on the host (owners_port.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "attribute/owners_port.h"
#include "attribute/owners_snapshot.h"
#include "hvmtrace/owners_format.h"
#include "hvmtrace/util.h"

#define READ_CHUNK      (256u << 10) /* bytes one read takes: the work one wake does is bounded */
#define RECONNECT_NS    1000000000ull
#define MIN_READ_BUDGET (1ull << 20)
#define RECORD_OVERHEAD 64 /* an OWNERS record's header, fixed fields and padding */

uint64_t owners_port_memory(uint64_t max_bytes)
{
	uint64_t body = max_bytes > HVT_OWN_HEADER_BYTES ? max_bytes - HVT_OWN_HEADER_BYTES : 0;

	return max_bytes + owners_parse_peak_bytes(body) + max_bytes + RECORD_OVERHEAD;
}

/* The bytes read in one interval, at most: two snapshots at the bound, or a megabyte. */
static uint64_t read_budget(const struct owners_port *p)
{
	uint64_t two = 2 * (uint64_t)p->st.cap;

	return two > MIN_READ_BUDGET ? two : MIN_READ_BUDGET;
}

static void say(struct owners_port *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct owners_port *p, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hvmtrace record: owners port %s: ", p->path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Connects, and keeps the connection only if the peer is the VMM. */
static void try_connect(struct owners_port *p)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd;

	p->next_connect_ns = hvt_now_ns() + RECONNECT_NS;
	if (strlen(p->path) >= sizeof(a.sun_path)) {
		if (!p->warned_unreachable)
			say(p,
			    "warning: the path is longer than %zu bytes; recording without owners snapshots",
			    sizeof(a.sun_path) - 1);
		p->warned_unreachable = true;
		return;
	}
	memcpy(a.sun_path, p->path, strlen(p->path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		if (!p->warned_unreachable)
			say(p,
			    "warning: cannot connect (%s); recording goes on, and connecting is tried again "
			    "each second",
			    strerror(e));
		p->warned_unreachable = true;
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) || cred.pid != p->vmm_pid) {
		if (!p->refused_peer)
			say(p,
			    "refused: the process at the other end is pid %d, not the VMM whose memory is "
			    "traced (pid %d); its bytes are not read",
			    clen == sizeof(cred) ? (int)cred.pid : -1, (int)p->vmm_pid);
		p->refused_peer = true;
		close(fd);
		return;
	}
	p->fd = fd;
	if (p->ever_connected)
		say(p, "connected again");
	p->ever_connected = true;
}

int owners_port_open(struct owners_port *p, const char *path, pid_t vmm_pid, uint64_t max_bytes,
		     owners_store_fn store, void *ctx)
{
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	p->path = path;
	p->vmm_pid = vmm_pid;
	p->store = store;
	p->ctx = ctx;
	if (owners_stream_init(&p->st, max_bytes - HVT_OWN_HEADER_BYTES))
		return -ENOMEM;
	try_connect(p);
	return 0;
}

void owners_port_close(struct owners_port *p)
{
	/* a snapshot begun (or whole, waiting for an interval) that the trace will not have */
	if (p->st.buf && p->st.len - p->st.start >= 8 && !memcmp(p->st.buf + p->st.start, HVT_OWN_MAGIC, 8))
		p->dropped++;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	owners_stream_fini(&p->st);
}

int owners_port_pollfd(struct owners_port *p, uint64_t now_ns, uint64_t deadline_ns, uint64_t interval_ns)
{
	if (p->fd < 0 && !p->refused_peer && p->st.buf && now_ns >= p->next_connect_ns)
		try_connect(p);
	if (p->fd < 0 || p->stored_now || p->checked_now >= OWNERS_PORT_CHECKS_PER_INTERVAL ||
	    p->read_now >= read_budget(p))
		return -1;
	if (deadline_ns <= now_ns || deadline_ns - now_ns < interval_ns / 4)
		return -1;
	return p->fd;
}

static void refuse(struct owners_port *p, const char *why)
{
	p->refused++;
	if (p->logged < OWNERS_PORT_REFUSALS_LOGGED)
		say(p, "snapshot %" PRIu64 " refused: %s%s", p->st.frames, why,
		    ++p->logged == OWNERS_PORT_REFUSALS_LOGGED ? " (later refusals are counted, not logged)"
							       : "");
}

struct span {
	uint64_t first, end; /* GFNs [first, end) */
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/* The layout's slots as GFN spans, sorted, adjacent ones merged; *n of them, NULL when out of memory. */
static struct span *guest_spans(const struct hvt_layout *l, size_t *n)
{
	struct span *v = malloc((l->nslots + 1) * sizeof(*v));

	*n = 0;
	if (!v)
		return NULL;
	for (uint32_t i = 0; i < l->nslots; i++)
		v[i] = (struct span){l->slots[i].gpa / l->page_size,
				     (l->slots[i].gpa + l->slots[i].size) / l->page_size};
	qsort(v, l->nslots, sizeof(*v), cmp_span);
	for (uint32_t i = 0; i < l->nslots; i++) {
		if (*n && v[*n - 1].end >= v[i].first) {
			if (v[i].end > v[*n - 1].end)
				v[*n - 1].end = v[i].end;
		} else {
			v[(*n)++] = v[i];
		}
	}
	return v;
}

/* Every run of s inside l's slots (a binary search a run); 0, or why not. */
static int check_inside(const struct owners_snapshot *s, const struct hvt_layout *l, char *why, size_t len)
{
	size_t n;
	struct span *v;
	int rc = 0;

	if (s->page_size != l->page_size) {
		snprintf(why, len, "page size %" PRIu32 ", the guest's is %" PRIu32, s->page_size,
			 l->page_size);
		return -EINVAL;
	}
	v = guest_spans(l, &n);
	if (!v) {
		snprintf(why, len, "out of memory to check it");
		return -ENOMEM;
	}
	for (size_t o = 0; o < s->nowners && !rc; o++) {
		const struct owner *w = &s->owners[o];

		for (size_t k = 0; k < w->nruns && !rc; k++) {
			const struct hvt_run *r = &s->runs[w->first_run + k];
			size_t lo = 0, hi = n; /* the last span starting at or before the run */

			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;

				if (v[mid].first <= r->first)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo && r->first + r->count <= v[lo - 1].end)
				continue;
			snprintf(why, len,
				 "owner %zu (%s) names PFN %#" PRIx64
				 ", outside the guest's memory (the layout's slots)",
				 o, w->type == HVT_OWN_KIND ? owners_kind_name(w->kind) : w->name,
				 lo && r->first < v[lo - 1].end ? v[lo - 1].end : r->first);
			rc = -EINVAL;
		}
	}
	free(v);
	return rc;
}

/* The frames the buffer holds, while this interval may take one. */
static int split(struct owners_port *p, const struct hvt_layout *l, uint64_t at_ns, struct hvt_err *err)
{
	while (!p->stored_now && p->checked_now < OWNERS_PORT_CHECKS_PER_INTERVAL) {
		const uint8_t *frame;
		size_t len, used;
		char why[sizeof(((struct hvt_err *)0)->msg)], name[80];
		struct owners_snapshot s;
		struct hvt_err perr = {{0}};
		int rc;

		switch (owners_stream_next(&p->st, &frame, &len, why, sizeof(why))) {
		case OWNERS_MORE:
			return 0;
		case OWNERS_REFUSED:
			refuse(p, why);
			continue;
		case OWNERS_FRAME:
			break;
		}
		p->checked_now++;
		snprintf(name, sizeof(name), "snapshot %" PRIu64, p->st.frames);
		rc = owners_parse(name, frame, len, &used, &s, &perr);
		if (rc == -ENOMEM) {
			owners_stream_done(&p->st, false);
			refuse(p, "out of memory to check it");
			continue;
		}
		if (!rc) {
			rc = check_inside(&s, l, why, sizeof(why));
			owners_free(&s);
		} else { /* the reader's message begins with the name */
			snprintf(why, sizeof(why), "%s", perr.msg + strlen(name) + 2);
		}
		if (rc) {
			owners_stream_done(&p->st, false);
			refuse(p, why);
			continue;
		}
		rc = p->store(p->ctx, at_ns, frame, len, err);
		owners_stream_done(&p->st, true);
		if (rc)
			return rc;
		p->stored++;
		p->stored_bytes += len;
		p->stored_now = true;
	}
	return 0;
}

int owners_port_read(struct owners_port *p, const struct hvt_layout *l, struct hvt_err *err)
{
	uint64_t left = read_budget(p) - p->read_now;
	size_t room;
	uint8_t *at = owners_stream_room(&p->st, &room);
	ssize_t n;

	if (p->fd < 0)
		return 0;
	if (room > READ_CHUNK)
		room = READ_CHUNK;
	if (room > left)
		room = (size_t)left;
	if (!room) /* a whole frame waits for the next interval */
		return 0;
	n = read(p->fd, at, room);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		bool partial = p->st.len > p->st.start;

		say(p, "warning: %s after %" PRIu64 " snapshots stored%s; recording goes on without it",
		    n ? strerror(errno) : "closed by the guest's side", p->stored,
		    partial ? " (the one it was sending is lost)" : "");
		p->dropped += partial;
		p->closes++;
		close(p->fd);
		p->fd = -1;
		p->st.start = p->st.len = 0; /* a new connection starts a new stream */
		p->next_connect_ns = hvt_now_ns() + RECONNECT_NS;
		return 0;
	}
	owners_stream_fill(&p->st, (size_t)n);
	p->read_now += (uint64_t)n;
	p->bytes_read += (uint64_t)n;
	p->last_read_ns = hvt_now_ns();
	return split(p, l, p->last_read_ns, err);
}

int owners_port_next_interval(struct owners_port *p, const struct hvt_layout *l, struct hvt_err *err)
{
	p->read_now = 0;
	p->checked_now = 0;
	p->stored_now = false;
	if (!p->st.buf)
		return 0;
	/* what waits in the buffer was complete when the last read brought it */
	return split(p, l, p->last_read_ns, err);
}
