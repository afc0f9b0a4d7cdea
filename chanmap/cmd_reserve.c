// SPDX-License-Identifier: MIT
/*
 * chanmap reserve: the memmap=SIZE$START kernel argument that takes a channel's memory away from Linux so
 * the QEMU devmem backend can give it to a VM, in the three spellings users need (kernel command line,
 * /etc/default/grub, grub.cfg). Refuses what would not work: a range that crosses into another channel or an
 * interleaved region, that is not all RAM in the firmware map (holes, MMIO), or that holds the kernel.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/iomem.h"
#include "hvmtrace/util.h"

#define MAX_CHANNELS 64

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: chanmap reserve --channel ID [--channel ID]... [options]\n"
	    "\n"
	    "  -c, --channel ID          a channel of the map (s0.mc1.ch0); repeat for several\n"
	    "  -s, --size SIZE           reserve SIZE from the start of the channel's first range that\n"
	    "                            holds it (default: the channel's largest range, whole)\n"
	    "  -m, --map FILE            the channel map (default " CHANMAP_DEFAULT_MAP ")\n"
	    "      --firmware-memmap DIR the firmware memory map (default " HVT_FWMAP_PATH ")\n"
	    "      --iomem FILE          the resource map (default " HVT_IOMEM_PATH ")\n"
	    "\n"
	    "Prints the memmap= argument, then how to write it in /etc/default/grub and in grub.cfg.\n"
	    "Exit status: 0; 1 the reservation would not work (the reason is printed); 2 bad arguments.\n");
}

/* Picks [start, start+size) inside one range of the channel. */
static int pick(const struct hvt_chanmap *m, const struct hvt_chanmap_channel *c, uint64_t want,
		struct hvt_range *out)
{
	const struct hvt_range *best = NULL;
	char sz[32];

	if (!c->nranges) {
		fprintf(stderr,
			"chanmap reserve: channel %s has no memory in the map (unpopulated, or not probed)\n",
			c->id);
		return 1;
	}
	for (size_t r = 0; r < c->nranges; r++) {
		const struct hvt_range *x = &c->ranges[r];
		if (want ? x->size >= want && !best : !best || x->size > best->size)
			best = x;
	}
	if (!best) {
		uint64_t largest = 0;
		for (size_t r = 0; r < c->nranges; r++)
			largest = c->ranges[r].size > largest ? c->ranges[r].size : largest;
		hvt_format_size(largest, sz, sizeof(sz));
		fprintf(stderr,
			"chanmap reserve: --size does not fit in one range of %s (its largest is %s): the "
			"reservation "
			"would cross into another channel%s\n",
			c->id, sz, m->ninterleaved ? " or an interleaved region" : "");
		return 1;
	}
	*out = (struct hvt_range){best->start, want ? want : best->size};
	return 0;
}

/* The running kernel's image must not be under a reservation (it is in System RAM: memmap=$ there would
 * reserve memory the kernel already uses). */
static int check_kernel(const struct hvt_iomem *io, const struct hvt_range *r)
{
	for (size_t i = 0; i < io->n; i++) {
		const struct hvt_iomem_entry *x = &io->entries[i];
		if (!strncmp(x->name, "Kernel ", 7) && x->start < r->start + r->size && r->start <= x->end) {
			fprintf(stderr,
				"chanmap reserve: 0x%" PRIx64 "+0x%" PRIx64
				" holds the running kernel ('%s' at %" PRIx64 "-%" PRIx64
				" in %s); choose a --size that keeps clear of it or another channel\n",
				r->start, r->size, x->name, x->start, x->end, io->source);
			return 1;
		}
	}
	return 0;
}

int cmd_reserve(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"channel", required_argument, NULL, 'c'},
	    {"size", required_argument, NULL, 's'},
	    {"map", required_argument, NULL, 'm'},
	    {"firmware-memmap", required_argument, NULL, 'F'},
	    {"iomem", required_argument, NULL, 'I'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *ids[MAX_CHANNELS], *map = CHANMAP_DEFAULT_MAP, *fwdir = NULL, *iomem = NULL;
	unsigned nids = 0;
	uint64_t size = 0;
	int c;

	while ((c = getopt_long(argc, argv, "c:s:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (nids == MAX_CHANNELS) {
				fprintf(stderr, "chanmap reserve: at most %d channels at once\n",
					MAX_CHANNELS);
				return 2;
			}
			ids[nids++] = optarg;
			break;
		case 's':
			if (hvt_parse_size(optarg, &size) || !size || size % 4096) {
				fprintf(stderr,
					"chanmap reserve: --size '%s' is not a whole number of 4 KiB pages\n",
					optarg);
				return 2;
			}
			break;
		case 'm':
			map = optarg;
			break;
		case 'F':
			fwdir = optarg;
			break;
		case 'I':
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
	if (!nids || optind < argc) {
		usage(stderr);
		return 2;
	}

	struct hvt_chanmap m;
	struct hvt_fwmap fw;
	struct hvt_iomem io;
	struct hvt_err err;
	struct hvt_range r[MAX_CHANNELS];
	int status = 0;

	if (hvt_chanmap_read(map, &m, &err)) {
		fprintf(stderr, "chanmap reserve: %s\n", err.msg);
		return 2;
	}
	if (hvt_fwmap_read(fwdir, &fw, &err)) {
		fprintf(stderr, "chanmap reserve: %s; without it the range cannot be checked for holes\n",
			err.msg);
		hvt_chanmap_free(&m);
		return 1;
	}
	err.msg[0] = '\0';
	bool read_io = !hvt_iomem_read(iomem, &io, &err), have_io = read_io && !io.hidden;
	if (!have_io)
		fprintf(stderr, "chanmap reserve: warning: %s; not checking where the running kernel is\n",
			err.msg[0] ? err.msg : "/proc/iomem hides addresses (not root)");
	for (unsigned i = 0; i < nids && !status; i++) {
		int ci = hvt_chanmap_find(&m, ids[i]);
		if (ci < 0) {
			fprintf(stderr, "chanmap reserve: %s has no channel '%s'; it has:", map, ids[i]);
			for (size_t k = 0; k < m.nchannels; k++)
				fprintf(stderr, " %s", m.channels[k].id);
			fputc('\n', stderr);
			status = 1;
			break;
		}
		if ((status = pick(&m, &m.channels[ci], size, &r[i])))
			break;
		if (r[i].start < (1ull << 20)) {
			fprintf(stderr,
				"chanmap reserve: %s's range starts in the first MiB, which Linux keeps\n",
				ids[i]);
			status = 1;
		} else if (hvt_fwmap_check_ram(&fw, r[i].start, r[i].size, &err)) {
			fprintf(stderr, "chanmap reserve: %s: %s; memmap=$ there would not give a VM RAM\n",
				ids[i], err.msg);
			status = 1;
		} else if (hvt_chanmap_channel_of(&m, r[i].start, r[i].size, &err) != ci) {
			fprintf(stderr, "chanmap reserve: %s: %s\n", ids[i], err.msg);
			status = 1;
		} else if (have_io) {
			status = check_kernel(&io, &r[i]);
		}
		for (unsigned k = 0; k < i && !status; k++)
			if (r[k].start < r[i].start + r[i].size && r[i].start < r[k].start + r[k].size) {
				fprintf(stderr, "chanmap reserve: %s is given twice\n", ids[i]);
				status = 1;
			}
	}
	if (!status) {
		char arg[MAX_CHANNELS][64];
		for (unsigned i = 0; i < nids; i++)
			hvt_memmap_format(r[i].start, r[i].size, arg[i], sizeof(arg[i]));
		for (unsigned i = 0; i < nids; i++)
			printf("%smemmap=%s", i ? " " : "", arg[i]);
		printf("\n# /etc/default/grub (then update-grub):  GRUB_CMDLINE_LINUX=\"... ");
		for (unsigned i = 0; i < nids; i++) {
			char *d = strchr(arg[i], '$');
			printf("%smemmap=%.*s\\\\\\$%s", i ? " " : "", (int)(d - arg[i]), arg[i], d + 1);
		}
		printf("\"\n# grub.cfg or the GRUB editor ('e' at boot):  ");
		for (unsigned i = 0; i < nids; i++) {
			char *d = strchr(arg[i], '$');
			printf("%smemmap=%.*s\\$%s", i ? " " : "", (int)(d - arg[i]), arg[i], d + 1);
		}
		printf("\n");
		for (unsigned i = 0; i < nids; i++) {
			char sz[32];
			hvt_format_size(r[i].size, sz, sizeof(sz));
			printf("# %s: %s at 0x%" PRIx64 "; after reboot: chanmap verify\n", ids[i], sz,
			       r[i].start);
		}
	}
	if (read_io)
		hvt_iomem_free(&io);
	hvt_fwmap_free(&fw);
	hvt_chanmap_free(&m);
	return status;
}
