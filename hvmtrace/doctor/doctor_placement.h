/* SPDX-License-Identifier: MIT */
/* Memory placement's facts (doctor_placement.c), shared with the self-test, which drives DRAM traffic on a
 * usable reservation when the chanmap names its channel. */
#ifndef HVT_DOCTOR_PLACEMENT_H
#define HVT_DOCTOR_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "doctor.h"
#include "hvmtrace/layout.h"

#define DOC_MAX_RESERVATIONS 16

/* One memmap=SIZE$START of the kernel command line, as /proc/iomem and the chanmap see it. */
struct doc_reservation {
	uint64_t start, size;
	char iomem_problem[512];       /* "" when it meets the extent rules (include/hvmtrace/iomem.h) */
	char channel[HVT_CHANNEL_MAX]; /* the chanmap channel holding it, "" when none or no map */
	char chanmap_problem[512];
	pid_t mapped_by; /* a process that maps it through /dev/mem now (a VM), or 0 */
	bool mappable;   /* a page of it was mapped through the memory file */
};

/* A kernel configuration option: 'y', 'm', 'n' (not set), or 0 when the config could not be read. */
struct doc_placement_facts {
	char config_source[512]; /* the config file read, "" when none */
	char devmem_cfg, strict_devmem, io_strict_devmem;
	bool iomem_relaxed; /* iomem=relaxed on the command line */
	char lockdown[80];  /* /sys/kernel/security/lockdown, "" when absent */
	bool mem_exists;
	int mem_errno; /* opening the memory file failed: errno; 0 it opened */
	bool iomem_hidden;
	char iomem_error[512];
	size_t nres;
	struct doc_reservation res[DOC_MAX_RESERVATIONS];
	char chanmap_path[512]; /* "" when none given and none installed */
	char chanmap_error[512];
	char chanmap_source[288];
	unsigned chanmap_channels;
	uint64_t huge_total, huge_free, huge_size;
	char thp[64];
	uint64_t memlock_cur, memlock_max; /* RLIM_INFINITY as UINT64_MAX */
	bool cap_sys_admin, cap_perfmon, cap_ipc_lock, cap_sys_rawio, cap_dac_override;
	bool unit_installed;
	char unit_caps[256]; /* its CapabilityBoundingSet= */
	char unit_memlock[32];
};

void doc_placement_gather(const struct doc_env *env, struct doc_placement_facts *f);
void doc_placement_judge(const struct doc_env *env, const struct doc_placement_facts *f,
			 struct doc_report *r);

/* Huge pages, locked-memory limits, capabilities, as root and under the systemd unit (doctor_limits.c). */
void doc_limits_gather(const struct doc_env *env, struct doc_placement_facts *f);
void doc_limits_judge(const struct doc_placement_facts *f, struct doc_report *r);

/* Whether a reservation can carry the self-test's traffic: in the rules, on one channel, mapped by no one. */
bool doc_reservation_usable(const struct doc_reservation *x);

#endif
