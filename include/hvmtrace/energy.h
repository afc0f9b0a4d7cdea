/* SPDX-License-Identifier: MIT */
/*
 * The energy what-if of `hvmtrace report --energy` (docs/energy.md). It is a MODEL, not a measurement:
 * bytes moved (measured, or estimated from page counts) times per-byte energies, plus standby power times
 * capacity times duration, for DRAM, STT-MRAM and PCM. The default figures come from published datasheets
 * and papers, each cited in docs/energy.md; a JSON file can override any of them.
 */
#ifndef HVMTRACE_ENERGY_H
#define HVMTRACE_ENERGY_H

#include <stdbool.h>
#include <stdint.h>

struct hvt_analysis;
struct hvt_class_thresholds;
struct hvt_err;
struct hvt_trace_reader;

enum hvt_mem_tech { HVT_TECH_DRAM, HVT_TECH_MRAM, HVT_TECH_PCM, HVT_TECH_COUNT };

struct hvt_tech_energy {
	double read_pj_per_byte;   /* dynamic energy to read one byte */
	double write_pj_per_byte;  /* ... to write one byte */
	double standby_mw_per_gib; /* background and refresh power per GiB of capacity, accessed or not */
};

struct hvt_energy_model {
	struct hvt_tech_energy tech[HVT_TECH_COUNT];
	/* Without bandwidth in the trace: bytes per written (accessed) page per interval. */
	double bytes_per_written_page;
	double bytes_per_accessed_page;
};

extern const struct hvt_energy_model hvt_energy_defaults;

const char *hvt_tech_name(enum hvt_mem_tech t); /* "dram", "mram", "pcm": the model file's keys */

/*
 * Overrides *m with the values a JSON object file gives (docs/energy.md lists the keys); keys it leaves out
 * keep their value. An unreadable file, text that is not a JSON object, an unknown key or a value that is
 * not a finite number >= 0 is -EINVAL with one line naming the file and the key.
 */
int hvt_energy_model_load(struct hvt_energy_model *m, const char *path, struct hvt_err *err);

enum hvt_bytes_source {
	HVT_BYTES_MEASURED,    /* read and write bytes from the trace's channels */
	HVT_BYTES_TOTAL_SPLIT, /* channels give totals only: writes from the page model, capped at the
				* total, the rest counted as reads */
	HVT_BYTES_PAGE_MODEL,  /* no bandwidth: written (accessed) pages x bytes per page */
};

/* The bytes of the selected intervals and their apportionment to write-heavy pages. */
struct hvt_energy_bytes {
	enum hvt_bytes_source source;
	uint64_t modelled_intervals;    /* intervals whose bytes came from the page model */
	bool reads_known;               /* false: no bandwidth and no accessed sets, so no read estimate */
	double read, write;             /* bytes */
	double heavy_read, heavy_write; /* the part apportioned to write-heavy pages */
	uint64_t ram_pages, heavy_pages;
	double seconds; /* from the first selected interval's start to the last one's end */
};

/*
 * Sums the bytes of a's intervals (whole guest: a must not be loaded with a GFN range) and apportions each
 * interval's write bytes to the write-heavy pages (thresholds t) by their share of its written pages, and
 * its read bytes by their share of its accessed pages (of its written pages without accessed sets). An
 * interval with bytes but no such pages apportions them by capacity. Walks the trace (r) once. -ENOMEM,
 * -EINVAL with a message when the trace cannot be read again.
 */
int hvt_energy_bytes(const struct hvt_analysis *a, struct hvt_trace_reader *r,
		     const struct hvt_class_thresholds *t, const struct hvt_energy_model *m,
		     struct hvt_energy_bytes *out, struct hvt_err *err);

struct hvt_energy_joules {
	double read, write, standby, total; /* total includes read only when reads are known */
};

/* The energy of reading and writing those bytes on e, with capacity_bytes of it over seconds. */
void hvt_energy_of(const struct hvt_tech_energy *e, double read_bytes, double write_bytes, bool reads_known,
		   double capacity_bytes, double seconds, struct hvt_energy_joules *out);

#endif
