// SPDX-License-Identifier: MIT
/*
 * chanmap verify: after rebooting with memmap=SIZE$START, checks each reservation the way the QEMU devmem
 * backend will use it: in /proc/iomem as Reserved, not System RAM, not claimed by a driver, and mappable
 * through /dev/mem (cached, no O_SYNC); with --write-test it also writes and reads back a page per 64 MiB
 * (restoring what was there), which proves the range is really backed by memory.
 */
#include <errno.h>
#include <fcntl.h>
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
#include "hvmtrace/options.h"

#define PAGE 4096u

/* chanmap verify's exit statuses, as its --help lists them. */
enum verify_exit {
	VERIFY_OK = 0,     /* every range passes */
	VERIFY_FAILED = 1, /* a range fails; the reason is printed */
	VERIFY_USAGE = 2,  /* bad arguments, or nothing to check */
};

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

static int range_arg(const struct hvt_option *opt, const char *v, char *problem, size_t len)
{
	struct opts *o = opt->value;
	struct hvt_range *one = NULL, *nr;
	struct hvt_err err;
	char arg[300];
	size_t n = 0;

	snprintf(arg, sizeof(arg), "memmap=%s", v);
	if (hvt_memmap_parse_cmdline(arg, &one, &n, &err) || n != 1) {
		snprintf(problem, len, "it is not SIZE$START (as in memmap=16G$0x900000000)");
		free(one); /* NULL after a failure; two ranges or none after a success */
		return -1;
	}
	nr = realloc(o->ranges, (o->nranges + 1) * sizeof(*nr));
	if (!nr) {
		free(one);
		snprintf(problem, len, "out of memory");
		return -1;
	}
	o->ranges = nr;
	nr[o->nranges++] = one[0];
	free(one);
	return 0;
}

/* HVT_OPTS_RUN to check; otherwise the status to exit with (0 after --help). */
static int parse(int argc, char **argv, struct opts *o)
{
	static const struct hvt_exit_status exits[] = {
	    {VERIFY_OK, "every range passes"},
	    {VERIFY_FAILED, "a range fails (the reason is printed)"},
	    {VERIFY_USAGE, "bad arguments, or nothing to check"},
	    {0, NULL},
	};
	const struct hvt_option opts[] = {
	    HVT_OPT_CALLBACK('r', "range", o, range_arg, "SIZE$START",
			     "a reservation to check (repeatable; default: every memmap=SIZE$START\n"
			     "of the running kernel's command line)"),
	    HVT_OPT_PATH('m', "map", &o->map, "FILE",
			 "also name each range's channel from this map (it must lie in one)"),
	    HVT_OPT_FLAG('w', "write-test", &o->write_test,
			 "write and read back one page per 64 MiB (content restored); do not\n"
			 "use on memory a running VM owns"),
	    HVT_OPT_PATH(0, "cmdline", &o->cmdline, "FILE",
			 "kernel command line to read (default " HVT_CMDLINE ")"),
	    HVT_OPT_PATH(0, "iomem", &o->iomem, "FILE",
			 "resource map (default " HVT_IOMEM_PATH "; tests: only with a --mem-path\n"
			 "that is not a character device)"),
	    HVT_OPT_PATH(0, "mem-path", &o->mem, "FILE",
			 "what to map (default /dev/mem; tests: a regular file)"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "chanmap verify",
	    .synopsis = "[options]",
	    .options = opts,
	    .exits = exits,
	    .usage_status = VERIFY_USAGE,
	};

	*o = (struct opts){.cmdline = HVT_CMDLINE, .mem = "/dev/mem"};
	return hvt_opts_parse(&cmd, argc, argv);
}

static int ranges_from_cmdline(struct opts *o)
{
	struct hvt_err err;
	char buf[8192];
	int rc = hvt_read_text(o->cmdline, buf, sizeof(buf), NULL);
	if (rc) {
		fprintf(stderr, "chanmap verify: cannot read %s: %s\n", o->cmdline, strerror(-rc));
		return VERIFY_USAGE;
	}
	if (hvt_memmap_parse_cmdline(buf, &o->ranges, &o->nranges, &err)) {
		fprintf(stderr, "chanmap verify: %s: %s\n", o->cmdline, err.msg);
		return VERIFY_USAGE;
	}
	if (!o->nranges) {
		fprintf(
		    stderr,
		    "chanmap verify: %s has no memmap=SIZE$START reservation; boot with the argument chanmap reserve printed, or name one with --range\n",
		    o->cmdline);
		return VERIFY_USAGE;
	}
	return VERIFY_OK;
}

int cmd_verify(int argc, char **argv)
{
	struct opts o;
	struct hvt_iomem io;
	struct hvt_chanmap m;
	struct hvt_err err;
	struct stat st;
	int rc = parse(argc, argv, &o), failed = 0;

	if (rc != HVT_OPTS_RUN || (!o.nranges && (rc = ranges_from_cmdline(&o)))) {
		free(o.ranges);
		return rc;
	}
	int fd = open(o.mem, (o.write_test ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(
		    stderr, "chanmap verify: cannot open %s: %s%s\n", o.mem, strerror(errno),
		    errno == EPERM || errno == EACCES
			? " (it needs root with CAP_SYS_RAWIO, and no kernel lockdown: Secure Boot locks /dev/mem)"
			: "");
		free(o.ranges);
		return VERIFY_FAILED;
	}
	bool chardev = S_ISCHR(st.st_mode);
	if (o.iomem && chardev) {
		fprintf(
		    stderr,
		    "chanmap verify: --iomem is for tests with a regular --mem-path file; %s is a device, so it is checked against the real " HVT_IOMEM_PATH
		    "\n",
		    o.mem);
		o.iomem = NULL;
	}
	if (hvt_iomem_read(o.iomem, &io, &err) || (o.map && hvt_chanmap_read(o.map, &m, &err))) {
		fprintf(stderr, "chanmap verify: %s\n", err.msg);
		close(fd);
		free(o.ranges);
		return VERIFY_USAGE;
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
	return failed ? VERIFY_FAILED : VERIFY_OK;
}
