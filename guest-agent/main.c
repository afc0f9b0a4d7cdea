// SPDX-License-Identifier: MIT
/*
 * hvmtrace-guest: the guest agent (docs/attribution.md). Run as root in a Linux guest, it writes snapshots of
 * who owns which guest-physical page (processes, and the kind of every page) to a file, stdout, or a
 * virtio-serial port's character device: once, or every N seconds and on SIGUSR1.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "hvmtrace/owners_format.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	if (sig != SIGUSR1)
		stop = 1;
}

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: hvmtrace-guest [-o PATH] [--every SECONDS [--count N]] [--max-vma BYTES] [-v]\n"
	    "  -o PATH          where snapshots go: a file (replaced), a virtio-serial port\n"
	    "                   (/dev/virtio-ports/NAME), or - for stdout (default)\n"
	    "  --every SECONDS  a snapshot every SECONDS, and at once on SIGUSR1 (default: one, then exit)\n"
	    "  --count N        stop after N snapshots (default: until SIGTERM or SIGINT)\n"
	    "  --max-vma BYTES  mappings larger than this are not scanned; their process is marked\n"
	    "                   partial (default 17179869184, 16 GiB)\n"
	    "  --proc DIR, --kpageflags PATH, --iomem PATH   where to read (default /proc,\n"
	    "                   /proc/kpageflags, /proc/iomem: pages outside its System RAM are left out)\n"
	    "  -v               per process and per snapshot figures on stderr\n"
	    "Needs root (CAP_SYS_ADMIN): the kernel hides PFNs from others. Format: docs/attribution.md.\n");
}

static int open_out(const char *path)
{
	struct stat st;

	if (!strcmp(path, "-"))
		return STDOUT_FILENO;
	if (!stat(path, &st) && !S_ISREG(st.st_mode))
		return open(path, O_WRONLY | O_CLOEXEC); /* a port or a FIFO: written as it is */
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

/* 0, or -1 with errno; EINTR when told to stop before or while a write waited (a port nobody on the host
 * has open holds writes, a FIFO nobody reads too), the snapshot then unsent or cut short. */
static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = stop ? (errno = EINTR, -1) : write(fd, p, n);

		if (w < 0 && errno == EINTR && !stop)
			continue; /* SIGUSR1 while writing: this snapshot is the one asked for */
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One snapshot, written whole: 0; 1 when told to stop while it waited to be written; -1 after saying why. */
static int snapshot(int fd, const char *out, const char *proc, const char *kpf, const struct agent_opts *o,
		    struct obuf *b)
{
	uint32_t page_size = (uint32_t)sysconf(_SC_PAGESIZE), nowners = 0;
	uint64_t runs_total, t0 = now_ns(CLOCK_MONOTONIC), cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	uint16_t flags = 0;
	struct agent_stats st = {0};

	snapshot_begin(b, page_size, now_ns(CLOCK_REALTIME));
	if (scan_kinds(b, kpf, &o->ram, &nowners, &st))
		return -1;
	runs_total = st.kind_runs;
	if (scan_processes(b, proc, o, page_size, &nowners, &runs_total, &flags, &st))
		return -1;
	snapshot_end(b, nowners, flags);
	if (b->fail) {
		fprintf(stderr, "hvmtrace-guest: out of memory\n");
		return -1;
	}
	if (write_all(fd, b->p, b->n)) {
		if (errno == EINTR) { /* told to stop: not a failure */
			fprintf(
			    stderr,
			    "hvmtrace-guest: stopped with a snapshot of %zu bytes not (all) written to %s\n",
			    b->n, out);
			return 1;
		}
		fprintf(stderr, "hvmtrace-guest: writing %s: %s\n", out, strerror(errno));
		return -1;
	}
	if (o->verbose)
		fprintf(
		    stderr,
		    "hvmtrace-guest: snapshot of %u owners (%u processes, %u partial, %u gone), %llu pages "
		    "(%llu not RAM), %llu kind runs, %llu process runs: %zu bytes in %.3f s (%.3f s CPU)%s\n",
		    nowners, st.procs, st.procs_partial, st.procs_gone, (unsigned long long)st.pages_scanned,
		    (unsigned long long)st.pages_not_ram, (unsigned long long)st.kind_runs,
		    (unsigned long long)st.process_runs, b->n, (now_ns(CLOCK_MONOTONIC) - t0) / 1e9,
		    (now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0) / 1e9,
		    flags & HVT_OWN_TRUNCATED ? ", truncated" : "");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
	    {"every", required_argument, NULL, 'e'},
	    {"count", required_argument, NULL, 'c'},
	    {"max-vma", required_argument, NULL, 'm'},
	    {"proc", required_argument, NULL, 'p'},
	    {"kpageflags", required_argument, NULL, 'k'},
	    {"iomem", required_argument, NULL, 'i'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct agent_opts o = {.max_vma_bytes = 16ull << 30};
	const char *out = "-", *proc = "/proc", *kpf = "/proc/kpageflags", *iomem = "/proc/iomem";
	double every = 0;
	unsigned long count = 0, done = 0;
	struct obuf b = {0};
	struct sigaction sa = {.sa_handler = on_signal};
	int c, fd, rc = 0;
	char *end;

	while ((c = getopt_long(argc, argv, "o:vh", longs, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'e':
			every = strtod(optarg, &end);
			if (*end || !(every > 0) || every > 86400) {
				fprintf(stderr,
					"hvmtrace-guest: --every %s: not a number of seconds (0 to 86400)\n",
					optarg);
				return 2;
			}
			break;
		case 'c':
			count = strtoul(optarg, &end, 10);
			if (*end || !count) {
				fprintf(stderr, "hvmtrace-guest: --count %s: not a positive number\n",
					optarg);
				return 2;
			}
			break;
		case 'm':
			o.max_vma_bytes = strtoull(optarg, &end, 10);
			if (*end || !o.max_vma_bytes) {
				fprintf(stderr,
					"hvmtrace-guest: --max-vma %s: not a positive number of bytes\n",
					optarg);
				return 2;
			}
			break;
		case 'p':
			proc = optarg;
			break;
		case 'k':
			kpf = optarg;
			break;
		case 'i':
			iomem = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || (count && !every)) {
		fprintf(stderr, "hvmtrace-guest: %s\n",
			optind < argc ? "unexpected operand" : "--count needs --every");
		return 2;
	}
	if (ram_map_read(&o.ram, iomem, (uint32_t)sysconf(_SC_PAGESIZE))) {
		fprintf(stderr, "hvmtrace-guest: out of memory\n");
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	fd = open_out(out);
	if (fd < 0) {
		fprintf(stderr, "hvmtrace-guest: %s: %s\n", out, strerror(errno));
		return 1;
	}
	do {
		struct timespec ts = {(time_t)every, (long)((every - (double)(time_t)every) * 1e9)};

		int taken = snapshot(fd, out, proc, kpf, &o, &b);

		if (taken) {
			rc = taken < 0;
			break;
		}
		done++;
		if (!every || (count && done >= count))
			break;
		nanosleep(&ts, NULL); /* SIGUSR1 ends it early: a snapshot on request */
	} while (!stop);
	free(b.p);
	free(o.ram.v);
	if (fd != STDOUT_FILENO && close(fd)) {
		fprintf(stderr, "hvmtrace-guest: closing %s: %s\n", out, strerror(errno));
		rc = 1;
	}
	return rc;
}
