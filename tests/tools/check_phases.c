// SPDX-License-Identifier: MIT
/*
 * check_phases: checks a trace against the phase log of the hvmtrace-vmm run it traced, page by page.
 *
 * For every interval [t_start, t_end] (the sets may also hold writes from the harvests on either side, so
 * its widened window runs from the previous snapshot to this harvest's end):
 *   must ⊆ written ⊆ may, where
 *   must = W_j of every logged pass that lies wholly inside [t_start, t_end],
 *   may  = W_j of every phase whose time overlaps the widened window, plus the payload's system pages.
 * An interval whose widened window lies wholly inside one phase k and which contains a complete logged pass
 * must equal W_k exactly (system pages aside). Each phase needs --min-inside such exact intervals and the
 * run --min-exact in all, so the check has teeth. (An interval shorter than one pass of its phase, as at
 * 10 ms with a write set whose re-arm faults take longer, is held to must ⊆ written ⊆ may only.)
 * Accessed sets (mode ad only; --accessed requires them) are held to the same rules with A_j = W_j ∪ R_j,
 * the pages phase j writes or reads: an interval wholly inside phase k must hold exactly A_k. With accessed
 * sets, written ⊆ accessed must hold as the kernel reported them: the trace's written_not_accessed is 0.
 * Pages the payload never touches are in no set of any interval: the pages outside every phase and the
 * system pages (already in "may"), the log's untouched_pages, and with --shadow-mmu its table_pages (the
 * guest's paging structures, which only nested paging's hardware walks touch; docs/kvm-ad.md).
 * A log whose writer only knows bounds for a phase change (tests/tools/qemu_phases: "t_earliest_ns") gets
 * the wide reading for "may" and the narrow one for "wholly inside".
 * --from-first-phase: intervals whose widened window begins before the first phase's command are listed but
 * not held, for a tracer that attached before the guest booted (libvirt's hook starts it with the domain),
 * whose first intervals hold the firmware's and the loader's writes, which are not the payload's.
 * Exit 0 when everything holds, 1 when a set is wrong, 2 on bad input, 3 when every set is right but there
 * are too few exact intervals for the check to count (the run had fewer intervals than planned, as when
 * the tracer missed deadlines).
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <roaring/roaring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "hvmtrace/options.h"
#include "hvmtrace/trace.h"

#define MAX_PHASES  64
#define MAX_WINDOWS 4096

struct window { /* one phase's run: it surely covers [sure_begin, sure_end) and at most [begin, end) */
	int phase;
	uint64_t begin, end, sure_begin, sure_end;
};

struct pass {
	int phase;
	uint64_t t_start, t_end;
};

struct phaselog {
	int nphases;
	roaring_bitmap_t *w[MAX_PHASES];
	roaring_bitmap_t *a[MAX_PHASES]; /* W ∪ R: what the phase accesses */
	roaring_bitmap_t *system;
	roaring_bitmap_t *untouched; /* system pages the payload never touches */
	roaring_bitmap_t *tables;    /* system pages only the CPU's walks of the guest's page tables touch */
	struct window win[MAX_WINDOWS];
	int nwin;
	struct pass *passes;
	size_t npasses, cap;
	bool done;
};

static int die_input(const char *file, int line, const char *what)
{
	fprintf(stderr, "check_phases: %s:%d: %s\n", file, line, what);
	exit(2);
}

static uint64_t get_u64(struct json_object *o, const char *key, const char *file, int line)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		die_input(file, line, key);
	return (uint64_t)json_object_get_int64(v);
}

/* [[first_gfn, count, stride], …] or [[first_gfn, count], …] into a GFN set. */
static void add_ranges(roaring_bitmap_t *set, struct json_object *arr, const char *file, int line)
{
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		struct json_object *r = json_object_array_get_idx(arr, i);
		size_t n = json_object_array_length(r);
		uint64_t first, count, stride = 1;

		if (n < 2)
			die_input(file, line, "range needs [first, count(, stride)]");
		first = (uint64_t)json_object_get_int64(json_object_array_get_idx(r, 0));
		count = (uint64_t)json_object_get_int64(json_object_array_get_idx(r, 1));
		if (n > 2)
			stride = (uint64_t)json_object_get_int64(json_object_array_get_idx(r, 2));
		for (uint64_t k = 0; k < count; k++)
			roaring_bitmap_add(set, (uint32_t)(first + k * stride));
	}
}

static void read_phaselog(const char *file, struct phaselog *pl)
{
	FILE *f = fopen(file, "r");
	char *buf = NULL;
	size_t cap = 0;
	int line = 0;

	if (!f) {
		fprintf(stderr, "check_phases: %s: %s\n", file, strerror(errno));
		exit(2);
	}
	memset(pl, 0, sizeof(*pl));
	pl->system = roaring_bitmap_create();
	pl->untouched = roaring_bitmap_create();
	pl->tables = roaring_bitmap_create();
	while (getline(&buf, &cap, f) > 0) {
		struct json_object *o = json_tokener_parse(buf), *v;
		const char *type;

		line++;
		if (!o || !json_object_object_get_ex(o, "type", &v))
			die_input(file, line, "not a phase-log object");
		type = json_object_get_string(v);
		if (!strcmp(type, "script")) {
			struct json_object *phases;

			if (!json_object_object_get_ex(o, "phases", &phases))
				die_input(file, line, "script without phases");
			pl->nphases = (int)json_object_array_length(phases);
			if (pl->nphases > MAX_PHASES)
				die_input(file, line, "too many phases");
			for (int k = 0; k < pl->nphases; k++) {
				struct json_object *p = json_object_array_get_idx(phases, k), *w;

				pl->w[k] = roaring_bitmap_create();
				if (json_object_object_get_ex(p, "write", &w))
					add_ranges(pl->w[k], w, file, line);
				pl->a[k] = roaring_bitmap_copy(pl->w[k]);
				if (json_object_object_get_ex(p, "read", &w))
					add_ranges(pl->a[k], w, file, line);
			}
			if (json_object_object_get_ex(o, "system_pages", &v))
				add_ranges(pl->system, v, file, line);
			if (json_object_object_get_ex(o, "untouched_pages", &v))
				add_ranges(pl->untouched, v, file, line);
			if (json_object_object_get_ex(o, "table_pages", &v))
				add_ranges(pl->tables, v, file, line);
			if (!roaring_bitmap_is_subset(pl->untouched, pl->system) ||
			    !roaring_bitmap_is_subset(pl->tables, pl->system))
				die_input(file, line, "untouched or table pages outside the system pages");
		} else if (!strcmp(type, "phase") || !strcmp(type, "done")) {
			/* The event happened at t, or (a logger that only sees bounds) somewhere in [e, t].
			 */
			uint64_t t = get_u64(o, "t_ns", file, line), e = t;

			if (json_object_object_get_ex(o, "t_earliest_ns", &v))
				e = (uint64_t)json_object_get_int64(v);
			if (e > t)
				die_input(file, line, "t_earliest_ns after t_ns");
			if (pl->nwin) {
				pl->win[pl->nwin - 1].end = t;
				pl->win[pl->nwin - 1].sure_end = e;
			}
			if (!strcmp(type, "done")) {
				pl->done = true;
			} else {
				if (pl->nwin == MAX_WINDOWS)
					die_input(file, line, "too many phase windows");
				pl->win[pl->nwin++] =
				    (struct window){.phase = (int)get_u64(o, "index", file, line),
						    .begin = e,
						    .end = UINT64_MAX,
						    .sure_begin = t,
						    .sure_end = UINT64_MAX};
				if (pl->win[pl->nwin - 1].phase >= pl->nphases)
					die_input(file, line, "phase index beyond the script");
			}
		} else if (!strcmp(type, "pass")) {
			if (pl->npasses == pl->cap) {
				pl->cap = pl->cap ? 2 * pl->cap : 1024;
				pl->passes = realloc(pl->passes, pl->cap * sizeof(*pl->passes));
			}
			pl->passes[pl->npasses++] =
			    (struct pass){.phase = (int)get_u64(o, "phase", file, line),
					  .t_start = get_u64(o, "t_start_ns", file, line),
					  .t_end = get_u64(o, "t_end_ns", file, line)};
		}
		json_object_put(o);
	}
	free(buf);
	fclose(f);
	if (!pl->nphases)
		die_input(file, line, "no script line");
}

static roaring_bitmap_t *gfns(const struct hvt_pageset *sets, const struct hvt_layout *l)
{
	roaring_bitmap_t *set = roaring_bitmap_create();

	for (uint32_t i = 0; i < l->nslots; i++) {
		uint64_t pos = 0, base = hvt_memslot_first_gfn(l, &l->slots[i]);
		struct hvt_run run;

		while (hvt_pageset_next_run(&sets[i], &pos, &run))
			roaring_bitmap_add_range(set, base + run.first, base + run.first + run.count);
	}
	return set;
}

static void print_some(const char *what, const roaring_bitmap_t *set)
{
	roaring_uint32_iterator_t *it = roaring_create_iterator(set);
	int n = 0;

	printf("    %s (%" PRIu64 "):", what, roaring_bitmap_get_cardinality(set));
	for (; it->has_value && n < 12; roaring_advance_uint32_iterator(it), n++)
		printf(" 0x%x", it->current_value);
	printf("%s\n", it->has_value ? " …" : "");
	roaring_free_uint32_iterator(it);
}

/*
 * One kind of set (written or accessed) of one interval against the phases: must ⊆ set ⊆ may, no page of
 * `none` (pages the payload never touches) in it, and when the interval lies wholly inside phase `whole`
 * (>= 0), set = phase_sets[whole] apart from system pages.
 */
static bool check_set(const char *what, const struct hvt_pageset *sets, const struct hvt_layout *l,
		      const struct hvt_interval *iv, roaring_bitmap_t *const *phase_sets,
		      const struct phaselog *pl, const roaring_bitmap_t *none, uint64_t wide_start,
		      uint64_t wide_end, int whole)
{
	roaring_bitmap_t *set = gfns(sets, l), *must = roaring_bitmap_create();
	roaring_bitmap_t *may = roaring_bitmap_copy(pl->system);

	for (size_t p = 0; p < pl->npasses; p++)
		if (pl->passes[p].t_start >= iv->t_start_ns && pl->passes[p].t_end <= iv->t_end_ns)
			roaring_bitmap_or_inplace(must, phase_sets[pl->passes[p].phase]);
	for (int w = 0; w < pl->nwin; w++)
		if (pl->win[w].begin <= wide_end && pl->win[w].end >= wide_start)
			roaring_bitmap_or_inplace(may, phase_sets[pl->win[w].phase]);

	roaring_bitmap_andnot_inplace(may, none);
	bool ok = roaring_bitmap_is_subset(must, set) && roaring_bitmap_is_subset(set, may);
	if (whole >= 0) {
		roaring_bitmap_t *payload = roaring_bitmap_andnot(set, pl->system);

		ok = ok && roaring_bitmap_equals(payload, phase_sets[whole]);
		roaring_bitmap_free(payload);
	}
	printf("  %s: %" PRIu64 " pages, %" PRIu64 " required: %s\n", what,
	       roaring_bitmap_get_cardinality(set), roaring_bitmap_get_cardinality(must),
	       ok ? "ok" : "MISMATCH");
	if (!ok) {
		roaring_bitmap_t *missing = roaring_bitmap_andnot(whole >= 0 ? phase_sets[whole] : must, set);
		roaring_bitmap_t *extra = roaring_bitmap_andnot(set, whole >= 0 ? phase_sets[whole] : may);
		roaring_bitmap_t *untouched = roaring_bitmap_and(set, none);

		roaring_bitmap_andnot_inplace(extra, pl->system);
		print_some("missing", missing);
		print_some("unexpected", extra);
		if (!roaring_bitmap_is_empty(untouched))
			print_some("never touched by the payload", untouched);
		roaring_bitmap_free(untouched);
		roaring_bitmap_free(missing);
		roaring_bitmap_free(extra);
	}
	roaring_bitmap_free(set);
	roaring_bitmap_free(must);
	roaring_bitmap_free(may);
	return ok;
}

/*
 * Written ⊆ accessed, as the kernel reported the sets: the tracer adds a written page the harvest did not
 * report accessed to the accessed set and counts it, so the count must be there and 0.
 */
static bool check_written_in_accessed(const struct hvt_interval *iv, const struct hvt_layout *l)
{
	roaring_bitmap_t *w = gfns(iv->written, l), *a = gfns(iv->accessed, l);
	bool subset = roaring_bitmap_is_subset(w, a), counted = iv->flags & HVT_IV_WNA_COUNTED;
	bool ok = subset && counted && !iv->written_not_accessed;

	if (!ok) {
		printf("  written ⊆ accessed: MISMATCH: ");
		if (!counted)
			printf("the trace does not count written_not_accessed\n");
		else if (!subset)
			printf("written pages outside the accessed set\n");
		else
			printf("the kernel reported %" PRIu64 " page%s written but not accessed\n",
			       iv->written_not_accessed, iv->written_not_accessed == 1 ? "" : "s");
	}
	roaring_bitmap_free(w);
	roaring_bitmap_free(a);
	return ok;
}

int main(int argc, char **argv)
{
	const char *trace = NULL, *log = NULL;
	int min_inside = 1, min_exact = 1, failures = 0, inside[MAX_PHASES] = {0}, boundary = 0, exact = 0;
	int too_few = 0;
	int partial = 0, with_accessed = 0, before = 0;
	bool need_accessed = false, shadow_mmu = false, from_first = false;
	roaring_bitmap_t *none;
	struct hvt_trace_reader *r;
	struct hvt_err err = {{0}};
	struct phaselog pl;
	uint64_t prev_snapshot = 0;
	const struct hvt_option opts[] = {
	    HVT_OPT_PATH(0, "trace", &trace, "FILE", "the trace", .required = true),
	    HVT_OPT_PATH(0, "phase-log", &log, "FILE", "hvmtrace-vmm's (or qemu_phases') phase log",
			 .required = true),
	    HVT_OPT_INT(0, "min-inside", &min_inside, 0, INT32_MAX, "N",
			"exact intervals each phase needs (default 1)"),
	    HVT_OPT_INT(0, "min-exact", &min_exact, 0, INT32_MAX, "N",
			"exact intervals needed in all (default 1)"),
	    HVT_OPT_FLAG(0, "accessed", &need_accessed, "require accessed sets (a trace in mode ad)"),
	    HVT_OPT_FLAG(0, "shadow-mmu", &shadow_mmu,
			 "the guest ran under KVM's shadow MMU: its page-table pages are in no set"),
	    HVT_OPT_FLAG(0, "from-first-phase", &from_first,
			 "hold no interval that began before the first phase (the guest's boot)"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {.prog = "check_phases", .options = opts, .usage_status = 2};
	int rc = hvt_opts_parse(&cmd, argc, argv);

	if (rc != HVT_OPTS_RUN)
		return rc;
	read_phaselog(log, &pl);
	none = roaring_bitmap_copy(pl.untouched);
	if (shadow_mmu)
		roaring_bitmap_or_inplace(none, pl.tables);
	if (hvt_trace_open(&r, trace, &err)) {
		fprintf(stderr, "check_phases: %s\n", err.msg);
		return 2;
	}

	for (uint64_t i = 0, n = hvt_trace_interval_count(r); i < n; i++) {
		struct hvt_interval iv;
		const struct hvt_layout *l;

		if (hvt_trace_read_interval(r, i, &iv, &err)) {
			fprintf(stderr, "check_phases: %s\n", err.msg);
			return 2;
		}
		l = hvt_trace_layout(r, iv.generation);
		uint64_t wide_start = i ? prev_snapshot : iv.t_start_ns,
			 wide_end = iv.t_end_ns + iv.harvest_ns;
		int whole = -1, passes_inside = 0;

		prev_snapshot = iv.t_end_ns;
		if (from_first && (!pl.nwin || wide_start < pl.win[0].begin)) {
			printf("interval %" PRIu64 " [%.3f, %.3f] before the first phase: not held\n", iv.seq,
			       iv.t_start_ns / 1e9, iv.t_end_ns / 1e9);
			before++;
			hvt_interval_fini(&iv);
			continue;
		}
		for (size_t p = 0; p < pl.npasses; p++)
			if (pl.passes[p].t_start >= iv.t_start_ns && pl.passes[p].t_end <= iv.t_end_ns)
				passes_inside++;
		for (int w = 0; w < pl.nwin; w++)
			if (pl.win[w].sure_begin <= wide_start && wide_end < pl.win[w].sure_end)
				whole = pl.win[w].phase;

		char kind[64] = "boundary";
		if (whole >= 0 && passes_inside > 0) {
			snprintf(kind, sizeof(kind), "inside phase %d", whole);
		} else if (whole >= 0) {
			snprintf(kind, sizeof(kind), "inside phase %d, shorter than a pass", whole);
			whole = -1; /* held to the bounds only */
			partial++;
		} else {
			boundary++;
		}
		printf("interval %" PRIu64 " [%.3f, %.3f] %s, %d passes inside:\n", iv.seq,
		       iv.t_start_ns / 1e9, iv.t_end_ns / 1e9, kind, passes_inside);
		bool ok =
		    check_set("written", iv.written, l, &iv, pl.w, &pl, none, wide_start, wide_end, whole);
		if (iv.accessed) {
			with_accessed++;
			ok = check_set("accessed", iv.accessed, l, &iv, pl.a, &pl, none, wide_start, wide_end,
				       whole) &&
			     ok;
			ok = check_written_in_accessed(&iv, l) && ok;
		} else if (need_accessed) {
			printf(
			    "  accessed: none in this interval (--accessed needs a trace in mode ad): MISMATCH\n");
			ok = false;
		}
		if (!ok)
			failures++;
		else if (whole >= 0) {
			inside[whole]++;
			exact++;
		}
		hvt_interval_fini(&iv);
	}
	for (int k = 0; k < pl.nphases; k++)
		if (inside[k] < min_inside) {
			printf("phase %d: only %d intervals wholly inside it (need %d): make phases longer\n",
			       k, inside[k], min_inside);
			too_few++;
		}
	if (exact < min_exact) {
		printf("only %d exact intervals in all (need %d)\n", exact, min_exact);
		too_few++;
	}
	printf("%" PRIu64 " intervals: ", hvt_trace_interval_count(r));
	if (from_first)
		printf("%d before the first phase, ", before);
	printf("%d boundary, %d inside but shorter than a pass, %d exact (per phase:", boundary, partial,
	       exact);
	for (int k = 0; k < pl.nphases; k++)
		printf(" %d", inside[k]);
	printf("); accessed sets in %d; %d failures", with_accessed, failures + too_few);
	if (too_few)
		printf(" (%d of them too few exact intervals)", too_few);
	printf("\n");
	hvt_trace_reader_close(r);
	for (int k = 0; k < pl.nphases; k++) {
		roaring_bitmap_free(pl.w[k]);
		roaring_bitmap_free(pl.a[k]);
	}
	roaring_bitmap_free(pl.system);
	roaring_bitmap_free(pl.untouched);
	roaring_bitmap_free(pl.tables);
	roaring_bitmap_free(none);
	free(pl.passes);
	return failures ? 1 : too_few ? 3 : 0;
}
