// SPDX-License-Identifier: MIT
/*
 * The self-test's DRAM traffic — the thin part only real hardware reaches (docs/doctor.md): the access
 * loops are the chanmap probe's (hvt_touch_read: clflushopt then load, one CAS read per line;
 * hvt_touch_write: full-line non-temporal stores, one CAS write per line; docs/hardware-notes.md §5.2),
 * run from a CPU of the memory's socket over an anonymous buffer far larger than the LLC or a reserved
 * range mapped write-back through /dev/mem.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "doctor/selftest_sources.h"
#include "hvmtrace/probe.h"
#include "hvmtrace/util.h"

#define PATTERN 0x6864637472617473ull /* any full-line value: the stores' content does not matter */

static int pin(int cpu, struct hvt_err *e)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return hvt_err_set(e, -errno, "cannot run the self-test on CPU %d: %s", cpu, strerror(errno));
	return 0;
}

int st_dram_anon(struct st_dram *d, uint64_t bytes, int cpu, struct hvt_err *e)
{
	int rc;

	*d = (struct st_dram){.bytes = bytes, .cpu = cpu};
	if ((rc = pin(cpu, e)))
		return rc;
	/* Populated here, on the CPU that will drive it: the default policy places it on that CPU's node. */
	d->va = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (d->va == MAP_FAILED) {
		d->va = NULL;
		return hvt_err_set(e, -errno, "cannot allocate the self-test's %" PRIu64 " MiB buffer: %s",
				   bytes >> 20, strerror(errno));
	}
	/* The kernel zeroed the pages with ordinary stores: write them out once, unmeasured, so no dirty line
	 * from that is left in a cache to be written back inside a measured window. */
	hvt_touch_write(d->va, bytes, 1, PATTERN);
	return 0;
}

int st_dram_devmem(struct st_dram *d, const char *mem_path, uint64_t phys, uint64_t bytes, int cpu,
		   struct hvt_err *e)
{
	int fd, rc;

	*d = (struct st_dram){.bytes = bytes, .cpu = cpu, .devmem = true};
	if ((rc = pin(cpu, e)))
		return rc;
	fd = open(mem_path, O_RDWR | O_CLOEXEC); /* no O_SYNC: write-back (hardware-notes §7.3) */
	if (fd < 0)
		return hvt_err_set(e, -errno, "cannot open %s: %s", mem_path, strerror(errno));
	d->va = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)phys);
	rc = errno;
	close(fd);
	if (d->va == MAP_FAILED) {
		d->va = NULL;
		return hvt_err_set(e, -rc, "cannot map 0x%" PRIx64 "+%" PRIu64 " MiB of %s: %s", phys,
				   bytes >> 20, mem_path, strerror(rc));
	}
	hvt_touch_write(d->va, bytes, 1, PATTERN);
	return 0;
}

void st_dram_free(struct st_dram *d)
{
	if (d->va)
		munmap(d->va, d->bytes);
	d->va = NULL;
}

int st_dram_drive(struct st_target *t, enum st_dir dir, uint64_t *moved, struct hvt_err *e)
{
	struct st_dram *d = t->ctx;
	int rc = pin(d->cpu, e);

	if (rc)
		return rc;
	if (dir == ST_READ)
		(void)hvt_touch_read(d->va, d->bytes, 1);
	else
		hvt_touch_write(d->va, d->bytes, 1, PATTERN);
	*moved = d->bytes;
	return 0;
}

uint64_t st_llc_bytes(const char *sysfs_root)
{
	uint64_t best = 0;
	int best_level = 0;

	for (int i = 0; i < 8; i++) {
		char path[512], buf[32];
		unsigned long long kib;
		int level;

		snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu0/cache/index%d/level", sysfs_root, i);
		if (hvt_read_text(path, buf, sizeof(buf), NULL) || sscanf(buf, "%d", &level) != 1)
			continue;
		snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu0/cache/index%d/size", sysfs_root, i);
		if (hvt_read_text(path, buf, sizeof(buf), NULL) || sscanf(buf, "%lluK", &kib) != 1)
			continue;
		if (level >= best_level) {
			best_level = level;
			best = (uint64_t)kib << 10;
		}
	}
	return best;
}
