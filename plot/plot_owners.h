/* SPDX-License-Identifier: MIT */
/*
 * The owners of a heatmap's written pages (plot heatmap --color-by owner, docs/plots.md). The rule that
 * says which owner an interval's page has (docs/attribution.md) lives in the hvmtrace command, not here:
 * hvmtrace-plot runs `hvmtrace export TRACE --by X --jsonl -` (the hvmtrace beside it) and reads its
 * `written_owners` runs. The owners then take colour slots: the top writers a hue each, the rest greys.
 */
#ifndef TRACER_PLOT_OWNERS_H
#define TRACER_PLOT_OWNERS_H

#include <stddef.h>
#include <stdint.h>

#include "plot_draw.h"

#define PLOT_OWNERS_TOP_MAX 9 /* the distinct hues */

struct plot_args;

struct owner_piece {
	uint64_t first, count;
	uint32_t owner; /* into plot_owners.label */
};

/* One interval of export's output: its pieces piece[p0 .. p0 + n). */
struct owner_line {
	uint64_t seq;
	size_t p0, n;
};

/* The colour slots after the top writers (slot top + OWNER_SLOT_…). */
enum { OWNER_SLOT_OTHER, OWNER_SLOT_SHARED, OWNER_SLOT_CHANGED, OWNER_SLOT_NONE, OWNER_SLOTS_EXTRA };

struct plot_owners {
	char **label;    /* each owner as export names it: "array[100]", "(shared)", … */
	uint64_t *pages; /* pages written by each over the selection */
	uint32_t *slot;  /* each owner's colour slot */
	size_t nowners, cap_owners;
	uint32_t *hash; /* open addressing over label, UINT32_MAX: empty */
	struct owner_piece *piece;
	size_t npieces, cap_pieces;
	struct owner_line *line;
	size_t nlines, cap_lines, cursor;
	unsigned top; /* the top writers drawn in hues (slots 0 .. top) */
	uint64_t slot_pages[PLOT_OWNERS_TOP_MAX + OWNER_SLOTS_EXTRA];
	char slot_label[PLOT_OWNERS_TOP_MAX + OWNER_SLOTS_EXTRA][300];
};

/* Runs export for a's trace and selection and reads its owners; top: the writers given hues. 0, or the
 * exit status after one line (export's own refusal is its sentence on stderr). */
int plot_owners_load(struct plot_owners *o, const struct plot_args *a, unsigned top);
/* The line of interval seq (lines are in seq order; seqs asked in increasing order); NULL: none. */
const struct owner_line *plot_owners_line(struct plot_owners *o, uint64_t seq);
unsigned plot_owners_nslots(const struct plot_owners *o);
struct rgb plot_owners_colour(const struct plot_owners *o, unsigned slot);
void plot_owners_fini(struct plot_owners *o);

#endif
