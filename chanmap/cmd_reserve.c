// SPDX-License-Identifier: MIT
/*
 * chanmap reserve: the memmap=SIZE$START kernel argument that takes a channel's memory away from Linux so
 * the QEMU devmem backend can give it to a VM, in the three spellings users need (kernel command line,
 * /etc/default/grub, grub.cfg). Refuses what would not work: a range that crosses into another channel or an
 * interleaved region, that is not all RAM in the firmware map (holes, MMIO), or that holds the kernel.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/iomem.h"
#include "hvmtrace/options.h"
#include "hvmtrace/util.h"

#define MAX_CHANNELS 64

/* chanmap reserve's exit statuses, as its --help lists them. */
enum reserve_exit {
	RESERVE_OK = 0,
	RESERVE_REFUSED = 1, /* the reservation would not work; the reason is printed */
	RESERVE_USAGE = 2,   /* bad arguments, or a map that cannot be read */
};

struct channel_ids {
	const char *id[MAX_CHANNELS];
	unsigned n;
};

static int channel_arg(const struct hvt_option *opt, const char *v, char *problem, size_t len)
{
	struct channel_ids *ids = opt->value;

	if (ids->n == MAX_CHANNELS) {
		snprintf(problem, len, "at most %d channels at once", MAX_CHANNELS);
		return -1;
	}
	ids->id[ids->n++] = v;
	return 0;
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
		return RESERVE_REFUSED;
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
		fprintf(
		    stderr,
		    "chanmap reserve: --size does not fit in one range of %s (its largest is %s): the reservation would cross into another channel%s\n",
		    c->id, sz, m->ninterleaved ? " or an interleaved region" : "");
		return RESERVE_REFUSED;
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
			return RESERVE_REFUSED;
		}
	}
	return 0;
}

int cmd_reserve(int argc, char **argv)
{
	static const struct hvt_exit_status exits[] = {
	    {RESERVE_OK, "the memmap= argument is printed"},
	    {RESERVE_REFUSED, "the reservation would not work (the reason is printed)"},
	    {RESERVE_USAGE, "bad arguments"},
	    {0, NULL},
	};
	struct channel_ids chans = {.n = 0};
	const char *map = CHANMAP_DEFAULT_MAP, *fwdir = NULL, *iomem = NULL;
	uint64_t size = 0;
	const struct hvt_option opts[] = {
	    HVT_OPT_CALLBACK('c', "channel", &chans, channel_arg, "ID",
			     "a channel of the map (s0.mc1.ch0); repeat for several", .required = true),
	    HVT_OPT_SIZE('s', "size", &size, 4096, 0, 4096, "SIZE",
			 "reserve SIZE from the start of the channel's first range that\n"
			 "holds it (default: the channel's largest range, whole)"),
	    HVT_OPT_PATH('m', "map", &map, "FILE", "the channel map (default " CHANMAP_DEFAULT_MAP ")"),
	    HVT_OPT_PATH(0, "firmware-memmap", &fwdir, "DIR",
			 "the firmware memory map (default " HVT_FWMAP_PATH ")"),
	    HVT_OPT_PATH(0, "iomem", &iomem, "FILE", "the resource map (default " HVT_IOMEM_PATH ")"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "chanmap reserve",
	    .synopsis = "--channel ID [--channel ID]... [options]",
	    .options = opts,
	    .notes =
		"Prints the memmap= argument, then how to write it in /etc/default/grub and in grub.cfg.",
	    .exits = exits,
	    .usage_status = RESERVE_USAGE,
	};
	const char *const *ids = chans.id;
	unsigned nids;
	int rc = hvt_opts_parse(&cmd, argc, argv);

	if (rc != HVT_OPTS_RUN)
		return rc;
	nids = chans.n;

	struct hvt_chanmap m;
	struct hvt_fwmap fw;
	struct hvt_iomem io;
	struct hvt_err err;
	struct hvt_range r[MAX_CHANNELS];
	int status = RESERVE_OK;

	if (hvt_chanmap_read(map, &m, &err)) {
		fprintf(stderr, "chanmap reserve: %s\n", err.msg);
		return RESERVE_USAGE;
	}
	if (hvt_fwmap_read(fwdir, &fw, &err)) {
		fprintf(stderr, "chanmap reserve: %s; without it the range cannot be checked for holes\n",
			err.msg);
		hvt_chanmap_free(&m);
		return RESERVE_REFUSED;
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
			status = RESERVE_REFUSED;
			break;
		}
		if ((status = pick(&m, &m.channels[ci], size, &r[i])))
			break;
		if (r[i].start < (1ull << 20)) {
			fprintf(stderr,
				"chanmap reserve: %s's range starts in the first MiB, which Linux keeps\n",
				ids[i]);
			status = RESERVE_REFUSED;
		} else if (hvt_fwmap_check_ram(&fw, r[i].start, r[i].size, &err)) {
			fprintf(stderr, "chanmap reserve: %s: %s; memmap=$ there would not give a VM RAM\n",
				ids[i], err.msg);
			status = RESERVE_REFUSED;
		} else if (hvt_chanmap_channel_of(&m, r[i].start, r[i].size, &err) != ci) {
			fprintf(stderr, "chanmap reserve: %s: %s\n", ids[i], err.msg);
			status = RESERVE_REFUSED;
		} else if (have_io) {
			status = check_kernel(&io, &r[i]);
		}
		for (unsigned k = 0; k < i && !status; k++)
			if (r[k].start < r[i].start + r[i].size && r[i].start < r[k].start + r[k].size) {
				fprintf(stderr, "chanmap reserve: %s is given twice\n", ids[i]);
				status = RESERVE_REFUSED;
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
