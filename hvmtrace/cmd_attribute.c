// SPDX-License-Identifier: MIT
/*
 * hvmtrace attribute TRACE [--owners SNAPSHOT]: the trace's written and accessed pages by owner, from the
 * guest agent hvmtrace-guest's snapshots the trace holds, or one of a file (docs/attribution.md): per
 * process, or per page kind, per interval and in all, with the top writers. A page several processes own
 * is counted as shared, a page no process owns as such; nothing is guessed. A snapshot is one moment: pages
 * that changed hands since are counted by the owner it names.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute/owners_ids.h"
#include "attribute/owners_map.h"
#include "attribute/owners_snapshot.h"
#include "attribute/owners_timeline.h"
#include "commands.h"
#include "hvmtrace/options.h"
#include "hvmtrace/trace_input.h"
#include "hvmtrace/trace_meta.h"
#include "hvmtrace/util.h"

struct pair {
	uint64_t w, a;
};

struct cell {
	uint32_t owner;
	struct pair p;
};

struct iv_row {
	uint64_t index, seq, start_ns, end_ns;
	size_t snapshot; /* the one it was attributed by */
	size_t first_cell, ncells;
	struct pair shared, none;
};

struct attr_ctx {
	const struct owners_timeline *tl;
	struct owners_map *maps;     /* per snapshot, of the owners counted by (--by) */
	struct owners_ids ids;       /* the owners of every snapshot, one numbering */
	uint64_t *snap_intervals;    /* per snapshot: intervals attributed by it */
	bool accessed;               /* the trace has accessed sets (mode ad) */
	bool keep_rows;              /* per-interval rows (--intervals, --json) */
	struct owners_count cw, ca;  /* by the interval's snapshot's owner indexes */
	struct pair *total;          /* per owner id, summed over intervals */
	uint64_t *intervals_written; /* per owner id: intervals in which it wrote */
	struct pair shared, none;
	uint64_t intervals;
	struct iv_row *rows;
	size_t nrows, rows_cap;
	struct cell *cells;
	size_t ncells, cells_cap;
};

/*
 * The snapshot interval iv is attributed by: the latest received by its end, else the first (a snapshot of a
 * file, untimed, is the only one). The one place the rule is; the owner views may choose otherwise.
 */
static size_t snapshot_for_interval(const struct owners_timeline *tl, const struct hvt_interval *iv)
{
	size_t pick = 0;

	for (size_t i = 0; tl->timed && i < tl->n && tl->at_ns[i] <= iv->t_end_ns; i++)
		pick = i;
	return pick;
}

/* The owners an interval's counts touched, each once (written's, then accessed's not already there), by id.
 */
static int put_cells(struct attr_ctx *x, struct iv_row *row, const uint32_t *id)
{
	row->first_cell = x->ncells;
	for (int pass = 0; pass < 2; pass++) {
		const struct owners_count *c = pass ? &x->ca : &x->cw;

		for (size_t i = 0; i < c->ntouched; i++) {
			uint32_t o = c->touched[i];

			if (pass && x->cw.per_owner[o])
				continue;
			if (hvt_array_room((void **)&x->cells, &x->cells_cap, x->ncells, sizeof(*x->cells)))
				return -ENOMEM;
			x->cells[x->ncells++] =
			    (struct cell){id[o], {x->cw.per_owner[o], x->ca.per_owner[o]}};
		}
	}
	row->ncells = x->ncells - row->first_cell;
	return 0;
}

static void reset(struct owners_count *c)
{
	for (size_t i = 0; i < c->ntouched; i++)
		c->per_owner[c->touched[i]] = 0;
	c->ntouched = 0;
	c->shared = c->none = 0;
}

static int attribute_one(void *arg, const struct hvt_walk_iv *w)
{
	struct attr_ctx *x = arg;
	const struct hvt_interval *iv = &w->ir->hdr;
	size_t snap = snapshot_for_interval(x->tl, iv);
	const struct owners_snapshot *s = &x->tl->snap[snap];
	const uint32_t *id = x->ids.id[snap];
	struct iv_row row = {.index = w->index,
			     .seq = iv->seq,
			     .start_ns = iv->t_start_ns - w->t0_ns,
			     .end_ns = iv->t_end_ns - w->t0_ns,
			     .snapshot = snap};

	if (!(iv->flags & (HVT_IV_WRITTEN | HVT_IV_ACCESSED)))
		return 0; /* no sets (a final record after a refused layout) */
	if (w->layout->page_size != s->page_size) {
		fprintf(stderr,
			"hvmtrace attribute: interval %" PRIu64 " has pages of %" PRIu32
			" bytes, the snapshot's are %" PRIu32 " bytes\n",
			w->index, w->layout->page_size, s->page_size);
		return TRACE_USAGE;
	}
	reset(&x->cw);
	reset(&x->ca);
	if (iv->flags & HVT_IV_WRITTEN)
		owners_map_count(&x->maps[snap], &w->ir->set[0], &x->cw);
	if (iv->flags & HVT_IV_ACCESSED)
		owners_map_count(&x->maps[snap], &w->ir->set[1], &x->ca);
	x->snap_intervals[snap]++;
	for (size_t i = 0; i < x->cw.ntouched; i++) {
		uint32_t o = x->cw.touched[i];

		x->total[id[o]].w += x->cw.per_owner[o];
		x->intervals_written[id[o]]++;
	}
	for (size_t i = 0; i < x->ca.ntouched; i++)
		x->total[id[x->ca.touched[i]]].a += x->ca.per_owner[x->ca.touched[i]];
	row.shared = (struct pair){x->cw.shared, x->ca.shared};
	row.none = (struct pair){x->cw.none, x->ca.none};
	x->shared.w += row.shared.w, x->shared.a += row.shared.a;
	x->none.w += row.none.w, x->none.a += row.none.a;
	x->intervals++;
	if (!x->keep_rows)
		return 0;
	if (put_cells(x, &row, id) ||
	    hvt_array_room((void **)&x->rows, &x->rows_cap, x->nrows, sizeof(*x->rows)))
		return -ENOMEM;
	x->rows[x->nrows++] = row;
	return 0;
}

/* ---- output ---- */

static const struct attr_ctx *sort_ctx;

/* Top writers first: written, then accessed, then the lower index. */
static int cmp_owner(const void *a, const void *b)
{
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	const struct pair *p = &sort_ctx->total[i], *q = &sort_ctx->total[j];

	if (p->w != q->w)
		return p->w < q->w ? 1 : -1;
	if (p->a != q->a)
		return p->a < q->a ? 1 : -1;
	return i < j ? -1 : i > j;
}

static void owner_label(const struct owner *o, char *buf, size_t len)
{
	if (o->type == HVT_OWN_KIND)
		snprintf(buf, len, "%s", owners_kind_name(o->kind));
	else
		snprintf(buf, len, "%s[%" PRIu32 "]%s", o->name, o->pid,
			 o->flags & HVT_OWN_PARTIAL ? "*" : "");
}

static void put_count(uint64_t v, bool known)
{
	if (known)
		printf(" %12" PRIu64, v);
	else
		printf(" %12s", "-");
}

static void print_text(const struct attr_ctx *x, const uint32_t *order, size_t nord, uint8_t type, size_t top,
		       const char *trace, const char *owners, size_t index, size_t count, bool intervals)
{
	const char *nobody = type == HVT_OWN_PROCESS ? "(no process)" : "(no kind)";
	char label[300];
	size_t shown = 0;

	if (owners) {
		const struct owners_snapshot *s = &x->tl->snap[0];

		printf(
		    "hvmtrace attribute: %s by %s, owners from %s (snapshot %zu of %zu: %zu processes, %zu "
		    "kinds%s)\n",
		    trace, type == HVT_OWN_PROCESS ? "process" : "kind", owners, index, count, s->nprocesses,
		    s->nowners - s->nprocesses,
		    s->flags & HVT_OWN_TRUNCATED ? "; truncated: processes left out" : "");
	} else {
		size_t truncated = 0;

		for (size_t i = 0; i < x->tl->n; i++)
			truncated += (x->tl->snap[i].flags & HVT_OWN_TRUNCATED) != 0;
		printf("hvmtrace attribute: %s by %s, owners from the trace's %zu snapshots (%zu owners in "
		       "all%s); each interval by the latest received by its end\n",
		       trace, type == HVT_OWN_PROCESS ? "process" : "kind", x->tl->n, x->ids.n,
		       truncated ? "; some truncated: processes left out" : "");
	}
	printf("%" PRIu64 " intervals; pages summed over intervals%s\n", x->intervals,
	       x->accessed ? "" : "; a dirty-log trace has no accessed pages (-)");
	if (intervals) {
		printf("%8s %10s %-32s %12s %12s\n", "interval", "start_s", "owner", "written", "accessed");
		for (size_t r = 0; r < x->nrows; r++) {
			const struct iv_row *row = &x->rows[r];

			for (size_t c = 0; c < row->ncells; c++) {
				const struct cell *cl = &x->cells[row->first_cell + c];

				owner_label(x->ids.owner[cl->owner], label, sizeof(label));
				printf("%8" PRIu64 " %10.3f %-32s", row->index, row->start_ns / 1e9, label);
				put_count(cl->p.w, true);
				put_count(cl->p.a, x->accessed);
				putchar('\n');
			}
			if (row->shared.w || row->shared.a) {
				printf("%8" PRIu64 " %10.3f %-32s", row->index, row->start_ns / 1e9,
				       "(shared)");
				put_count(row->shared.w, true);
				put_count(row->shared.a, x->accessed);
				putchar('\n');
			}
			if (row->none.w || row->none.a) {
				printf("%8" PRIu64 " %10.3f %-32s", row->index, row->start_ns / 1e9, nobody);
				put_count(row->none.w, true);
				put_count(row->none.a, x->accessed);
				putchar('\n');
			}
		}
	}
	printf("top writers:\n%4s %-32s %8s %-24s %12s %12s %10s\n", "rank", "owner", "pages", "cgroup",
	       "written", "accessed", "intervals");
	for (size_t i = 0; i < nord && shown < top; i++) {
		const struct owner *o = x->ids.owner[order[i]];

		if (!x->total[order[i]].w && !x->total[order[i]].a)
			break;
		owner_label(o, label, sizeof(label));
		printf("%4zu %-32s %8" PRIu64 " %-24s", ++shown, label, o->pages,
		       o->cgroup[0] ? o->cgroup : "-");
		put_count(x->total[order[i]].w, true);
		put_count(x->total[order[i]].a, x->accessed);
		printf(" %10" PRIu64 "\n", x->intervals_written[order[i]]);
	}
	if (type == HVT_OWN_PROCESS) {
		printf("%4s %-32s %8s %-24s", "", "(shared by several processes)", "", "");
		put_count(x->shared.w, true);
		put_count(x->shared.a, x->accessed);
		putchar('\n');
	}
	printf("%4s %-32s %8s %-24s", "", nobody, "", "");
	put_count(x->none.w, true);
	put_count(x->none.a, x->accessed);
	printf("\n%s\n",
	       type == HVT_OWN_PROCESS
		   ? "(no process: the kernel, page cache, free pages, processes exited or not scanned;\n"
		     " * partial: a mapping too large for the agent to scan)"
		   : "(no kind: not memory the guest's kernel knows)");
}

static struct json_object *json_pair(const struct pair *p, bool accessed)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "written", json_object_new_uint64(p->w));
	json_object_object_add(o, "accessed", accessed ? json_object_new_uint64(p->a) : NULL);
	return o;
}

static void print_json(const struct attr_ctx *x, const uint32_t *order, size_t nord, uint8_t type,
		       const char *trace, const char *owners, size_t index, size_t count)
{
	struct json_object *o = json_object_new_object(), *snaps = json_object_new_array();
	struct json_object *list = json_object_new_array(), *ivs = json_object_new_array();

	json_object_object_add(o, "trace", json_object_new_string(trace));
	json_object_object_add(o, "owners_file", owners ? json_object_new_string(owners) : NULL);
	json_object_object_add(o, "by", json_object_new_string(type == HVT_OWN_PROCESS ? "process" : "kind"));
	for (size_t i = 0; i < x->tl->n; i++) {
		const struct owners_snapshot *s = &x->tl->snap[i];
		struct json_object *snap = json_object_new_object();

		json_object_object_add(snap, "index", json_object_new_uint64(owners ? index : i));
		json_object_object_add(snap, "of", json_object_new_uint64(owners ? count : x->tl->n));
		json_object_object_add(snap, "at_ns",
				       x->tl->timed ? json_object_new_uint64(x->tl->at_ns[i]) : NULL);
		json_object_object_add(snap, "time_ns", json_object_new_uint64(s->time_ns));
		json_object_object_add(snap, "processes", json_object_new_uint64(s->nprocesses));
		json_object_object_add(snap, "truncated",
				       json_object_new_boolean(s->flags & HVT_OWN_TRUNCATED));
		json_object_object_add(snap, "intervals", json_object_new_uint64(x->snap_intervals[i]));
		if (owners)
			json_object_object_add(o, "snapshot", json_object_get(snap));
		json_object_array_add(snaps, snap);
	}
	json_object_object_add(o, "snapshots", snaps);
	json_object_object_add(o, "intervals_counted", json_object_new_uint64(x->intervals));
	for (size_t i = 0; i < nord; i++) {
		const struct owner *w = x->ids.owner[order[i]];
		struct json_object *e = json_pair(&x->total[order[i]], x->accessed);

		json_object_object_add(e, "id", json_object_new_uint64(order[i]));
		if (w->type == HVT_OWN_KIND) {
			json_object_object_add(e, "kind", json_object_new_string(owners_kind_name(w->kind)));
		} else {
			json_object_object_add(e, "pid", json_object_new_uint64(w->pid));
			json_object_object_add(e, "name", json_object_new_string(w->name));
			json_object_object_add(e, "cgroup", json_object_new_string(w->cgroup));
			json_object_object_add(e, "partial",
					       json_object_new_boolean(w->flags & HVT_OWN_PARTIAL));
		}
		json_object_object_add(e, "pages", json_object_new_uint64(w->pages));
		json_object_object_add(e, "intervals_written",
				       json_object_new_uint64(x->intervals_written[order[i]]));
		json_object_array_add(list, e);
	}
	json_object_object_add(o, "owners", list);
	json_object_object_add(o, "shared", json_pair(&x->shared, x->accessed));
	json_object_object_add(o, "none", json_pair(&x->none, x->accessed));
	for (size_t r = 0; r < x->nrows; r++) {
		const struct iv_row *row = &x->rows[r];
		struct json_object *e = json_object_new_object(), *cells = json_object_new_array();

		json_object_object_add(e, "index", json_object_new_uint64(row->index));
		json_object_object_add(e, "seq", json_object_new_uint64(row->seq));
		json_object_object_add(e, "start_ns", json_object_new_uint64(row->start_ns));
		json_object_object_add(e, "end_ns", json_object_new_uint64(row->end_ns));
		json_object_object_add(e, "snapshot", json_object_new_uint64(row->snapshot));
		for (size_t c = 0; c < row->ncells; c++) {
			const struct cell *cl = &x->cells[row->first_cell + c];
			struct json_object *ce = json_pair(&cl->p, x->accessed);

			json_object_object_add(ce, "id", json_object_new_uint64(cl->owner));
			json_object_array_add(cells, ce);
		}
		json_object_object_add(e, "owners", cells);
		json_object_object_add(e, "shared", json_pair(&row->shared, x->accessed));
		json_object_object_add(e, "none", json_pair(&row->none, x->accessed));
		json_object_array_add(ivs, e);
	}
	json_object_object_add(o, "intervals", ivs);
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	json_object_put(o);
}

/* ---- the command ---- */

/* Counts by each snapshot's owners (maps and per-snapshot arrays) and by owner id (totals). */
static int alloc_ctx(struct attr_ctx *x, const struct owners_timeline *tl, uint8_t by)
{
	size_t n, per;

	x->tl = tl;
	if (owners_ids_build(tl, &x->ids))
		return -ENOMEM;
	n = x->ids.n;
	per = x->ids.max_owners;
	x->maps = calloc(tl->n + 1, sizeof(*x->maps));
	x->snap_intervals = calloc(tl->n + 1, sizeof(uint64_t));
	x->cw.per_owner = calloc(per + 1, sizeof(uint64_t));
	x->ca.per_owner = calloc(per + 1, sizeof(uint64_t));
	x->cw.touched = calloc(per + 1, sizeof(uint32_t));
	x->ca.touched = calloc(per + 1, sizeof(uint32_t));
	x->total = calloc(n + 1, sizeof(*x->total));
	x->intervals_written = calloc(n + 1, sizeof(uint64_t));
	if (!x->maps || !x->snap_intervals || !x->cw.per_owner || !x->ca.per_owner || !x->cw.touched ||
	    !x->ca.touched || !x->total || !x->intervals_written)
		return -ENOMEM;
	for (size_t i = 0; i < tl->n; i++)
		if (owners_map_build(&tl->snap[i], by, &x->maps[i]))
			return -ENOMEM;
	return 0;
}

static void free_ctx(struct attr_ctx *x)
{
	for (size_t i = 0; x->maps && i < x->tl->n; i++)
		owners_map_free(&x->maps[i]);
	free(x->maps);
	free(x->snap_intervals);
	if (x->tl)
		owners_ids_free(&x->ids, x->tl->n);
	free(x->cw.per_owner);
	free(x->ca.per_owner);
	free(x->cw.touched);
	free(x->ca.touched);
	free(x->total);
	free(x->intervals_written);
	free(x->rows);
	free(x->cells);
}

int cmd_attribute(int argc, char **argv)
{
	static const struct hvt_exit_status exits[] = {
	    {TRACE_OK, "attributed"},
	    {TRACE_OUTPUT_FAILED, "out of memory"},
	    {TRACE_USAGE,
	     "bad arguments, TRACE or SNAPSHOT unreadable or refused, or they do not belong together"},
	    {TRACE_INCOMPLETE, "the trace is incomplete (everything before the damage was attributed)"},
	    {0, NULL},
	};
	static const struct hvt_opt_choice bys[] = {
	    {"process", HVT_OWN_PROCESS}, {"kind", HVT_OWN_KIND}, {NULL}};
	const char *path = "hvmtrace.hvt", *owners = NULL;
	int by = HVT_OWN_PROCESS, top = 10, index = 0;
	bool json = false, intervals = false;
	const struct hvt_option opts[] = {
	    HVT_OPT_OPERAND(&path, "TRACE", "the trace (default hvmtrace.hvt)"),
	    HVT_OPT_PATH(0, "owners", &owners, "SNAPSHOT",
			 "who owns which page: hvmtrace-guest's output (docs/attribution.md); without it,\n"
			 "the snapshots the trace holds (record --owners-port), each interval by the\n"
			 "latest received by its end"),
	    HVT_OPT_INT(0, "snapshot", &index, 0, HVT_OWN_MAX_OWNERS, "N",
			"which snapshot of SNAPSHOT, from 0 (default 0)"),
	    HVT_OPT_CHOICE(
		0, "by", &by, bys, "process|kind",
		"owners: the guest's processes (default), or its pages' kinds (anon, cache, slab, …)"),
	    HVT_OPT_INT(0, "top", &top, 1, 1000000, "N", "the top writers shown (default 10)"),
	    HVT_OPT_FLAG(0, "intervals", &intervals, "each interval's pages by owner too"),
	    HVT_OPT_FLAG(0, "json", &json, "everything, every interval included, as one JSON object"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace attribute",
	    .synopsis = "[--owners SNAPSHOT] [options] [TRACE]",
	    .about =
		"Whose pages the trace's are: written and accessed pages per guest process (or page kind), "
		"per interval and in all, with the top writers, from the snapshots of the guest agent "
		"hvmtrace-guest the trace holds, or one of a file. A page of several processes is counted "
		"as shared, never guessed.",
	    .options = opts,
	    .exits = exits,
	    .usage_status = TRACE_USAGE,
	};
	struct owners_timeline tl = {0};
	struct attr_ctx x = {0};
	struct hvt_selection sel = {0};
	struct hvt_err err = {{0}};
	struct hvt_trace_reader *r = NULL;
	uint64_t gfn_first, gfn_end;
	uint32_t *order = NULL;
	size_t count = 0, nord = 0;
	int status = hvt_opts_parse(&cmd, argc, argv);

	if (status != HVT_OPTS_RUN)
		return status;
	if (!owners && index) {
		fprintf(stderr,
			"hvmtrace attribute: --snapshot %d picks a snapshot of --owners SNAPSHOT; give it\n",
			index);
		return TRACE_USAGE;
	}
	if (owners && owners_timeline_from_file(owners, (size_t)index, &tl, &count, &err)) {
		fprintf(stderr, "hvmtrace attribute: %s\n", err.msg);
		return TRACE_USAGE;
	}
	r = trace_input_open("attribute", path);
	if (!r) {
		status = TRACE_USAGE;
		goto out;
	}
	if (!owners && (status = owners_timeline_from_trace(r, &tl, &err))) {
		fprintf(stderr, "hvmtrace attribute: %s\n", err.msg);
		status = status == -ENOMEM ? TRACE_OUTPUT_FAILED : TRACE_USAGE;
		goto out;
	}
	if (!tl.n) {
		fprintf(
		    stderr,
		    "hvmtrace attribute: %s holds no owners snapshots (record --owners-port stores them); "
		    "give --owners SNAPSHOT (hvmtrace-guest's output)\n",
		    path);
		status = TRACE_USAGE;
		goto out;
	}
	if (trace_input_span("attribute", path, r, &sel, &gfn_first, &gfn_end)) {
		status = TRACE_USAGE;
		goto out;
	}
	if (alloc_ctx(&x, &tl, (uint8_t)by) || !(order = malloc((x.ids.n + 1) * sizeof(*order)))) {
		fprintf(stderr, "hvmtrace attribute: out of memory\n");
		status = TRACE_OUTPUT_FAILED;
		goto out;
	}
	x.accessed = hvt_trace_meta(r)->mode == HVT_MODE_AD;
	x.keep_rows = json || intervals;
	status = trace_input_walk("attribute", path, r, &sel, gfn_first, gfn_end, true, attribute_one, &x);
	if (status == -ENOMEM) {
		fprintf(stderr, "hvmtrace attribute: out of memory\n");
		status = TRACE_OUTPUT_FAILED;
	}
	if (status != TRACE_OK && status != TRACE_INCOMPLETE)
		goto out;
	for (size_t i = 0; i < x.ids.n; i++)
		if (x.ids.owner[i]->type == by)
			order[nord++] = (uint32_t)i;
	sort_ctx = &x;
	qsort(order, nord, sizeof(*order), cmp_owner);
	if (json)
		print_json(&x, order, nord, (uint8_t)by, path, owners, (size_t)index, count);
	else
		print_text(&x, order, nord, (uint8_t)by, (size_t)top, path, owners, (size_t)index, count,
			   intervals);
out:
	free(order);
	free_ctx(&x);
	owners_timeline_free(&tl);
	hvt_trace_reader_close(r);
	return status;
}
