/* SPDX-License-Identifier: MIT */
/*
 * Memory-controller PMUs (docs/architecture.md §3.5, facts in docs/hardware-notes.md §1-§3): discovery of the
 * per-channel DRAM CAS counters a host exposes through perf, and a sampler that opens them and turns counts
 * into bytes.
 *
 * Discovery reads a sysfs tree (default "/sys"; tests pass recorded trees):
 *   Intel  bus/event_source/devices/uncore_imc_<N>   (matched exactly: never uncore_imc_free_running_<N>)
 *   AMD    bus/event_source/devices/amd_umc_<N>      (Zen 4 and later)
 * and the CPU model from a /proc/cpuinfo-format file. One table of generation facts (lib/bandwidth/pmu_gen.c)
 * gives the CAS encodings, the sub-channels to sum (GNR/SRF: SCH0 + SCH1) and box → (controller, channel).
 * Each PMU's cpumask names one CPU per socket; every (PMU, socket) pair is one channel with the
 * docs/architecture.md §3.6 id "s<socket>.mc<controller>.ch<channel>".
 *
 * Typical use (hvmtrace bw, record, chanmap probe):
 *   struct hvt_pmu_host h;  hvt_pmu_discover(&h, NULL, &err);            // NULL: the running host
 *   struct hvt_pmu_sampler *s;  hvt_pmu_open(&s, &h, NULL, 0, &err);     // NULL ids: every channel
 *   loop: wait a window; hvt_pmu_read(s, counts, &err);                  // counts[i] ↔ hvt_pmu_channel_at(s,
 * i) hvt_pmu_close(s); hvt_pmu_host_fini(&h);
 */
#ifndef HVMTRACE_PMU_H
#define HVMTRACE_PMU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h" /* HVT_CHANNEL_MAX */

struct hvt_err;

#define HVT_PMU_BYTES_PER_CAS 64 /* one CAS moves one 64-byte line (Intel DDR4/DDR5, AMD UMC) */
#define HVT_PMU_NAME_MAX      64
#define HVT_PMU_MAX_SUB       2 /* counters summed per direction: GNR/SRF have SCH0 and SCH1 */

enum hvt_pmu_gen {
	HVT_GEN_UNKNOWN = 0,
	HVT_GEN_SNBEP,   /* Sandy Bridge-EP */
	HVT_GEN_IVT,     /* Ivy Bridge-EP */
	HVT_GEN_HSX,     /* Haswell-EP */
	HVT_GEN_BDX,     /* Broadwell-EP/DE */
	HVT_GEN_SKX,     /* Skylake-SP, Cascade Lake, Cooper Lake */
	HVT_GEN_ICX,     /* Ice Lake-SP/D */
	HVT_GEN_SNR,     /* Snow Ridge (Tremont-D) */
	HVT_GEN_SPR,     /* Sapphire Rapids, Emerald Rapids */
	HVT_GEN_GNR,     /* Granite Rapids, Sierra Forest, Grand Ridge, Clearwater Forest */
	HVT_GEN_AMD_UMC, /* AMD Zen 4 and later (amd_umc) */
	HVT_GEN_COUNT
};

/* Short name of a generation ("skx", "gnr", "amd-umc", "unknown"). */
const char *hvt_pmu_gen_name(enum hvt_pmu_gen gen);

/* One perf event: what perf_event_attr needs besides the PMU's type. */
struct hvt_pmu_event {
	uint64_t config, config1, config2;
	char terms[96];               /* the terms encoded, "event=0x04,umask=0x03" */
	char alias[HVT_PMU_NAME_MAX]; /* the sysfs events/ file the terms came from; "" if from the table */
};

struct hvt_pmu_channel {
	char id[HVT_CHANNEL_MAX];   /* "s0.mc1.ch0" */
	int socket;                 /* physical package of the CPU below */
	int controller, channel;    /* memory controller and channel within the socket */
	int box;                    /* N of uncore_imc_N / amd_umc_N */
	int cpu;                    /* the CPU to open the counters on (from the PMU's cpumask) */
	char pmu[HVT_PMU_NAME_MAX]; /* "uncore_imc_3" */
	uint32_t type;              /* perf_event_attr.type, from the PMU's type file */
	unsigned nsub;              /* counters per direction, summed: 1, or 2 on GNR/SRF */
	struct hvt_pmu_event read[HVT_PMU_MAX_SUB], write[HVT_PMU_MAX_SUB];
	bool inferred; /* box → (controller, channel) is only inferred (docs/hardware-notes.md §1.2) */
	bool stand_in; /* the PMU's type is a generic kernel type (software, …): a test stand-in, not DRAM */
};

struct hvt_pmu_host {
	enum hvt_pmu_gen gen;
	char vendor[16]; /* "GenuineIntel", "AuthenticAMD" */
	unsigned family, model;
	char model_name[96];  /* cpuinfo "model name" */
	char sysfs_root[256]; /* where the PMUs were found */
	unsigned nsockets;
	unsigned nchannels;
	struct hvt_pmu_channel *channels; /* sorted by socket, controller, channel */
	bool stand_in;                    /* some channel is a stand-in (see hvt_pmu_channel.stand_in) */
	char note[256];                   /* a caveat of this generation for users, or "" */
};

/* Where discovery looks. NULL members (or a NULL struct): the running host. */
struct hvt_pmu_source {
	const char *sysfs_root; /* default "/sys" */
	const char *cpuinfo;    /* default: "/proc/cpuinfo" for "/sys", else "<sysfs_root>/../proc/cpuinfo" */
};

/*
 * Finds every memory channel with counters. Errors (message names the tree and says what to do):
 * -ENODEV no memory-controller PMU (a VM, a client CPU, intel_uncore not loaded); -EINVAL a PMU whose
 * files cannot be parsed, or a CPU generation the table does not know; -ENOENT cpuinfo or topology missing.
 */
int hvt_pmu_discover(struct hvt_pmu_host *h, const struct hvt_pmu_source *src, struct hvt_err *err);
void hvt_pmu_host_fini(struct hvt_pmu_host *h);

/* The channel with this id, or NULL. */
const struct hvt_pmu_channel *hvt_pmu_find_channel(const struct hvt_pmu_host *h, const char *id);

/* ---- sampler ---- */

/* One channel over one window (between two hvt_pmu_read calls, or hvt_pmu_open and the first). */
struct hvt_pmu_counts {
	uint64_t read_cas, write_cas;             /* deltas, sub-channels summed, scaled up if multiplexed */
	uint64_t read_bytes, write_bytes;         /* × HVT_PMU_BYTES_PER_CAS */
	uint64_t read_cas_total, write_cas_total; /* raw counts since open (unscaled), for cross-checks */
	double running;                           /* least time_running/time_enabled of its counters
						     in the window: 1 = counted all the time */
	bool counted; /* false: a counter never ran in the window (counts are 0, not measured) */
};

struct hvt_pmu_sampler;

/*
 * Opens and starts the counters of the channels named in ids (NULL: every channel of h), in that order.
 * Errors name the channel and the fix: -ENOENT an id with no counter on this host (lists what exists);
 * -EACCES/-EPERM perf_event_paranoid or capabilities too strict (says which setting and capability);
 * -EMFILE the descriptor limit; other -errno from perf_event_open with the PMU and CPU.
 */
int hvt_pmu_open(struct hvt_pmu_sampler **s, const struct hvt_pmu_host *h, const char *const *ids,
		 unsigned nids, struct hvt_err *err);
unsigned hvt_pmu_nchannels(const struct hvt_pmu_sampler *s);
const struct hvt_pmu_channel *hvt_pmu_channel_at(const struct hvt_pmu_sampler *s, unsigned i);

/* Reads every counter; out[i] gets channel i's window since the previous read. */
int hvt_pmu_read(struct hvt_pmu_sampler *s, struct hvt_pmu_counts *out, struct hvt_err *err);
void hvt_pmu_close(struct hvt_pmu_sampler *s);

/* ---- building blocks (exposed for tests and the chanmap probe) ---- */

/*
 * Packs "term=value,…" into ev using the PMU's format/ files (pmu_dir is the PMU's sysfs directory): each
 * value's bits go into the config fields the format names ("config:8-15,32-55"), lowest bits first.
 */
int hvt_pmu_encode_terms(const char *pmu_dir, const char *terms, struct hvt_pmu_event *ev,
			 struct hvt_err *err);

/*
 * Window delta of one counter from two reads of {value, time_enabled, time_running}: the count scaled by
 * enabled/running when the counter was multiplexed. *running gets running/enabled of the window (1 when
 * nothing elapsed); returns false when the counter did not run at all in a window that had time.
 */
bool hvt_pmu_window_delta(const uint64_t prev[3], const uint64_t cur[3], uint64_t *delta, double *running);

/*
 * libpfm4's raw code for a generation's CAS event on box N (write: CAS.WR, else CAS.RD; sub: 0 or 1), via
 * its event tables with an explicit PMU prefix ("skx_unc_imc3::UNC_M_CAS_COUNT:RD"). -ENOENT when this
 * libpfm4 has no model of that PMU. pfm_name (if not NULL) gets the event string used.
 */
int hvt_pmu_libpfm_code(enum hvt_pmu_gen gen, int box, bool write, unsigned sub, uint64_t *code,
			char *pfm_name, size_t len);

#endif
