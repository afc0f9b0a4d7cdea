// SPDX-License-Identifier: MIT
/*
 * Memory placement: whether guest RAM can be put on reserved channels — /dev/mem and the kernel's rules for
 * it (docs/hardware-notes.md §7.1), the memmap= reservations in /proc/iomem (§8.1, the extent rules of
 * include/hvmtrace/iomem.h) and the chanmap agreeing with them (as `chanmap verify -m` checks). Huge pages,
 * locked-memory limits and capabilities are doctor_limits.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "doctor/doctor_placement.h"
#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/iomem.h"
#include "hvmtrace/util.h"

#define DEFAULT_CHANMAP "/etc/hvmtrace/chanmap.json"

/* CONFIG_NAME=y/m, "# CONFIG_NAME is not set" → n. gzopen reads plain files as they are. */
static void read_config(const struct doc_env *env, struct doc_placement_facts *f)
{
	char path[512], line[512], release[128];
	gzFile z = NULL;

	if (env->kernel_config) {
		snprintf(path, sizeof(path), "%s", env->kernel_config);
		z = gzopen(path, "rb");
	} else {
		doc_proc_path(env, "sys/kernel/osrelease", path, sizeof(path));
		if (!hvt_read_text(path, release, sizeof(release), NULL)) {
			snprintf(path, sizeof(path), "/boot/config-%s", release);
			z = gzopen(path, "rb");
		}
		if (!z) {
			doc_proc_path(env, "config.gz", path, sizeof(path));
			z = gzopen(path, "rb");
		}
	}
	if (!z)
		return;
	snprintf(f->config_source, sizeof(f->config_source), "%s", path);
	f->devmem_cfg = f->strict_devmem = f->io_strict_devmem = 'n';
	while (gzgets(z, line, sizeof(line))) {
		static const struct {
			const char *name;
			size_t off;
		} opts[] = {
		    {"CONFIG_DEVMEM", offsetof(struct doc_placement_facts, devmem_cfg)},
		    {"CONFIG_STRICT_DEVMEM", offsetof(struct doc_placement_facts, strict_devmem)},
		    {"CONFIG_IO_STRICT_DEVMEM", offsetof(struct doc_placement_facts, io_strict_devmem)},
		};
		for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
			size_t n = strlen(opts[i].name);

			if (!strncmp(line, opts[i].name, n) && line[n] == '=')
				((char *)f)[opts[i].off] = line[n + 1];
		}
	}
	gzclose(z);
}

/* A process that maps [start, start+size) of /dev/mem now: /proc/PID/maps shows the file offset, which
 * for /dev/mem is the physical address. */
static pid_t mapped_by(const struct doc_env *env, uint64_t start, uint64_t size)
{
	char path[512], line[1024];
	pid_t found = 0;

	doc_proc_path(env, "", path, sizeof(path));
	DIR *d = opendir(path);
	struct dirent *de;

	while (d && !found && (de = readdir(d))) {
		int pid = atoi(de->d_name);
		FILE *m;

		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "%s/%d/maps", env->proc_root, pid);
		if (!(m = fopen(path, "re")))
			continue;
		while (!found && fgets(line, sizeof(line), m)) {
			uint64_t lo, hi, off;

			if (strstr(line, " /dev/mem") &&
			    sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64, &lo, &hi, &off) == 3 &&
			    off < start + size && start < off + (hi - lo))
				found = pid;
		}
		fclose(m);
	}
	if (d)
		closedir(d);
	return found;
}

static void check_reservations(const struct doc_env *env, struct doc_placement_facts *f)
{
	char path[512], *cmdline = NULL;
	struct hvt_iomem io;
	struct hvt_chanmap m;
	struct hvt_range *ranges = NULL;
	struct hvt_err e;
	size_t n = 0;
	bool have_map = false, have_io = false;

	if (env->cmdline)
		snprintf(path, sizeof(path), "%s", env->cmdline);
	else
		doc_proc_path(env, "cmdline", path, sizeof(path));
	if (!hvt_read_file(path, "kernel command line", 1 << 16, &cmdline, NULL, &e))
		(void)hvt_memmap_parse_cmdline(cmdline, &ranges, &n, &e);
	free(cmdline);
	/* A recorded iomem only with a memory file that is not the device (as chanmap verify and the devmem
	 * backend rule): the self-test writes to reservations this check passes. */
	struct stat st;
	bool device = !stat(env->mem_path, &st) && S_ISCHR(st.st_mode);

	if (env->iomem && !device)
		snprintf(path, sizeof(path), "%s", env->iomem);
	else if (device)
		snprintf(path, sizeof(path), "%s", HVT_IOMEM_PATH);
	else
		doc_proc_path(env, "iomem", path, sizeof(path));
	if (hvt_iomem_read(path, &io, &e))
		snprintf(f->iomem_error, sizeof(f->iomem_error), "%s", e.msg);
	else
		have_io = true;
	f->iomem_hidden = have_io && io.hidden;
	if (f->chanmap_path[0]) {
		if (hvt_chanmap_read(f->chanmap_path, &m, &e))
			snprintf(f->chanmap_error, sizeof(f->chanmap_error), "%s", e.msg);
		else {
			have_map = true;
			snprintf(f->chanmap_source, sizeof(f->chanmap_source), "%s", m.source);
			f->chanmap_channels = (unsigned)m.nchannels;
		}
	}
	int fd = open(env->mem_path, O_RDONLY | O_CLOEXEC);
	for (size_t i = 0; i < n && f->nres < DOC_MAX_RESERVATIONS; i++) {
		struct doc_reservation *x = &f->res[f->nres++];

		*x = (struct doc_reservation){.start = ranges[i].start, .size = ranges[i].size};
		if (!have_io)
			snprintf(x->iomem_problem, sizeof(x->iomem_problem), "%s", f->iomem_error);
		else if (hvt_iomem_check_extent(&io, x->start, x->size, &e))
			snprintf(x->iomem_problem, sizeof(x->iomem_problem), "%s", e.msg);
		if (have_map) {
			int ci = hvt_chanmap_channel_of(&m, x->start, x->size, &e);

			if (ci < 0)
				snprintf(x->chanmap_problem, sizeof(x->chanmap_problem), "%s", e.msg);
			else
				snprintf(x->channel, sizeof(x->channel), "%s", m.channels[ci].id);
		}
		x->mapped_by = mapped_by(env, x->start, x->size);
		if (fd >= 0 && !x->iomem_problem[0]) {
			void *va = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, (off_t)x->start);

			x->mappable = va != MAP_FAILED;
			if (x->mappable)
				munmap(va, 4096);
		}
	}
	if (fd >= 0)
		close(fd);
	free(ranges);
	if (have_io)
		hvt_iomem_free(&io);
	if (have_map)
		hvt_chanmap_free(&m);
}

void doc_placement_gather(const struct doc_env *env, struct doc_placement_facts *f)
{
	char path[512], cmd[8192] = "";
	struct stat st;

	memset(f, 0, sizeof(*f));
	read_config(env, f);
	if (env->cmdline)
		snprintf(path, sizeof(path), "%s", env->cmdline);
	else
		doc_proc_path(env, "cmdline", path, sizeof(path));
	if (!hvt_read_text(path, cmd, sizeof(cmd), NULL))
		f->iomem_relaxed = strstr(cmd, "iomem=relaxed") != NULL;
	doc_sys_path(env, "kernel/security/lockdown", path, sizeof(path));
	(void)hvt_read_text(path, f->lockdown, sizeof(f->lockdown), NULL);
	f->mem_exists = !stat(env->mem_path, &st);
	if (f->mem_exists) {
		int fd = open(env->mem_path, O_RDONLY | O_CLOEXEC);

		f->mem_errno = fd < 0 ? errno : 0;
		if (fd >= 0)
			close(fd);
	}
	if (env->chanmap)
		snprintf(f->chanmap_path, sizeof(f->chanmap_path), "%s", env->chanmap);
	else if (!stat(DEFAULT_CHANMAP, &st))
		snprintf(f->chanmap_path, sizeof(f->chanmap_path), "%s", DEFAULT_CHANMAP);
	check_reservations(env, f);
	doc_limits_gather(env, f);
}

bool doc_reservation_usable(const struct doc_reservation *x)
{
	return !x->iomem_problem[0] && x->channel[0] && !x->mapped_by && x->mappable;
}

/* Why /dev/mem is missing or refused, from the config and lockdown. */
static void judge_devmem(const struct doc_env *env, const struct doc_placement_facts *f, struct doc_report *r)
{
	struct doc_check *c;
	bool locked = f->lockdown[0] && !strstr(f->lockdown, "[none]");

	if (!f->mem_exists) {
		c = doc_add(r, DOC_PLACEMENT, "devmem", DOC_NO, "%s does not exist%s", env->mem_path,
			    f->devmem_cfg == 'n'
				? ": this kernel is built without it (CONFIG_DEVMEM is not set)"
				: "");
		doc_fix(
		    c,
		    "boot a kernel with CONFIG_DEVMEM=y (Debian's has it), or place guest RAM without hvmtrace's devmem backend (no per-channel bandwidth)");
	} else if (f->mem_errno) {
		c = doc_add(r, DOC_PLACEMENT, "devmem", DOC_NO, "%s cannot be opened: %s%s", env->mem_path,
			    strerror(f->mem_errno), locked ? " (the kernel is locked down)" : "");
		doc_fix(
		    c, "%s",
		    locked
			? "lockdown (Secure Boot) refuses /dev/mem whatever iomem= says: turn Secure Boot off, or use the devdax route (docs/hardware-notes.md §9)"
			: "run as root (opening /dev/mem needs CAP_SYS_RAWIO)");
	} else {
		c = doc_add(r, DOC_PLACEMENT, "devmem", DOC_YES, "%s opens", env->mem_path);
	}
	doc_evidence(
	    c,
	    "kernel config %s: CONFIG_DEVMEM=%c CONFIG_STRICT_DEVMEM=%c CONFIG_IO_STRICT_DEVMEM=%c; iomem=relaxed %s; lockdown %s",
	    f->config_source[0] ? f->config_source : "(not found)", f->devmem_cfg ? f->devmem_cfg : '?',
	    f->strict_devmem ? f->strict_devmem : '?', f->io_strict_devmem ? f->io_strict_devmem : '?',
	    f->iomem_relaxed ? "given" : "not given", f->lockdown[0] ? f->lockdown : "(no lockdown LSM)");
	if (f->mem_exists && f->strict_devmem == 'y')
		doc_add(
		    r, DOC_PLACEMENT, "devmem.strict", DOC_INFO,
		    "STRICT_DEVMEM%s lets /dev/mem map a memmap= reservation: it is neither System RAM nor claimed by a driver (docs/hardware-notes.md §7.1); iomem=relaxed is not needed",
		    f->io_strict_devmem == 'y' ? " with IO_STRICT_DEVMEM" : "");
}

static void judge_reservation(const struct doc_placement_facts *f, const struct doc_reservation *x,
			      struct doc_report *r)
{
	char arg[64], id[64];
	struct doc_check *c;

	hvt_memmap_format(x->start, x->size, arg, sizeof(arg));
	snprintf(id, sizeof(id), "memmap.0x%" PRIx64, x->start);
	if (x->iomem_problem[0]) {
		c = doc_add(r, DOC_PLACEMENT, id, DOC_NO, "memmap=%s is not usable: %s", arg,
			    x->iomem_problem);
		doc_fix(c, "%s",
			f->iomem_hidden
			    ? "run as root: /proc/iomem hides addresses from others"
			    : "reserve RAM that nothing else claims (chanmap reserve prints a good range)");
	} else if (!x->mappable) {
		c = doc_add(r, DOC_PLACEMENT, id, DOC_NO,
			    "memmap=%s is Reserved and not busy, but could not be mapped through /dev/mem",
			    arg);
		doc_fix(c, "see /dev/mem above");
	} else {
		c = doc_add(r, DOC_PLACEMENT, id, DOC_YES,
			    "memmap=%s is Reserved, not busy and mapped through /dev/mem%s", arg,
			    x->mapped_by ? " (a process maps it now: a running VM)" : "");
	}
	doc_evidence(
	    c,
	    "/proc/cmdline and /proc/iomem, with the extent rules of include/hvmtrace/iomem.h; one page mapped read-only%s",
	    x->mapped_by ? "; /proc/PID/maps shows it mapped" : "");
	if (!f->chanmap_path[0] || f->chanmap_error[0])
		return;
	snprintf(id, sizeof(id), "chanmap.0x%" PRIx64, x->start);
	if (x->channel[0])
		c = doc_add(r, DOC_PLACEMENT, id, DOC_YES, "memmap=%s lies in channel %s of the chanmap", arg,
			    x->channel);
	else {
		c = doc_add(r, DOC_PLACEMENT, id, DOC_NO,
			    "memmap=%s does not lie in one channel of the chanmap: %s", arg,
			    x->chanmap_problem);
		doc_fix(
		    c,
		    "reserve a range chanmap reserve prints for the channel you want, or probe again (chanmap probe)");
	}
	doc_evidence(c, "%s, as chanmap verify -m checks it", f->chanmap_path);
}

void doc_placement_judge(const struct doc_env *env, const struct doc_placement_facts *f, struct doc_report *r)
{
	struct doc_check *c;

	judge_devmem(env, f, r);
	if (!f->nres) {
		c = doc_add(r, DOC_PLACEMENT, "memmap", DOC_NO,
			    "no memmap=SIZE$START reservation on the kernel command line");
		doc_fix(
		    c,
		    "probe the channels (chanmap probe), reserve one (chanmap reserve --channel ID prints the argument and its GRUB spelling) and reboot");
		doc_evidence(c, "%s", env->cmdline ? env->cmdline : "/proc/cmdline");
	}
	for (size_t i = 0; i < f->nres; i++)
		judge_reservation(f, &f->res[i], r);
	if (!f->chanmap_path[0]) {
		c = doc_add(r, DOC_PLACEMENT, "chanmap", DOC_NO,
			    "no channel map: none given (--chanmap) and none at " DEFAULT_CHANMAP);
		doc_fix(c, "chanmap probe -o " DEFAULT_CHANMAP
			   " (as root, on an idle host booted with a big memmap=)");
	} else if (f->chanmap_error[0]) {
		c = doc_add(r, DOC_PLACEMENT, "chanmap", DOC_NO, "the channel map cannot be read: %s",
			    f->chanmap_error);
		doc_fix(c, "probe again: chanmap probe -o %s", f->chanmap_path);
	} else {
		c = doc_add(r, DOC_PLACEMENT, "chanmap",
			    strncmp(f->chanmap_source, "hardware", 8) ? DOC_WARN : DOC_YES,
			    "channel map %s: %u channels, source %s", f->chanmap_path, f->chanmap_channels,
			    f->chanmap_source);
		if (strncmp(f->chanmap_source, "hardware", 8))
			doc_fix(c, "this map was not measured on hardware: probe this host (chanmap probe)");
	}
	doc_limits_judge(f, r);
}

void doc_check_placement(const struct doc_env *env, struct doc_report *r)
{
	struct doc_placement_facts *f = calloc(1, sizeof(*f));

	if (!f) {
		doc_add(r, DOC_PLACEMENT, "placement", DOC_NO, "out of memory");
		return;
	}
	doc_placement_gather(env, f);
	doc_placement_judge(env, f, r);
	free(f);
}
