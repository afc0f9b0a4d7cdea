// SPDX-License-Identifier: MIT
/*
 * chanmap verify: after rebooting with memmap=SIZE$START, checks each reservation the way the QEMU devmem
 * backend will use it: in /proc/iomem as Reserved, not System RAM, not claimed by a driver, and mappable
 * through /dev/mem (cached, no O_SYNC); with --write-test it also writes and reads back a page per 64 MiB
 * (restoring what was there), which proves the range is really backed by memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/iomem.h"
#include "hvmtrace/util.h"

#define PAGE 4096u

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: chanmap verify [options]\n"
	    "\n"
	    "  -r, --range SIZE$START  a reservation to check (repeatable; default: every memmap=SIZE$START\n"
	    "                          of the running kernel's command line)\n"
	    "  -m, --map FILE          also name each range's channel from this map (it must lie in one)\n"
	    "  -w, --write-test        write and read back one page per 64 MiB (content restored); do not\n"
	    "                          use on memory a running VM owns\n"
	    "      --cmdline FILE      kernel command line to read (default " HVT_CMDLINE ")\n"
	    "      --iomem FILE        resource map (default " HVT_IOMEM_PATH
	    "; tests: only with a --mem-path\n"
	    "                          that is not a character device)\n"
	    "      --mem-path FILE     what to map (default /dev/mem; tests: a regular file)\n"
	    "\n"
	    "Exit status: 0 every range passes; 1 a range fails (the reason is printed); 2 bad arguments or\n"
	    "nothing to check.\n");
}

struct opts {
	const char *map, *cmdline, *iomem, *mem;
	bool write_test;
	struct hvt_range *ranges;
	size_t nranges;
};

/* Maps the range and reads (and with write_test, writes back) a page per 64 MiB and the last page. */
static int check_mapping(const struct opts *o, int fd, const struct hvt_range *r, char *what, size_t len)
{
	void *va = mmap(NULL, r->size, PROT_READ | (o->write_test ? PROT_WRITE : 0), MAP_SHARED, fd,
			(off_t)r->start);
	unsigned pages = 0, bad = 0;

	if (va == MAP_FAILED) {
		snprintf(what, len, "cannot be mapped through %s: %s", o->mem, strerror(errno));
		return 1;
	}
	for (uint64_t off = 0;; off += HVT_CHANMAP_GRANULE) {
		if (off >= r->size)
			off = r->size - PAGE; /* and the last page */
		volatile uint64_t *p = (volatile uint64_t *)((char *)va + off);
		uint64_t saved = p[0], pattern = 0xa5c3e1f00f1e3c5aull ^ (r->start + off);
		if (o->write_test) {
			p[0] = pattern;
			bad += p[0] != pattern;
			p[0] = saved;
		}
		pages++;
		if (off == r->size - PAGE)
			break;
	}
	munmap(va, r->size);
	if (bad) {
		snprintf(what, len,
			 "mapped, but %u of %u pages did not keep what was written: no memory there", bad,
			 pages);
		return 1;
	}
	snprintf(what, len, "mapped through %s, %u pages %s", o->mem, pages,
		 o->write_test ? "written and read back" : "read");
	return 0;
}

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option opts[] = {
	    {"range", required_argument, NULL, 'r'}, {"map", required_argument, NULL, 'm'},
	    {"write-test", no_argument, NULL, 'w'},  {"cmdline", required_argument, NULL, 'C'},
	    {"iomem", required_argument, NULL, 'I'}, {"mem-path", required_argument, NULL, 'M'},
	    {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
	};
	struct hvt_err err;
	int c;

	*o = (struct opts){.cmdline = HVT_CMDLINE, .mem = "/dev/mem"};
	while ((c = getopt_long(argc, argv, "r:m:wh", opts, NULL)) != -1) {
		switch (c) {
		case 'r': {
			char arg[300];
			struct hvt_range *one;
			size_t n;
			snprintf(arg, sizeof(arg), "memmap=%s", optarg);
			if (hvt_memmap_parse_cmdline(arg, &one, &n, &err) || n != 1) {
				fprintf(stderr,
					"chanmap verify: --range '%s' is not SIZE$START (as in "
					"memmap=16G$0x900000000)\n",
					optarg);
				if (!n)
					free(one);
				return 2;
			}
			struct hvt_range *nr = realloc(o->ranges, (o->nranges + 1) * sizeof(*nr));
			if (!nr) {
				free(one);
				return 2;
			}
			o->ranges = nr;
			nr[o->nranges++] = one[0];
			free(one);
			break;
		}
		case 'm':
			o->map = optarg;
			break;
		case 'w':
			o->write_test = true;
			break;
		case 'C':
			o->cmdline = optarg;
			break;
		case 'I':
			o->iomem = optarg;
			break;
		case 'M':
			o->mem = optarg;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	return 0;
}

static int ranges_from_cmdline(struct opts *o)
{
	struct hvt_err err;
	char buf[8192];
	int rc = hvt_read_text(o->cmdline, buf, sizeof(buf), NULL);
	if (rc) {
		fprintf(stderr, "chanmap verify: cannot read %s: %s\n", o->cmdline, strerror(-rc));
		return 2;
	}
	if (hvt_memmap_parse_cmdline(buf, &o->ranges, &o->nranges, &err)) {
		fprintf(stderr, "chanmap verify: %s: %s\n", o->cmdline, err.msg);
		return 2;
	}
	if (!o->nranges) {
		fprintf(stderr,
			"chanmap verify: %s has no memmap=SIZE$START reservation; boot with the argument "
			"chanmap reserve printed, or name one with --range\n",
			o->cmdline);
		return 2;
	}
	return 0;
}

int cmd_verify(int argc, char **argv)
{
	struct opts o;
	struct hvt_iomem io;
	struct hvt_chanmap m;
	struct hvt_err err;
	struct stat st;
	int rc = parse(argc, argv, &o), failed = 0;

	if (rc || (!o.nranges && (rc = ranges_from_cmdline(&o)))) {
		free(o.ranges);
		return rc == 1 ? 0 : rc;
	}
	int fd = open(o.mem, (o.write_test ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "chanmap verify: cannot open %s: %s%s\n", o.mem, strerror(errno),
			errno == EPERM || errno == EACCES
			    ? " (it needs root with CAP_SYS_RAWIO, and no kernel lockdown: "
			      "Secure Boot locks /dev/mem)"
			    : "");
		free(o.ranges);
		return 1;
	}
	bool chardev = S_ISCHR(st.st_mode);
	if (o.iomem && chardev) {
		fprintf(
		    stderr,
		    "chanmap verify: --iomem is for tests with a regular --mem-path file; %s is a device, "
		    "so it is checked against the real " HVT_IOMEM_PATH "\n",
		    o.mem);
		o.iomem = NULL;
	}
	if (hvt_iomem_read(o.iomem, &io, &err) || (o.map && hvt_chanmap_read(o.map, &m, &err))) {
		fprintf(stderr, "chanmap verify: %s\n", err.msg);
		close(fd);
		free(o.ranges);
		return 2;
	}
	if (!chardev)
		printf("(test run: %s is a regular file, not /dev/mem; resources from %s)\n", o.mem,
		       io.source);
	for (size_t i = 0; i < o.nranges; i++) {
		const struct hvt_range *r = &o.ranges[i];
		char arg[64], what[sizeof(err.msg)] = "", chan[HVT_CHANNEL_MAX + 16] = "";
		int bad;
		hvt_memmap_format(r->start, r->size, arg, sizeof(arg));
		if ((bad = hvt_iomem_check_extent(&io, r->start, r->size, &err) != 0))
			snprintf(what, sizeof(what), "%s", err.msg);
		else if (!chardev && (uint64_t)st.st_size < r->start + r->size)
			bad = snprintf(what, sizeof(what), "%s is only %jd bytes long", o.mem,
				       (intmax_t)st.st_size) > 0;
		else
			bad = check_mapping(&o, fd, r, what, sizeof(what));
		if (!bad && o.map) {
			int ci = hvt_chanmap_channel_of(&m, r->start, r->size, &err);
			if (ci < 0)
				bad = snprintf(what, sizeof(what), "%s", err.msg) > 0;
			else
				snprintf(chan, sizeof(chan), ", channel %s", m.channels[ci].id);
		}
		printf("%s memmap=%s: %s%s%s\n", bad ? "FAIL" : "ok  ", arg,
		       bad ? "" : "Reserved, not busy, ", what, chan);
		failed += bad;
	}
	if (o.map)
		hvt_chanmap_free(&m);
	hvt_iomem_free(&io);
	close(fd);
	free(o.ranges);
	return failed ? 1 : 0;
}
