// SPDX-License-Identifier: MIT
/*
 * hvmtrace attribute TRACE --owners SNAPSHOT: the trace's written and accessed pages by owner, from a
 * snapshot of the guest agent hvmtrace-guest (docs/attribution.md): per process, or per page kind, per
 * interval and in all, with the top writers. A page several processes own is counted as shared, a page no
 * process owns as such; nothing is guessed. The snapshot is one moment: pages that changed hands since are
 * counted by the owner it names.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attribute/owners_interval.h"
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
	size_t snap_lo, snap_hi; /* the trace's snapshots that attribute it (owners_interval_span) */
	size_t first_cell, ncells;
	struct pair shared, none, changed;
};

struct attr_ctx {
	struct owners_interval *v;
	bool accessed;  /* the trace has accessed sets (mode ad) */
	bool keep_rows; /* per-interval rows (--intervals, --json) */
	struct owners_count cw, ca;
	struct pair *total;          /* per owner, summed over intervals */
	uint64_t *intervals_written; /* per owner: intervals in which it wrote */
	struct pair shared, none, changed;
	uint64_t intervals;
	struct iv_row *rows;
	size_t nrows, rows_cap;
	struct cell *cells;
	size_t ncells, cells_cap;
};

/* The owners an interval's counts touched, each once (written's, then accessed's not already there). */
static int put_cells(struct attr_ctx *x, struct iv_row *row)
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
			x->cells[x->ncells++] = (struct cell){o, {x->cw.per_owner[o], x->ca.per_owner[o]}};
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
	c->shared = c->none = c->changed = 0;
}

static int attribute_one(void *arg, const struct hvt_walk_iv *w)
{
	struct attr_ctx *x = arg;
	const struct hvt_interval *iv = &w->ir->hdr;
	const struct owners_timeline *tl = x->v->tl;
	const struct owners_map *m;
	struct iv_row row = {.index = w->index,
			     .seq = iv->seq,
			     .start_ns = iv->t_start_ns - w->t0_ns,
			     .end_ns = iv->t_end_ns - w->t0_ns};

	if (!(iv->flags & (HVT_IV_WRITTEN | HVT_IV_ACCESSED)))
		return 0; /* no sets (a final record after a refused layout) */
	for (size_t s = 0; s < tl->n; s++)
		if (w->layout->page_size != tl->snap[s].page_size) {
			fprintf(stderr,
				"hvmtrace attribute: interval %" PRIu64 " has pages of %" PRIu32
				" bytes, the snapshot's are %" PRIu32 " bytes\n",
				w->index, w->layout->page_size, tl->snap[s].page_size);
			return TRACE_USAGE;
		}
	m = owners_interval_map(x->v, iv->t_start_ns, iv->t_end_ns);
	if (!m)
		return -ENOMEM;
	owners_interval_span(tl, iv->t_start_ns, iv->t_end_ns, &row.snap_lo, &row.snap_hi);
	reset(&x->cw);
	reset(&x->ca);
	if (iv->flags & HVT_IV_WRITTEN)
		owners_map_count(m, &w->ir->set[0], &x->cw);
	if (iv->flags & HVT_IV_ACCESSED)
		owners_map_count(m, &w->ir->set[1], &x->ca);
	for (size_t i = 0; i < x->cw.ntouched; i++) {
		uint32_t o = x->cw.touched[i];

		x->total[o].w += x->cw.per_owner[o];
		x->intervals_written[o]++;
	}
	for (size_t i = 0; i < x->ca.ntouched; i++)
		x->total[x->ca.touched[i]].a += x->ca.per_owner[x->ca.touched[i]];
	row.shared = (struct pair){x->cw.shared, x->ca.shared};
	row.none = (struct pair){x->cw.none, x->ca.none};
	row.changed = (struct pair){x->cw.changed, x->ca.changed};
	x->shared.w += row.shared.w, x->shared.a += row.shared.a;
	x->none.w += row.none.w, x->none.a += row.none.a;
	x->changed.w += row.changed.w, x->changed.a += row.changed.a;
	x->intervals++;
	if (!x->keep_rows)
		return 0;
	if (put_cells(x, &row) || hvt_array_room((void **)&x->rows, &x->rows_cap, x->nrows, sizeof(*x->rows)))
		return -ENOMEM;
	x->rows[x->nrows++] = row;
	return 0;
}

/* ---- output ---- */

/* Where the owners came from, for the header line and JSON. */
struct source {
	const char *trace, *file; /* file NULL: the trace's own snapshots */
	size_t index, count;      /* a file's snapshot and how many it holds */
};

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

static const char *by_name(int by)
{
	return by == HVT_OWN_PROCESS ? "process" : by == HVT_OWN_KIND ? "kind" : "cgroup";
}

static void put_count(uint64_t v, bool known)
{
	if (known)
		printf(" %12" PRIu64, v);
	else
		printf(" %12s", "-");
}

static void print_iv_pair(const struct iv_row *row, const char *label, const struct pair *p, bool accessed)
{
	if (!p->w && !p->a)
		return;
	printf("%8" PRIu64 " %10.3f %-32s", row->index, row->start_ns / 1e9, label);
	put_count(p->w, true);
	put_count(p->a, accessed);
	putchar('\n');
}

static void print_header(const struct attr_ctx *x, const struct source *src)
{
	const struct owners_timeline *tl = x->v->tl;

	if (src->file) {
		const struct owners_snapshot *s = &tl->snap[0];

		printf(
		    "hvmtrace attribute: %s by %s, owners from %s (snapshot %zu of %zu: %zu processes, %zu "
		    "kinds%s)\n",
		    src->trace, by_name(x->v->by), src->file, src->index, src->count, s->nprocesses,
		    s->nowners - s->nprocesses,
		    s->flags & HVT_OWN_TRUNCATED ? "; truncated: processes left out" : "");
		return;
	}
	printf("hvmtrace attribute: %s by %s, owners from the trace's %zu snapshots (each interval by the "
	       "snapshots around it)\n",
	       src->trace, by_name(x->v->by), tl->n);
}

static void print_text(const struct attr_ctx *x, const uint32_t *order, size_t nord, size_t top,
		       const struct source *src, bool intervals)
{
	int by = x->v->by;
	const char *nobody = by == HVT_OWN_KIND ? "(no kind)" : "(no process)";
	bool timed = x->v->tl->timed;
	char label[300];
	size_t shown = 0;

	print_header(x, src);
	printf("%" PRIu64 " intervals; pages summed over intervals%s\n", x->intervals,
	       x->accessed ? "" : "; a dirty-log trace has no accessed pages (-)");
	if (intervals) {
		printf("%8s %10s %-32s %12s %12s\n", "interval", "start_s", "owner", "written", "accessed");
		for (size_t r = 0; r < x->nrows; r++) {
			const struct iv_row *row = &x->rows[r];

			for (size_t c = 0; c < row->ncells; c++) {
				const struct cell *cl = &x->cells[row->first_cell + c];

				owners_row_label(x->v, cl->owner, label, sizeof(label));
				printf("%8" PRIu64 " %10.3f %-32s", row->index, row->start_ns / 1e9, label);
				put_count(cl->p.w, true);
				put_count(cl->p.a, x->accessed);
				putchar('\n');
			}
			print_iv_pair(row, "(shared)", &row->shared, x->accessed);
			print_iv_pair(row, "(changed owner)", &row->changed, x->accessed);
			print_iv_pair(row, nobody, &row->none, x->accessed);
		}
	}
	printf("top writers:\n%4s %-32s %8s %-24s %12s %12s %10s\n", "rank", "owner", "pages", "cgroup",
	       "written", "accessed", "intervals");
	for (size_t i = 0; i < nord && shown < top; i++) {
		const struct owner_row *o = &x->v->rows[order[i]];

		if (!x->total[order[i]].w && !x->total[order[i]].a)
			break;
		owners_row_label(x->v, order[i], label, sizeof(label));
		printf("%4zu %-32s %8" PRIu64 " %-24s", ++shown, label, o->pages,
		       o->type == HVT_OWN_PROCESS && o->cgroup[0] ? o->cgroup : "-");
		put_count(x->total[order[i]].w, true);
		put_count(x->total[order[i]].a, x->accessed);
		printf(" %10" PRIu64 "\n", x->intervals_written[order[i]]);
	}
	if (by != HVT_OWN_KIND) {
		printf("%4s %-32s %8s %-24s", "",
		       by == HVT_OWN_PROCESS ? "(shared by several processes)"
					     : "(shared by several cgroups)",
		       "", "");
		put_count(x->shared.w, true);
		put_count(x->shared.a, x->accessed);
		putchar('\n');
	}
	if (timed) {
		printf("%4s %-32s %8s %-24s", "", "(changed owner)", "", "");
		put_count(x->changed.w, true);
		put_count(x->changed.a, x->accessed);
		putchar('\n');
	}
	printf("%4s %-32s %8s %-24s", "", nobody, "", "");
	put_count(x->none.w, true);
	put_count(x->none.a, x->accessed);
	printf("\n%s\n",
	       by != HVT_OWN_KIND
		   ? "(no process: the kernel, page cache, free pages, processes exited or not scanned;\n"
		     " * partial: a mapping too large for the agent to scan)"
		   : "(no kind: not memory the guest's kernel knows)");
	if (timed)
		puts("(changed owner: the snapshots before and after an interval name different owners)");
}

static struct json_object *json_pair(const struct pair *p, bool accessed)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "written", json_object_new_uint64(p->w));
	json_object_object_add(o, "accessed", accessed ? json_object_new_uint64(p->a) : NULL);
	return o;
}

static struct json_object *json_snapshot(const struct owners_snapshot *s)
{
	struct json_object *snap = json_object_new_object();

	json_object_object_add(snap, "time_ns", json_object_new_uint64(s->time_ns));
	json_object_object_add(snap, "processes", json_object_new_uint64(s->nprocesses));
	json_object_object_add(snap, "truncated", json_object_new_boolean(s->flags & HVT_OWN_TRUNCATED));
	return snap;
}

static void json_sources(struct json_object *o, const struct attr_ctx *x, const struct source *src)
{
	const struct owners_timeline *tl = x->v->tl;
	struct json_object *list;

	json_object_object_add(o, "owners_file", src->file ? json_object_new_string(src->file) : NULL);
	if (src->file) {
		struct json_object *snap = json_snapshot(&tl->snap[0]);

		json_object_object_add(snap, "index", json_object_new_uint64(src->index));
		json_object_object_add(snap, "of", json_object_new_uint64(src->count));
		json_object_object_add(o, "snapshot", snap);
		return;
	}
	list = json_object_new_array();
	for (size_t i = 0; i < tl->n; i++) {
		struct json_object *snap = json_snapshot(&tl->snap[i]);

		json_object_object_add(snap, "at_ns", json_object_new_uint64(tl->at_ns[i]));
		json_object_array_add(list, snap);
	}
	json_object_object_add(o, "snapshots", list);
}

static void print_json(const struct attr_ctx *x, const uint32_t *order, size_t nord, const struct source *src)
{
	struct json_object *o = json_object_new_object();
	struct json_object *list = json_object_new_array(), *ivs = json_object_new_array();

	json_object_object_add(o, "trace", json_object_new_string(src->trace));
	json_sources(o, x, src);
	json_object_object_add(o, "by", json_object_new_string(by_name(x->v->by)));
	json_object_object_add(o, "intervals_counted", json_object_new_uint64(x->intervals));
	for (size_t i = 0; i < nord; i++) {
		const struct owner_row *w = &x->v->rows[order[i]];
		struct json_object *e = json_pair(&x->total[order[i]], x->accessed);

		json_object_object_add(e, "id", json_object_new_uint64(order[i]));
		if (w->type == HVT_OWN_KIND) {
			json_object_object_add(e, "kind", json_object_new_string(owners_kind_name(w->kind)));
		} else if (w->type == HVT_OWN_PROCESS) {
			json_object_object_add(e, "pid", json_object_new_uint64(w->pid));
			json_object_object_add(e, "name", json_object_new_string(w->name));
			json_object_object_add(e, "cgroup", json_object_new_string(w->cgroup));
			json_object_object_add(e, "partial",
					       json_object_new_boolean(w->flags & HVT_OWN_PARTIAL));
		} else {
			json_object_object_add(e, "cgroup", json_object_new_string(w->name));
		}
		json_object_object_add(e, "pages", json_object_new_uint64(w->pages));
		json_object_object_add(e, "snapshots", json_object_new_uint64(w->snapshots));
		json_object_object_add(e, "intervals_written",
				       json_object_new_uint64(x->intervals_written[order[i]]));
		json_object_array_add(list, e);
	}
	json_object_object_add(o, "owners", list);
	json_object_object_add(o, "shared", json_pair(&x->shared, x->accessed));
	json_object_object_add(o, "changed", json_pair(&x->changed, x->accessed));
	json_object_object_add(o, "none", json_pair(&x->none, x->accessed));
	for (size_t r = 0; r < x->nrows; r++) {
		const struct iv_row *row = &x->rows[r];
		struct json_object *e = json_object_new_object(), *cells = json_object_new_array();

		json_object_object_add(e, "index", json_object_new_uint64(row->index));
		json_object_object_add(e, "seq", json_object_new_uint64(row->seq));
		json_object_object_add(e, "start_ns", json_object_new_uint64(row->start_ns));
		json_object_object_add(e, "end_ns", json_object_new_uint64(row->end_ns));
		if (x->v->tl->timed && row->snap_lo <= row->snap_hi) { /* by the trace's own snapshots */
			struct json_object *span = json_object_new_array();

			json_object_array_add(span, json_object_new_uint64(row->snap_lo));
			json_object_array_add(span, json_object_new_uint64(row->snap_hi));
			json_object_object_add(e, "snapshots", span);
		}
		for (size_t c = 0; c < row->ncells; c++) {
			const struct cell *cl = &x->cells[row->first_cell + c];
			struct json_object *ce = json_pair(&cl->p, x->accessed);

			json_object_object_add(ce, "id", json_object_new_uint64(cl->owner));
			json_object_array_add(cells, ce);
		}
		json_object_object_add(e, "owners", cells);
		json_object_object_add(e, "shared", json_pair(&row->shared, x->accessed));
		json_object_object_add(e, "changed", json_pair(&row->changed, x->accessed));
		json_object_object_add(e, "none", json_pair(&row->none, x->accessed));
		json_object_array_add(ivs, e);
	}
	json_object_object_add(o, "intervals", ivs);
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
	json_object_put(o);
}

/* ---- the command ---- */

static int alloc_ctx(struct attr_ctx *x, size_t n)
{
	x->cw.per_owner = calloc(n + 1, sizeof(uint64_t));
	x->ca.per_owner = calloc(n + 1, sizeof(uint64_t));
	x->cw.touched = calloc(n + 1, sizeof(uint32_t));
	x->ca.touched = calloc(n + 1, sizeof(uint32_t));
	x->total = calloc(n + 1, sizeof(*x->total));
	x->intervals_written = calloc(n + 1, sizeof(uint64_t));
	return x->cw.per_owner && x->ca.per_owner && x->cw.touched && x->ca.touched && x->total &&
		       x->intervals_written
		   ? 0
		   : -ENOMEM;
}

static void free_ctx(struct attr_ctx *x)
{
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
	    {"process", HVT_OWN_PROCESS}, {"kind", HVT_OWN_KIND}, {"cgroup", OWNERS_BY_CGROUP}, {NULL}};
	const char *path = "hvmtrace.hvt", *owners = NULL;
	int by = HVT_OWN_PROCESS, top = 10, index = 0;
	bool json = false, intervals = false;
	const struct hvt_option opts[] = {
	    HVT_OPT_OPERAND(&path, "TRACE", "the trace (default hvmtrace.hvt)"),
	    HVT_OPT_PATH(0, "owners", &owners, "SNAPSHOT",
			 "who owns which page: hvmtrace-guest's output (docs/attribution.md); default: the "
			 "snapshots recorded in the trace"),
	    HVT_OPT_INT(0, "snapshot", &index, 0, HVT_OWN_MAX_OWNERS, "N",
			"which snapshot of SNAPSHOT, from 0 (default 0)"),
	    HVT_OPT_CHOICE(
		0, "by", &by, bys, "process|kind|cgroup",
		"owners: the guest's processes (default), its pages' kinds (anon, cache, slab, …), "
		"or its processes' cgroups"),
	    HVT_OPT_INT(0, "top", &top, 1, 1000000, "N", "the top writers shown (default 10)"),
	    HVT_OPT_FLAG(0, "intervals", &intervals, "each interval's pages by owner too"),
	    HVT_OPT_FLAG(0, "json", &json, "everything, every interval included, as one JSON object"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace attribute",
	    .synopsis = "[--owners SNAPSHOT] [options] [TRACE]",
	    .about =
		"Whose pages the trace's are: written and accessed pages per guest process (or page kind, or "
		"cgroup), per interval and in all, with the top writers, from snapshots of the guest agent "
		"hvmtrace-guest: the trace's own, each interval by the snapshots before and after it, or one "
		"of a file. A page of several processes is counted as shared, a page whose owner changed "
		"between snapshots as changed: never guessed.",
	    .options = opts,
	    .exits = exits,
	    .usage_status = TRACE_USAGE,
	};
	struct owners_timeline tl = {0};
	struct owners_interval v = {0};
	struct attr_ctx x = {0};
	struct hvt_selection sel = {0};
	struct hvt_trace_reader *r = NULL;
	struct source src = {.trace = path};
	uint64_t gfn_first, gfn_end;
	uint32_t *order = NULL;
	size_t nord = 0;
	int status = hvt_opts_parse(&cmd, argc, argv);

	if (status != HVT_OPTS_RUN)
		return status;
	src = (struct source){.trace = path, .file = owners, .index = (size_t)index};
	if (owners &&
	    owners_timeline_load("hvmtrace attribute", owners, (size_t)index, NULL, path, &tl, &src.count))
		return TRACE_USAGE;
	r = trace_input_open("attribute", path);
	if (!r) {
		status = TRACE_USAGE;
		goto out;
	}
	if (!owners && owners_timeline_load("hvmtrace attribute", NULL, 0, r, path, &tl, NULL)) {
		status = TRACE_USAGE;
		goto out;
	}
	if (trace_input_span("attribute", path, r, &sel, &gfn_first, &gfn_end)) {
		status = TRACE_USAGE;
		goto out;
	}
	if (owners_interval_init(&v, &tl, by) || !(order = malloc((v.nrows + 1) * sizeof(*order))) ||
	    alloc_ctx(&x, v.nrows)) {
		fprintf(stderr, "hvmtrace attribute: out of memory\n");
		status = TRACE_OUTPUT_FAILED;
		goto out;
	}
	x.v = &v;
	x.accessed = hvt_trace_meta(r)->mode == HVT_MODE_AD;
	x.keep_rows = json || intervals;
	status = trace_input_walk("attribute", path, r, &sel, gfn_first, gfn_end, true, attribute_one, &x);
	if (status == -ENOMEM) {
		fprintf(stderr, "hvmtrace attribute: out of memory\n");
		status = TRACE_OUTPUT_FAILED;
	}
	if (status != TRACE_OK && status != TRACE_INCOMPLETE)
		goto out;
	for (size_t i = 0; i < v.nrows; i++)
		if (v.rows[i].type == by)
			order[nord++] = (uint32_t)i;
	sort_ctx = &x;
	qsort(order, nord, sizeof(*order), cmp_owner);
	if (json)
		print_json(&x, order, nord, &src);
	else
		print_text(&x, order, nord, (size_t)top, &src, intervals);
out:
	free(order);
	free_ctx(&x);
	owners_interval_free(&v);
	owners_timeline_free(&tl);
	hvt_trace_reader_close(r);
	return status;
}
