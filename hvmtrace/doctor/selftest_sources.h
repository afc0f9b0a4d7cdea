/* SPDX-License-Identifier: MIT */
/* The self-test's counter sources and traffic generators on a host (selftest.h has the interfaces). */
#ifndef HVT_DOCTOR_SELFTEST_SOURCES_H
#define HVT_DOCTOR_SELFTEST_SOURCES_H

#include "hvmtrace/pmu.h"
#include "hvmtrace/resctrl.h"
#include "selftest.h"

/* Every channel of h through the PMU sampler: CAS reads and writes × 64 bytes. */
struct st_pmu_source {
	struct st_source src;
	struct hvt_pmu_sampler *sampler;
	struct hvt_pmu_counts *counts;
};
int st_pmu_source_open(struct st_pmu_source *p, const struct hvt_pmu_host *h, struct hvt_err *e);
void st_pmu_source_close(struct st_pmu_source *p);

/* resctrl MBM total bytes per L3 domain of a monitoring group holding this process (not split). */
struct st_resctrl_source {
	struct st_source src;
	struct hvt_resctrl_group group;
	char ids[HVT_RESCTRL_MAX_DOMAINS][48];
};
int st_resctrl_source_open(struct st_resctrl_source *p, const char *root, struct hvt_err *e);
void st_resctrl_source_close(struct st_resctrl_source *p);

/*
 * DRAM traffic (selftest_hw.c, the part only real hardware reaches): streaming loads (each line flushed,
 * then loaded: one CAS read per line) and full-line non-temporal stores (one CAS write per line, no read
 * for ownership) over memory far larger than the LLC, from a CPU of the memory's socket.
 */
struct st_dram {
	char *va;
	uint64_t bytes;
	bool devmem; /* a reserved range mapped through /dev/mem, else an anonymous buffer */
	int cpu;     /* the CPU the traffic runs on */
};
/* An anonymous buffer of bytes, first touched (so placed) on cpu. */
int st_dram_anon(struct st_dram *d, uint64_t bytes, int cpu, struct hvt_err *e);
/* bytes of the reserved range at phys, mapped write-back through mem_path (no O_SYNC: hardware-notes §7.3).
 */
int st_dram_devmem(struct st_dram *d, const char *mem_path, uint64_t phys, uint64_t bytes, int cpu,
		   struct hvt_err *e);
void st_dram_free(struct st_dram *d);
/* st_target.drive for ctx = struct st_dram. */
int st_dram_drive(struct st_target *t, enum st_dir dir, uint64_t *moved, struct hvt_err *e);
/* The last-level cache's size from sysfs (cpu0's highest cache index), 0 when unknown. */
uint64_t st_llc_bytes(const char *sysfs_root);

/*
 * The stand-in PMU's traffic (selftest_standin.c): its "CAS" events are software events that count page
 * faults (docs/doctor.md), so the generator faults in fresh pages on the channel's CPU, one "CAS" each.
 */
struct st_standin {
	int cpu;
	uint64_t pages; /* faulted in reps times over: pages × reps faults */
	unsigned reps;
};
/* Whether a stand-in channel's events are ones this generator moves; the message says which are not. */
int st_standin_check(const struct hvt_pmu_channel *c, struct hvt_err *e);
int st_standin_drive(struct st_target *t, enum st_dir dir, uint64_t *moved, struct hvt_err *e);

#endif
