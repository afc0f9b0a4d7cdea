/* SPDX-License-Identifier: MIT */
/* hvmtrace report --energy: the energy what-if (docs/energy.md), computed once, printed as text or JSON. */
#ifndef HVT_REPORT_REPORT_ENERGY_H
#define HVT_REPORT_REPORT_ENERGY_H

#include <stdio.h>

#include "hvmtrace/energy.h"

struct json_object;
struct report;

struct report_energy {
	struct hvt_energy_model model;
	const char *model_path; /* the overrides' file, NULL: the defaults */
	struct hvt_energy_bytes b;
	double capacity;                              /* bytes of guest RAM in the selection's layouts */
	struct hvt_energy_joules all[HVT_TECH_COUNT]; /* all memory of one technology */
	/* the placement: write-heavy pages in DRAM, the rest in MRAM, and the two together */
	struct hvt_energy_joules place_dram, place_mram, place;
};

/* Allocates rp->energy with the defaults, overridden by path if not NULL. -EINVAL/-ENOMEM, message in err. */
int report_energy_init(struct report *rp, const char *path, struct hvt_err *err);
/* After report_compute(): the bytes and the joules. */
int report_energy_compute(struct report *rp, struct hvt_err *err);

void report_energy_text(FILE *f, const struct report *rp);
struct json_object *report_energy_json(const struct report *rp);

#endif
