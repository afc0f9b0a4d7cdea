// SPDX-License-Identifier: MIT
/*
 * owners_serve: the guest agent's port as QEMU serves it, for record --owners-port's tests. It listens on a
 * unix stream socket and, to one connection, sends the items given, in order:
 *   FILE        the file's bytes, as they are (snapshots, garbage, lies: whatever the test wrote)
 *   wait:N      nothing until the JSON Lines of --follow hold N more intervals than when the item before
 *               ended
 *   close       close the connection and take the next one (the port closed and opened again)
 * then waits for 3 more intervals, closes, creates --done FILE, with --stop-peer sends SIGINT to the tracer
 * that connected (its pid from SO_PEERCRED), and exits (status 0; 1 on a failure, with a line saying which).
 *
 *   owners_serve SOCK --follow JSONL --done FILE [--stop-peer] ITEM... [-- VMM ARGS...]
 *
 * With "-- VMM ARGS", the process that listened becomes the VMM (exec), and a child serves the socket: the
 * peer's credentials (SO_PEERCRED, taken at listen) are the VMM's, as with QEMU's chardev. Without it the
 * port's peer is this process, which a tracer must refuse.
 */
#include <errno.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define TIMEOUT_S 180

static const char *follow, *done;
static bool stop_peer;
static pid_t peer;

static void die(const char *what)
{
	fprintf(stderr, "owners_serve: %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
	exit(1);
}

static long lines(void)
{
	FILE *f = fopen(follow, "r");
	long n = 0;
	int ch;

	if (!f)
		return 0;
	while ((ch = getc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* Until the JSON Lines hold n more lines than *base; *base moves on. */
static void wait_intervals(long *base, long n)
{
	time_t give_up = time(NULL) + TIMEOUT_S;

	while (lines() < *base + n) {
		if (time(NULL) > give_up) {
			errno = 0;
			die("timed out waiting for intervals (is the tracer running?)");
		}
		usleep(20000);
	}
	*base = lines();
}

static void send_file(int c, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char buf[1 << 16];
	ssize_t n;

	if (fd < 0)
		die(path);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t at = 0; at < n;) {
			ssize_t w = write(c, buf + at, (size_t)(n - at));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				die("writing to the tracer");
			at += w;
		}
	if (n < 0)
		die(path);
	close(fd);
}

static int take(int l)
{
	int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (c < 0)
		die("accept");
	if (!getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		peer = cred.pid;
	return c;
}

static void serve(int l, char **items, int nitems)
{
	long base = lines();
	int c = take(l);

	for (int i = 0; i < nitems; i++) {
		if (!strncmp(items[i], "wait:", 5)) {
			wait_intervals(&base, atol(items[i] + 5));
		} else if (!strcmp(items[i], "close")) {
			close(c);
			c = take(l);
			base = lines();
		} else {
			send_file(c, items[i]);
			base = lines(); /* waits count from the item's end */
		}
	}
	wait_intervals(&base, 3);
	close(c);
	int fd = open(done, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(done);
	close(fd);
	if (stop_peer && peer > 0 && kill(peer, SIGINT))
		die("stopping the tracer");
}

int main(int argc, char **argv)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int l, first_item = 2, nitems = 0;
	char **vmm = NULL;

	signal(SIGPIPE, SIG_IGN);
	if (argc < 2)
		goto usage;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--follow") && i + 1 < argc) {
			follow = argv[++i];
			first_item = i + 1;
		} else if (!strcmp(argv[i], "--done") && i + 1 < argc) {
			done = argv[++i];
			first_item = i + 1;
		} else if (!strcmp(argv[i], "--stop-peer")) {
			stop_peer = true;
			first_item = i + 1;
		} else if (!strcmp(argv[i], "--")) {
			vmm = argv + i + 1;
			break;
		} else {
			nitems++;
		}
	}
	if (!follow || !done || (vmm && !vmm[0]) || strlen(argv[1]) >= sizeof(a.sun_path))
		goto usage;
	memcpy(a.sun_path, argv[1], strlen(argv[1]) + 1);
	unlink(argv[1]);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4))
		die(argv[1]);
	if (vmm) {
		pid_t child = fork();

		if (child < 0)
			die("fork");
		if (child > 0) { /* the listener becomes the VMM */
			close(l);
			execv(vmm[0], vmm);
			die(vmm[0]);
		}
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* the VMM gone, the port goes too */
	}
	serve(l, argv + first_item, nitems);
	unlink(argv[1]);
	return 0;
usage:
	fprintf(
	    stderr,
	    "usage: owners_serve SOCK --follow JSONL --done FILE [--stop-peer] ITEM... [-- VMM ARGS...]\n");
	return 2;
}
