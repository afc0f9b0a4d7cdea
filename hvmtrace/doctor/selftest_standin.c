// SPDX-License-Identifier: MIT
/*
 * The self-test's traffic for the stand-in PMU (tests/fixtures/sysfs/standin-faults): there the "CAS"
 * counters are the kernel's software events for page faults (PERF_COUNT_SW_PAGE_FAULTS and
 * PERF_COUNT_SW_PAGE_FAULTS_MIN, include/uapi/linux/perf_event.h), counted CPU-wide on the channel's CPU. So
 * the generator faults in fresh anonymous pages there, one fault (one "CAS", 64 "bytes") per page: the
 * arithmetic then runs on a real perf_event_open and read path with counts it knows in advance.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "doctor/selftest_sources.h"

#define PAGE 4096u

static bool drivable(const struct hvt_pmu_event *ev)
{
	return ev->config == PERF_COUNT_SW_PAGE_FAULTS || ev->config == PERF_COUNT_SW_PAGE_FAULTS_MIN;
}

int st_standin_check(const struct hvt_pmu_channel *c, struct hvt_err *e)
{
	if (c->type != PERF_TYPE_SOFTWARE || !drivable(&c->read[0]) || !drivable(&c->write[0]))
		return hvt_err_set(
		    e, -ENOTSUP,
		    "stand-in %s counts software events %" PRIu64 " and %" PRIu64
		    " (type %u): the self-test can drive only page faults (%d, %d); use tests/fixtures/sysfs/standin-faults",
		    c->pmu, c->read[0].config, c->write[0].config, c->type, PERF_COUNT_SW_PAGE_FAULTS,
		    PERF_COUNT_SW_PAGE_FAULTS_MIN);
	return 0;
}

int st_standin_drive(struct st_target *t, enum st_dir dir, uint64_t *moved, struct hvt_err *e)
{
	struct st_standin *s = t->ctx;
	uint64_t len = s->pages * PAGE;
	cpu_set_t set;
	char *p;

	(void)dir; /* both counters count every fault */
	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return hvt_err_set(e, -errno, "cannot run on CPU %d: %s", s->cpu, strerror(errno));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return hvt_err_set(e, -errno, "cannot map %" PRIu64 " pages: %s", s->pages, strerror(errno));
	(void)madvise(p, len, MADV_NOHUGEPAGE); /* one fault per 4 KiB page, not per 2 MiB */
	for (unsigned r = 0; r < s->reps; r++) {
		for (uint64_t off = 0; off < len; off += PAGE)
			((volatile char *)p)[off] = 1;
		(void)madvise(p, len, MADV_DONTNEED); /* the next touch faults again */
	}
	munmap(p, len);
	*moved = s->pages * s->reps * 64; /* one "CAS" of 64 bytes per fault */
	return 0;
}
