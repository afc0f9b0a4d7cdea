/* SPDX-License-Identifier: MIT */
/* Shared inside lib/pmu*.c: the generation table and small sysfs readers. Not a public interface. */
#ifndef LIB_PMU_INTERNAL_H
#define LIB_PMU_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "hvmtrace/pmu.h"

#define PMU_GEN_MAX_MODELS 8
#define PMU_MAX_ALIASES    2

/* One direction (read or write) of one sub-channel: sysfs aliases to prefer, and the table's terms. */
struct pmu_gen_event {
	const char *aliases[PMU_MAX_ALIASES]; /* events/ files that encode exactly this counter */
	const char *terms;                    /* encoded through format/ when no alias exists */
	uint64_t config;                      /* what terms encode to (docs/hardware-notes.md §1.3, §2.1) */
};

struct pmu_gen_info {
	enum hvt_pmu_gen gen;
	const char *name;  /* "skx" */
	const char *parts; /* "Skylake-SP, Cascade Lake, Cooper Lake" */
	const char *vendor;
	unsigned family;
	unsigned models[PMU_GEN_MAX_MODELS]; /* 0-terminated; empty: any model of the family and later */
	const char *pmu_prefix;              /* "uncore_imc_" or "amd_umc_" */
	unsigned nsub;
	struct pmu_gen_event read[HVT_PMU_MAX_SUB], write[HVT_PMU_MAX_SUB];
	unsigned boxes_per_mc;     /* box b → controller b / n, channel b % n; 0: ranked per socket (AMD) */
	bool inferred;             /* the box → channel rule is marked INFERENCE in the reference */
	const char *libpfm_prefix; /* "skx_unc_imc" (box number appended), NULL if libpfm4 has no model */
	const char *libpfm_event;  /* "UNC_M_CAS_COUNT" */
	const char *note;          /* caveat shown to users, or NULL */
};

const struct pmu_gen_info *pmu_gen_info(enum hvt_pmu_gen gen);
/* The generation of a CPU, or NULL when the table has none for it. */
const struct pmu_gen_info *pmu_gen_lookup(const char *vendor, unsigned family, unsigned model);

/* Reads a sysfs file holding one number (decimal or 0x…). 0 or -errno (message names the file). */
int pmu_read_uint(const char *path, unsigned long long *v, struct hvt_err *err);

#endif
