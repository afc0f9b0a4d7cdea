// SPDX-License-Identifier: MIT
/* report --by (report_owners.h): one walk over the selection's runs, each interval's pieces by owner, then
 * the pages of each class by the owners the whole selection's snapshots agree on. */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "attribute/owners_interval.h"
#include "report.h"
#include "report_owners.h"
#include "hvmtrace/util.h"

struct cell {
	uint32_t slot;
	uint64_t n[2]; /* [enum hvt_set_kind] */
};

struct report_owners {
	struct owners_timeline tl;
	struct owners_interval v;
	size_t file_count;
	size_t nslots;
	uint64_t (*total)[2];
	uint64_t *intervals_written;
	uint64_t (*classes)[HVT_CLASS_COUNT];
	uint64_t *iv_first, *iv_n; /* each interval's cells */
	struct cell *cells;
	size_t ncells, cells_cap;
	uint32_t *order; /* rows of the type by, top writers first */
	size_t nord;
	/* the walk */
	uint64_t (*cur)[2];
	uint32_t *touched;
	size_t ntouched;
	uint64_t k;
	int kind;
	const struct owners_map *map;
	size_t cursor;
	bool oom;
};

static size_t slot_of(const struct report_owners *x, uint32_t owner)
{
	return owners_slot_of(x->v.nrows, owner);
}

static void piece(void *ctx, uint64_t first, uint64_t count, uint32_t owner)
{
	struct report_owners *x = ctx;
	size_t s = slot_of(x, owner);

	(void)first;
	if (!x->cur[s][0] && !x->cur[s][1])
		x->touched[x->ntouched++] = (uint32_t)s;
	x->cur[s][x->kind] += count;
}

/* The counts of interval x->k as its cells, added to the totals. */
static void flush(struct report_owners *x)
{
	x->iv_first[x->k] = x->ncells;
	for (size_t i = 0; i < x->ntouched; i++) {
		uint32_t s = x->touched[i];

		x->total[s][0] += x->cur[s][0];
		x->total[s][1] += x->cur[s][1];
		x->intervals_written[s] += x->cur[s][0] > 0;
		if (!x->oom &&
		    hvt_array_room((void **)&x->cells, &x->cells_cap, x->ncells, sizeof(*x->cells)))
			x->oom = true;
		if (!x->oom)
			x->cells[x->ncells++] = (struct cell){s, {x->cur[s][0], x->cur[s][1]}};
		x->cur[s][0] = x->cur[s][1] = 0;
	}
	x->iv_n[x->k] = x->ncells - x->iv_first[x->k];
	x->ntouched = 0;
}

static int each_run(void *ctx, uint64_t k, enum hvt_set_kind kind, uint64_t first_gfn, uint64_t count)
{
	struct report *rp = ctx;
	struct report_owners *x = rp->owners;

	if (!x->map || k != x->k) {
		const struct hvt_iv_info *iv = &rp->a.iv[k];

		if (x->map)
			flush(x);
		x->k = k;
		x->map = owners_interval_map(&x->v, iv->t_start_ns + rp->a.t0_ns, iv->t_end_ns + rp->a.t0_ns);
		if (!x->map)
			return -ENOMEM;
		x->kind = -1;
	}
	if ((int)kind != x->kind)
		x->kind = (int)kind, x->cursor = 0;
	owners_map_pieces(x->map, &x->cursor, first_gfn, count, piece, x);
	return x->oom ? -ENOMEM : 0;
}

struct class_walk {
	struct report_owners *x;
	const struct owners_map *map;
	uint64_t gfn_first;
	size_t cursor;
	enum hvt_page_class cls;
};

static void class_piece(void *ctx, uint64_t first, uint64_t count, uint32_t owner)
{
	struct class_walk *c = ctx;

	(void)first;
	c->x->classes[slot_of(c->x, owner)][c->cls] += count;
}

static int class_run(void *ctx, uint64_t first, uint64_t count, enum hvt_page_class cls)
{
	struct class_walk *c = ctx;

	c->cls = cls;
	owners_map_pieces(c->map, &c->cursor, c->gfn_first + first, count, class_piece, c);
	return 0;
}

static int alloc(struct report_owners *x, uint64_t n)
{
	size_t s = x->nslots = x->v.nrows + OWNERS_SLOTS_SPECIAL;

	x->total = calloc(s, sizeof(*x->total));
	x->cur = calloc(s, sizeof(*x->cur));
	x->classes = calloc(s, sizeof(*x->classes));
	x->intervals_written = calloc(s, sizeof(*x->intervals_written));
	x->touched = calloc(s, sizeof(*x->touched));
	x->order = calloc(s, sizeof(*x->order));
	x->iv_first = calloc(n, sizeof(*x->iv_first));
	x->iv_n = calloc(n, sizeof(*x->iv_n));
	return x->total && x->cur && x->classes && x->intervals_written && x->touched && x->order &&
		       x->iv_first && x->iv_n
		   ? 0
		   : -ENOMEM;
}

int report_owners_compute(struct report *rp)
{
	struct report_owners *x = calloc(1, sizeof(*x));
	const struct hvt_analysis *a = &rp->a;
	struct hvt_err err = {{0}};
	struct class_walk cw = {.x = x, .gfn_first = a->gfn_first};
	unsigned kinds =
	    (a->n_written ? 1u << HVT_SET_WRITTEN : 0) | (a->n_accessed ? 1u << HVT_SET_ACCESSED : 0);

	rp->owners = x;
	if (!x)
		goto oom;
	if (owners_timeline_load("hvmtrace report", rp->o.owners_file, (size_t)rp->o.snapshot, rp->r,
				 rp->path, &x->tl, &x->file_count))
		return -1;
	for (size_t s = 0; s < x->tl.n; s++)
		if (x->tl.snap[s].page_size != a->page_size) {
			fprintf(stderr,
				"hvmtrace report: %s has pages of %" PRIu32
				" bytes, owners snapshot %zu's are %" PRIu32 " bytes\n",
				rp->path, a->page_size, s, x->tl.snap[s].page_size);
			return -1;
		}
	if (owners_interval_init(&x->v, &x->tl, rp->o.by) || alloc(x, a->n))
		goto oom;
	if (hvt_analysis_walk(a, rp->r, kinds, each_run, rp, &err)) {
		if (x->oom)
			goto oom;
		fprintf(stderr, "hvmtrace report: %s: %s\n", rp->path, err.msg);
		return -1;
	}
	if (x->map)
		flush(x);
	if (x->oom)
		goto oom;
	/* classes are of the whole selection: by the owners every snapshot around it agrees on */
	cw.map =
	    owners_interval_map(&x->v, a->iv[0].t_start_ns + a->t0_ns, a->iv[a->n - 1].t_end_ns + a->t0_ns);
	if (!cw.map || hvt_class_runs(a, &rp->o.th, class_run, &cw))
		goto oom;
	for (size_t i = 0; i < x->v.nrows; i++)
		if (x->v.rows[i].type == rp->o.by)
			x->order[x->nord++] = (uint32_t)i;
	owners_rank_writers(x->order, x->nord, x->total);
	return 0;
oom:
	fprintf(stderr, "hvmtrace report: out of memory counting pages by owner\n");
	return -1;
}

void report_owners_free(struct report *rp)
{
	struct report_owners *x = rp->owners;

	if (!x)
		return;
	owners_interval_free(&x->v);
	owners_timeline_free(&x->tl);
	free(x->total);
	free(x->cur);
	free(x->classes);
	free(x->intervals_written);
	free(x->touched);
	free(x->order);
	free(x->iv_first);
	free(x->iv_n);
	free(x->cells);
	free(x);
	rp->owners = NULL;
}

/* ---- output ---- */

static const char *by_name(int by)
{
	return by == HVT_OWN_PROCESS ? "process" : by == HVT_OWN_KIND ? "kind" : "cgroup";
}

static void slot_label(const struct report_owners *x, size_t s, char *buf, size_t len)
{
	size_t rows = x->v.nrows;

	owners_row_label(&x->v,
			 s < rows                          ? (uint32_t)s
			 : s == rows + OWNERS_SLOT_SHARED  ? OWNERS_SHARED
			 : s == rows + OWNERS_SLOT_CHANGED ? OWNERS_CHANGED
							   : OWNERS_NONE,
			 buf, len);
}

static void put_count(FILE *f, uint64_t v, bool known, int width)
{
	if (known)
		fprintf(f, " %*" PRIu64, width, v);
	else
		fprintf(f, " %*s", width, "n/a");
}

static const enum hvt_page_class shown_classes[] = {HVT_CLASS_WRITE_HEAVY, HVT_CLASS_READ_MOSTLY,
						    HVT_CLASS_MIXED, HVT_CLASS_COLD};

static void owner_line(FILE *f, const struct report *rp, size_t s, const char *rank)
{
	const struct report_owners *x = rp->owners;
	const struct owner_row *r = s < x->v.nrows ? &x->v.rows[s] : NULL;
	char label[300];

	slot_label(x, s, label, sizeof(label));
	fprintf(f, "%4s %-30.30s %-20.20s", rank, label,
		r && r->type == HVT_OWN_PROCESS && r->cgroup[0] ? r->cgroup : "");
	put_count(f, x->total[s][0], rp->a.n_written, 10);
	put_count(f, x->total[s][1], rp->a.n_accessed, 10);
	fprintf(f, " %9" PRIu64, x->intervals_written[s]);
	for (size_t c = 0; c < sizeof(shown_classes) / sizeof(*shown_classes); c++)
		put_count(f, x->classes[s][shown_classes[c]],
			  shown_classes[c] != HVT_CLASS_READ_MOSTLY || rp->a.n_accessed, 11);
	fputc('\n', f);
}

/* Each interval's written pages of the first few top writers, the others, shared, changed and none. */
static void interval_table(FILE *f, const struct report *rp, size_t cols)
{
	const struct report_owners *x = rp->owners;
	size_t rows = x->v.nrows;
	char label[300];

	fprintf(f, "\nwritten pages per interval by %s (the top %zu writers):\n%8s", by_name(rp->o.by), cols,
		"seq");
	for (size_t c = 0; c < cols; c++) {
		slot_label(x, x->order[c], label, sizeof(label));
		fprintf(f, " %14.14s", label);
	}
	fprintf(f, " %10s %10s %10s %10s\n", "others", "shared", "changed", "none");
	for (uint64_t k = 0; k < rp->a.n; k++) {
		uint64_t top[64] = {0}, other = 0, special[OWNERS_SLOTS_SPECIAL] = {0};

		for (uint64_t i = 0; i < x->iv_n[k]; i++) {
			const struct cell *cl = &x->cells[x->iv_first[k] + i];
			size_t c = 0;

			if (cl->slot >= rows) {
				special[cl->slot - rows] += cl->n[0];
				continue;
			}
			while (c < cols && x->order[c] != cl->slot)
				c++;
			if (c < cols)
				top[c] += cl->n[0];
			else
				other += cl->n[0];
		}
		fprintf(f, "%8" PRIu64, rp->a.iv[k].seq);
		for (size_t c = 0; c < cols; c++)
			fprintf(f, " %14" PRIu64, top[c]);
		fprintf(f, " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n", other,
			special[OWNERS_SLOT_SHARED], special[OWNERS_SLOT_CHANGED], special[OWNERS_SLOT_NONE]);
	}
}

void report_owners_text(FILE *f, const struct report *rp)
{
	const struct report_owners *x = rp->owners;
	size_t rows = x->v.nrows, shown = 0, cols = 0;
	char rank[24];

	fprintf(f, "\nPages by %s, owners from ", by_name(rp->o.by));
	if (rp->o.owners_file)
		fprintf(f, "%s (snapshot %d of %zu; every interval by it)\n", rp->o.owners_file,
			rp->o.snapshot, x->file_count);
	else
		fprintf(f, "the trace's %zu snapshots (each interval by those before and after it)\n",
			x->tl.n);
	for (size_t i = 0; i < x->nord && cols < 6 && cols < (size_t)rp->o.top; i++)
		if (x->total[x->order[i]][0])
			cols++;
	if (rp->o.table && cols)
		interval_table(f, rp, cols);
	fprintf(f, "\ntop writers (pages summed over intervals; classes: pages of the selection):\n");
	fprintf(f, "%4s %-30s %-20s %10s %10s %9s %11s %11s %11s %11s\n", "rank", "owner", "cgroup",
		"written", "accessed", "intervals", "write-heavy", "read-mostly", "mixed", "cold");
	for (size_t i = 0; i < x->nord && shown < (size_t)rp->o.top; i++) {
		if (!x->total[x->order[i]][0] && !x->total[x->order[i]][1])
			break;
		snprintf(rank, sizeof(rank), "%zu", ++shown);
		owner_line(f, rp, x->order[i], rank);
	}
	if (rp->o.by != HVT_OWN_KIND)
		owner_line(f, rp, rows + OWNERS_SLOT_SHARED, "");
	owner_line(f, rp, rows + OWNERS_SLOT_CHANGED, "");
	owner_line(f, rp, rows + OWNERS_SLOT_NONE, "");
	fprintf(f,
		"(shared: owned by several %s; changed owner: the snapshots around an interval disagree;\n"
		" %s: %s)\n",
		rp->o.by == HVT_OWN_KIND      ? "kinds"
		: rp->o.by == HVT_OWN_PROCESS ? "processes"
					      : "cgroups",
		rp->o.by == HVT_OWN_KIND ? "no kind" : "no process",
		rp->o.by == HVT_OWN_KIND
		    ? "not memory the guest's kernel knows"
		    : "the kernel, page cache, free pages, processes exited or not scanned");
}

static struct json_object *slot_json(const struct report *rp, size_t s, bool with_classes)
{
	const struct report_owners *x = rp->owners;
	struct json_object *o = json_object_new_object(), *cls;

	json_object_object_add(o, "written", rp->a.n_written ? json_object_new_uint64(x->total[s][0]) : NULL);
	json_object_object_add(o, "accessed",
			       rp->a.n_accessed ? json_object_new_uint64(x->total[s][1]) : NULL);
	json_object_object_add(o, "intervals_written", json_object_new_uint64(x->intervals_written[s]));
	if (!with_classes)
		return o;
	cls = json_object_new_object();
	for (int c = 0; c < HVT_CLASS_COUNT; c++)
		json_object_object_add(cls, hvt_class_name((enum hvt_page_class)c),
				       json_object_new_uint64(x->classes[s][c]));
	json_object_object_add(o, "classes", cls);
	return o;
}

static struct json_object *row_json(const struct report *rp, uint32_t id)
{
	const struct owner_row *r = &rp->owners->v.rows[id];
	struct json_object *o = slot_json(rp, id, true);

	json_object_object_add(o, "id", json_object_new_uint64(id));
	if (r->type == HVT_OWN_KIND) {
		json_object_object_add(o, "kind", json_object_new_string(owners_kind_name(r->kind)));
	} else if (r->type == HVT_OWN_PROCESS) {
		json_object_object_add(o, "pid", json_object_new_uint64(r->pid));
		json_object_object_add(o, "name", json_object_new_string(r->name));
		json_object_object_add(o, "cgroup", json_object_new_string(r->cgroup));
		json_object_object_add(o, "partial", json_object_new_boolean(r->flags & HVT_OWN_PARTIAL));
	} else {
		json_object_object_add(o, "cgroup", json_object_new_string(r->name));
	}
	json_object_object_add(o, "pages", json_object_new_uint64(r->pages));
	json_object_object_add(o, "snapshots", json_object_new_uint64(r->snapshots));
	return o;
}

static struct json_object *cell_pair(const struct report *rp, uint64_t w, uint64_t acc)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "written", rp->a.n_written ? json_object_new_uint64(w) : NULL);
	json_object_object_add(o, "accessed", rp->a.n_accessed ? json_object_new_uint64(acc) : NULL);
	return o;
}

static struct json_object *intervals_json(const struct report *rp)
{
	const struct report_owners *x = rp->owners;
	static const char *const special[OWNERS_SLOTS_SPECIAL] = {"shared", "changed", "none"};
	struct json_object *list = json_object_new_array();
	size_t rows = x->v.nrows;

	for (uint64_t k = 0; k < rp->a.n; k++) {
		struct json_object *e = json_object_new_object(), *cells = json_object_new_array();
		uint64_t sp[OWNERS_SLOTS_SPECIAL][2] = {{0}};

		json_object_object_add(e, "seq", json_object_new_uint64(rp->a.iv[k].seq));
		for (uint64_t i = 0; i < x->iv_n[k]; i++) {
			const struct cell *cl = &x->cells[x->iv_first[k] + i];
			struct json_object *c;

			if (cl->slot >= rows) {
				sp[cl->slot - rows][0] = cl->n[0], sp[cl->slot - rows][1] = cl->n[1];
				continue;
			}
			c = cell_pair(rp, cl->n[0], cl->n[1]);
			json_object_object_add(c, "id", json_object_new_uint64(cl->slot));
			json_object_array_add(cells, c);
		}
		json_object_object_add(e, "owners", cells);
		for (int s = 0; s < OWNERS_SLOTS_SPECIAL; s++)
			json_object_object_add(e, special[s], cell_pair(rp, sp[s][0], sp[s][1]));
		json_object_array_add(list, e);
	}
	return list;
}

struct json_object *report_owners_json(const struct report *rp)
{
	const struct report_owners *x = rp->owners;
	struct json_object *o = json_object_new_object(), *list = json_object_new_array(), *snaps;
	size_t rows = x->v.nrows;

	json_object_object_add(o, "by", json_object_new_string(by_name(rp->o.by)));
	json_object_object_add(o, "owners_file",
			       rp->o.owners_file ? json_object_new_string(rp->o.owners_file) : NULL);
	snaps = json_object_new_array();
	for (size_t s = 0; s < x->tl.n; s++) {
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "at_ns",
				       x->tl.timed ? json_object_new_uint64(x->tl.at_ns[s]) : NULL);
		json_object_object_add(e, "time_ns", json_object_new_uint64(x->tl.snap[s].time_ns));
		json_object_object_add(e, "processes", json_object_new_uint64(x->tl.snap[s].nprocesses));
		json_object_array_add(snaps, e);
	}
	json_object_object_add(o, "snapshots", snaps);
	for (size_t i = 0; i < x->nord; i++)
		json_object_array_add(list, row_json(rp, x->order[i]));
	json_object_object_add(o, "owners", list);
	json_object_object_add(o, "shared", slot_json(rp, rows + OWNERS_SLOT_SHARED, true));
	json_object_object_add(o, "changed", slot_json(rp, rows + OWNERS_SLOT_CHANGED, true));
	json_object_object_add(o, "none", slot_json(rp, rows + OWNERS_SLOT_NONE, true));
	json_object_object_add(o, "intervals", intervals_json(rp));
	return o;
}
