// SPDX-License-Identifier: MIT
/*
 * hvmtrace report --energy: the energy what-if of docs/energy.md. The run's bytes (measured, or from the
 * page model without bandwidth) priced as DRAM, as if all memory were STT-MRAM or PCM, and with the
 * write-heavy pages in DRAM and the rest in MRAM. A model from published figures, and said so.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "hvmtrace/json_number.h"
#include "hvmtrace/error.h"
#include "report.h"
#include "report_energy.h"

#define MIB (1024.0 * 1024)
#define GIB (1024.0 * 1024 * 1024)

static const char *const tech_titles[HVT_TECH_COUNT] = {"DRAM", "STT-MRAM", "PCM"};

int report_energy_init(struct report *rp, const char *path, struct hvt_err *err)
{
	struct report_energy *e = calloc(1, sizeof(*e));

	if (!e)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	e->model = hvt_energy_defaults;
	e->model_path = path;
	if (path && hvt_energy_model_load(&e->model, path, err)) {
		free(e);
		return -EINVAL;
	}
	rp->energy = e;
	return 0;
}

int report_energy_compute(struct report *rp, struct hvt_err *err)
{
	struct report_energy *e = rp->energy;
	const struct hvt_energy_bytes *b = &e->b;
	double ps = rp->a.page_size, heavy, rest;
	int rc = hvt_energy_bytes(&rp->a, rp->r, &rp->o.th, &e->model, &e->b, err);

	if (rc)
		return rc;
	e->capacity = (double)b->ram_pages * ps;
	for (int t = 0; t < HVT_TECH_COUNT; t++)
		hvt_energy_of(&e->model.tech[t], b->read, b->write, b->reads_known, e->capacity, b->seconds,
			      &e->all[t]);
	heavy = (double)b->heavy_pages * ps;
	rest = e->capacity - heavy;
	hvt_energy_of(&e->model.tech[HVT_TECH_DRAM], b->heavy_read, b->heavy_write, b->reads_known, heavy,
		      b->seconds, &e->place_dram);
	hvt_energy_of(&e->model.tech[HVT_TECH_MRAM], b->read - b->heavy_read, b->write - b->heavy_write,
		      b->reads_known, rest, b->seconds, &e->place_mram);
	e->place = (struct hvt_energy_joules){
	    .read = e->place_dram.read + e->place_mram.read,
	    .write = e->place_dram.write + e->place_mram.write,
	    .standby = e->place_dram.standby + e->place_mram.standby,
	    .total = e->place_dram.total + e->place_mram.total,
	};
	return 0;
}

/* ---- text ---- */

static void row(FILE *f, const char *what, const struct hvt_energy_joules *j, bool reads)
{
	char rd[32] = "n/a";

	if (reads)
		snprintf(rd, sizeof(rd), "%.4g", j->read);
	fprintf(f, "  %-40s %12s %12.4g %12.4g %12.4g%s\n", what, rd, j->write, j->standby, j->total,
		reads ? "" : " (no reads)");
}

static void print_bytes(FILE *f, const struct report_energy *e)
{
	const struct hvt_energy_bytes *b = &e->b;
	const struct hvt_energy_model *m = &e->model;

	if (b->reads_known)
		fprintf(f, "  bytes        read %.6g GB, write %.6g GB: ", b->read / 1e9, b->write / 1e9);
	else
		fprintf(f, "  bytes        read not available, write %.6g GB: ", b->write / 1e9);
	switch (b->source) {
	case HVT_BYTES_MEASURED:
		fprintf(f, "measured (the channels' read and write bytes)\n");
		break;
	case HVT_BYTES_TOTAL_SPLIT:
		fprintf(f,
			"the channels give totals only: writes MODELLED as %g bytes per written page per "
			"interval (at most the total), the rest counted as reads\n",
			m->bytes_per_written_page);
		break;
	case HVT_BYTES_PAGE_MODEL:
		fprintf(f, "MODELLED, no bandwidth in the trace: %g bytes per written page",
			m->bytes_per_written_page);
		if (b->reads_known)
			fprintf(f, " and %g bytes read per accessed page", m->bytes_per_accessed_page);
		fprintf(f, " per interval\n");
		break;
	}
	if (b->source != HVT_BYTES_PAGE_MODEL && b->modelled_intervals)
		fprintf(f,
			"               %" PRIu64 " intervals without bytes use the page model (%g bytes per "
			"written page)\n",
			b->modelled_intervals, m->bytes_per_written_page);
	if (!b->reads_known)
		fprintf(
		    f, "               no read estimate: no bandwidth and no accessed sets (mode dirty-log); "
		       "the totals leave reads out\n");
}

void report_energy_text(FILE *f, const struct report *rp)
{
	const struct report_energy *e = rp->energy;
	const struct hvt_energy_bytes *b = &e->b;
	bool reads = b->reads_known;
	char what[96];

	fprintf(f, "\nenergy what-if: a MODEL from published figures, not a measurement (docs/energy.md)\n");
	fprintf(f, "  model        %s\n", e->model_path ? e->model_path : "the defaults of docs/energy.md");
	for (int t = 0; t < HVT_TECH_COUNT; t++) {
		const struct hvt_tech_energy *te = &e->model.tech[t];

		fprintf(f, "               %-8s read %.4g pJ/B, write %.4g pJ/B, standby %.4g mW/GiB%s\n",
			tech_titles[t], te->read_pj_per_byte, te->write_pj_per_byte, te->standby_mw_per_gib,
			te->standby_mw_per_gib ? "" : " (not modelled)");
	}
	print_bytes(f, e);
	fprintf(f, "  capacity     %.4g GiB of guest RAM (the trace's layout), over %.3f s\n",
		e->capacity / GIB, b->seconds);
	fprintf(f, "  %-40s %12s %12s %12s %12s\n", "memory (joules)", "read", "write", "standby", "total");
	row(f, "as run: all DRAM", &e->all[HVT_TECH_DRAM], reads);
	row(f, "if all STT-MRAM", &e->all[HVT_TECH_MRAM], reads);
	row(f, "if all PCM", &e->all[HVT_TECH_PCM], reads);
	row(f, "placement: write-heavy in DRAM, rest MRAM", &e->place, reads);
	snprintf(what, sizeof(what), "  DRAM: %" PRIu64 " write-heavy pages, %.1f MiB", b->heavy_pages,
		 (double)b->heavy_pages * rp->a.page_size / MIB);
	row(f, what, &e->place_dram, reads);
	snprintf(what, sizeof(what), "  MRAM: %" PRIu64 " pages, %.1f MiB", b->ram_pages - b->heavy_pages,
		 (double)(b->ram_pages - b->heavy_pages) * rp->a.page_size / MIB);
	row(f, what, &e->place_mram, reads);
	fprintf(f,
		"  The placement is an ESTIMATE. Write-heavy: written in at least %g %% of the intervals "
		"(--write-heavy).\n"
		"  It assumes that pages stay put (no migration) and that each interval's write bytes spread "
		"evenly over\n"
		"  the pages it wrote, its read bytes over the pages it %s\n"
		"  (by capacity in an interval with bytes but no such pages).\n",
		100 * rp->o.th.write_heavy, rp->a.n_accessed ? "accessed" : "wrote (no accessed sets)");
}

/* ---- JSON ---- */

static void add(struct json_object *o, const char *k, struct json_object *v)
{
	json_object_object_add(o, k, v);
}

static struct json_object *joules_json(const struct hvt_energy_joules *j, bool reads)
{
	struct json_object *o = json_object_new_object();

	add(o, "read_j", reads ? hvt_json_new_double(j->read) : NULL);
	add(o, "write_j", hvt_json_new_double(j->write));
	add(o, "standby_j", hvt_json_new_double(j->standby));
	add(o, "total_j", hvt_json_new_double(j->total));
	return o;
}

static struct json_object *model_json(const struct report_energy *e)
{
	struct json_object *o = json_object_new_object();

	add(o, "source", json_object_new_string(e->model_path ? e->model_path : "defaults"));
	for (int t = 0; t < HVT_TECH_COUNT; t++) {
		struct json_object *te = json_object_new_object();

		add(te, "read_pj_per_byte", hvt_json_new_double(e->model.tech[t].read_pj_per_byte));
		add(te, "write_pj_per_byte", hvt_json_new_double(e->model.tech[t].write_pj_per_byte));
		add(te, "standby_mw_per_gib", hvt_json_new_double(e->model.tech[t].standby_mw_per_gib));
		add(o, hvt_tech_name(t), te);
	}
	add(o, "bytes_per_written_page", hvt_json_new_double(e->model.bytes_per_written_page));
	add(o, "bytes_per_accessed_page", hvt_json_new_double(e->model.bytes_per_accessed_page));
	return o;
}

struct json_object *report_energy_json(const struct report *rp)
{
	static const char *const sources[] = {
	    [HVT_BYTES_MEASURED] = "measured",
	    [HVT_BYTES_TOTAL_SPLIT] = "totals-split-by-page-model",
	    [HVT_BYTES_PAGE_MODEL] = "page-model",
	};
	const struct report_energy *e = rp->energy;
	const struct hvt_energy_bytes *b = &e->b;
	bool reads = b->reads_known;
	struct json_object *o = json_object_new_object(), *bytes = json_object_new_object();
	struct json_object *all = json_object_new_object(), *place = json_object_new_object();

	add(o, "is_model", json_object_new_boolean(true));
	add(o, "model", model_json(e));
	add(bytes, "source", json_object_new_string(sources[b->source]));
	add(bytes, "modelled_intervals", json_object_new_uint64(b->modelled_intervals));
	add(bytes, "read", reads ? hvt_json_new_double(b->read) : NULL);
	add(bytes, "write", hvt_json_new_double(b->write));
	add(bytes, "write_heavy_read", reads ? hvt_json_new_double(b->heavy_read) : NULL);
	add(bytes, "write_heavy_write", hvt_json_new_double(b->heavy_write));
	add(o, "bytes", bytes);
	add(o, "reads_included", json_object_new_boolean(reads));
	add(o, "capacity_bytes", hvt_json_new_double(e->capacity));
	add(o, "seconds", hvt_json_new_double(b->seconds));
	for (int t = 0; t < HVT_TECH_COUNT; t++)
		add(all, hvt_tech_name(t), joules_json(&e->all[t], reads));
	add(o, "all", all);
	add(place, "is_estimate", json_object_new_boolean(true));
	add(place, "write_heavy", hvt_json_new_double(rp->o.th.write_heavy));
	add(place, "dram_pages", json_object_new_uint64(b->heavy_pages));
	add(place, "mram_pages", json_object_new_uint64(b->ram_pages - b->heavy_pages));
	add(place, "dram", joules_json(&e->place_dram, reads));
	add(place, "mram", joules_json(&e->place_mram, reads));
	add(place, "total", joules_json(&e->place, reads));
	add(place, "assumes",
	    json_object_new_string(
		"each interval's write bytes spread evenly over the pages it wrote and its read bytes over the "
		"pages it accessed (wrote, without accessed sets); by capacity in an interval with bytes but no "
		"such pages; no migration"));
	add(o, "placement", place);
	return o;
}
