// SPDX-License-Identifier: MIT
/*
 * The generation facts of memory-controller PMUs, in one table. Sources: docs/hardware-notes.md §1.2-1.3
 * (kernel arch/x86/events/intel/uncore*.c, perf JSON, PCM) and §2.1 (arch/x86/events/amd/uncore.c). Rows
 * whose box → (controller, channel) rule is only inferred there say so (inferred = true); users see that
 * label.
 */
#include <string.h>

#include "pmu_internal.h"

#define RD(a0, a1, t, c)                                                                                     \
	{                                                                                                    \
		.aliases = {a0, a1}, .terms = t, .config = c                                                 \
	}

/* The classic encoding, SNB-EP … CLX: CAS_COUNT event 0x04, RD umask 0x03, WR umask 0x0c. */
#define CAS_0304_0C04                                                                                        \
	.nsub = 1, .read = {RD("cas_count_read", NULL, "event=0x04,umask=0x03", 0x0304)},                    \
	.write = {RD("cas_count_write", NULL, "event=0x04,umask=0x0c", 0x0c04)}

static const struct pmu_gen_info gens[] = {
    {.gen = HVT_GEN_SNBEP,
     .name = "snbep",
     .parts = "Sandy Bridge-EP",
     .vendor = "GenuineIntel",
     .family = 6,
     .models = {0x2d},
     .pmu_prefix = "uncore_imc_",
     CAS_0304_0C04,
     .boxes_per_mc = 4,
     .libpfm_prefix = "snbep_unc_imc",
     .libpfm_event = "UNC_M_CAS_COUNT"},
    {.gen = HVT_GEN_IVT,
     .name = "ivt",
     .parts = "Ivy Bridge-EP",
     .vendor = "GenuineIntel",
     .family = 6,
     .models = {0x3e},
     .pmu_prefix = "uncore_imc_",
     CAS_0304_0C04,
     .boxes_per_mc = 4,
     .libpfm_prefix = "ivbep_unc_imc",
     .libpfm_event = "UNC_M_CAS_COUNT"},
    {.gen = HVT_GEN_HSX,
     .name = "hsx",
     .parts = "Haswell-EP",
     .vendor = "GenuineIntel",
     .family = 6,
     .models = {0x3f},
     .pmu_prefix = "uncore_imc_",
     CAS_0304_0C04,
     .boxes_per_mc = 4,
     .libpfm_prefix = "hswep_unc_imc",
     .libpfm_event = "UNC_M_CAS_COUNT"},
    {.gen = HVT_GEN_BDX,
     .name = "bdx",
     .parts = "Broadwell-EP/DE",
     .vendor = "GenuineIntel",
     .family = 6,
     .models = {0x4f, 0x56},
     .pmu_prefix = "uncore_imc_",
     CAS_0304_0C04,
     .boxes_per_mc = 4,
     .libpfm_prefix = "bdx_unc_imc",
     .libpfm_event = "UNC_M_CAS_COUNT"},
    {.gen = HVT_GEN_SKX,
     .name = "skx",
     .parts = "Skylake-SP, Cascade Lake, Cooper Lake",
     .vendor = "GenuineIntel",
     .family = 6,
     .models = {0x55},
     .pmu_prefix = "uncore_imc_",
     CAS_0304_0C04,
     .boxes_per_mc = 3,
     .libpfm_prefix = "skx_unc_imc",
     .libpfm_event = "UNC_M_CAS_COUNT"},
    {.gen = HVT_GEN_ICX,
     .name = "icx",
     .parts = "Ice Lake-SP/D",
     .vendor = "GenuineIntel",
     .family = 6,
     .models = {0x6a, 0x6c},
     .pmu_prefix = "uncore_imc_",
     .nsub = 1,
     .read = {RD("cas_count_read", NULL, "event=0x04,umask=0x0f", 0x0f04)},
     .write = {RD("cas_count_write", NULL, "event=0x04,umask=0x30", 0x3004)},
     .boxes_per_mc = 3,
     .libpfm_prefix = "icx_unc_imc",
     .libpfm_event = "UNC_M_CAS_COUNT",
     .note = "Ice Lake-SP: channel 2 of each controller exists but is normally inactive and reads 0"},
    {.gen = HVT_GEN_SNR,
     .name = "snr",
     .parts = "Snow Ridge",
     .vendor = "GenuineIntel",
     .family = 6,
     .models = {0x86},
     .pmu_prefix = "uncore_imc_",
     .nsub = 1,
     .read = {RD("cas_count_read", NULL, "event=0x04,umask=0x0f", 0x0f04)},
     .write = {RD("cas_count_write", NULL, "event=0x04,umask=0x30", 0x3004)},
     .boxes_per_mc = 2,
     .inferred = true},
    {.gen = HVT_GEN_SPR,
     .name = "spr",
     .parts = "Sapphire Rapids, Emerald Rapids",
     .vendor = "GenuineIntel",
     .family = 6,
     .models = {0x8f, 0xcf},
     .pmu_prefix = "uncore_imc_",
     .nsub = 1,
     .read = {RD("cas_count_read", NULL, "event=0x05,umask=0xcf", 0xcf05)},
     .write = {RD("cas_count_write", NULL, "event=0x05,umask=0xf0", 0xf005)},
     .boxes_per_mc = 2,
     .inferred = true,
     .libpfm_prefix = "spr_unc_imc",
     .libpfm_event = "UNC_M_CAS_COUNT"},
    /* Two command schedulers per channel. Kernels before commit 6a8a48644c4b expose cas_count_read/write,
     * which count SCH0 only; later ones expose cas_count_{read,write}_sch{0,1}. Either way both are summed.
     */
    {.gen = HVT_GEN_GNR,
     .name = "gnr",
     .parts = "Granite Rapids, Sierra Forest, Grand Ridge, Clearwater Forest",
     .vendor = "GenuineIntel",
     .family = 6,
     .models = {0xad, 0xae, 0xaf, 0xb6, 0xdd},
     .pmu_prefix = "uncore_imc_",
     .nsub = 2,
     .read = {RD("cas_count_read_sch0", "cas_count_read", "event=0x05,umask=0xcf", 0xcf05),
	      RD("cas_count_read_sch1", NULL, "event=0x06,umask=0xcf", 0xcf06)},
     .write = {RD("cas_count_write_sch0", "cas_count_write", "event=0x05,umask=0xf0", 0xf005),
	       RD("cas_count_write_sch1", NULL, "event=0x06,umask=0xf0", 0xf006)},
     .boxes_per_mc = 1,
     .inferred = true},
    /* One UMC per channel; amd_umc_N numbers active UMCs globally, compacted, so a channel is ranked within
     * its socket. No events/ directory: encoded from format/ (event config:0-7, rdwrmask config:8-9). */
    {.gen = HVT_GEN_AMD_UMC,
     .name = "amd-umc",
     .parts = "AMD Zen 4 and later",
     .vendor = "AuthenticAMD",
     .family = 0x19,
     .pmu_prefix = "amd_umc_",
     .nsub = 1,
     .read = {RD(NULL, NULL, "event=0x0a,rdwrmask=0x1", 0x10a)},
     .write = {RD(NULL, NULL, "event=0x0a,rdwrmask=0x2", 0x20a)},
     .boxes_per_mc = 0,
     .inferred = true,
     .note =
	 "AMD UMC: amd_umc_N counts populated UMCs only; which board channel a UMC drives is not known from sysfs"},
};

const struct pmu_gen_info *pmu_gen_info(enum hvt_pmu_gen gen)
{
	for (size_t i = 0; i < sizeof(gens) / sizeof(gens[0]); i++)
		if (gens[i].gen == gen)
			return &gens[i];
	return NULL;
}

const struct pmu_gen_info *pmu_gen_lookup(const char *vendor, unsigned family, unsigned model)
{
	for (size_t i = 0; i < sizeof(gens) / sizeof(gens[0]); i++) {
		const struct pmu_gen_info *g = &gens[i];

		if (strcmp(g->vendor, vendor))
			continue;
		if (!g->models[0]) { /* any model of this family or a later one */
			if (family >= g->family)
				return g;
			continue;
		}
		if (family != g->family)
			continue;
		for (unsigned k = 0; k < PMU_GEN_MAX_MODELS && g->models[k]; k++)
			if (g->models[k] == model)
				return g;
	}
	return NULL;
}

const char *hvt_pmu_gen_name(enum hvt_pmu_gen gen)
{
	const struct pmu_gen_info *g = pmu_gen_info(gen);

	return g ? g->name : "unknown";
}
