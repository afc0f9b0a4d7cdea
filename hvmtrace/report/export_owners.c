// SPDX-License-Identifier: MIT
/* export's owner column (export_owners.h): each run cut into the pieces of one owner. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "report/export_owners.h"

int export_owners_open(struct export_owners *x, const char *file, int snapshot, struct hvt_trace_reader *r,
		       const char *trace, int by)
{
	memset(x, 0, sizeof(*x));
	if (owners_timeline_load("hvmtrace export", file, (size_t)snapshot, r, trace, &x->tl, NULL))
		return -1;
	if (owners_interval_init(&x->v, &x->tl, by)) {
		fprintf(stderr, "hvmtrace export: out of memory reading the owners\n");
		owners_timeline_free(&x->tl);
		return -1;
	}
	return 0;
}

int export_owners_interval(struct export_owners *x, const struct hvt_iv_runs *ir, uint32_t page_size)
{
	for (size_t s = 0; s < x->tl.n; s++)
		if (x->tl.snap[s].page_size != page_size) {
			fprintf(stderr,
				"hvmtrace export: interval %" PRIu64 " has pages of %" PRIu32
				" bytes, owners snapshot %zu's are %" PRIu32 " bytes\n",
				ir->hdr.seq, page_size, s, x->tl.snap[s].page_size);
			return -EINVAL;
		}
	x->ir = ir;
	x->map = owners_interval_map(&x->v, ir->hdr.t_start_ns, ir->hdr.t_end_ns);
	if (!x->map) {
		fprintf(stderr, "hvmtrace export: out of memory attributing interval %" PRIu64 "\n",
			ir->hdr.seq);
		return -ENOMEM;
	}
	return 0;
}

/* A label as one CSV field: quoted, quotes doubled, when it holds a comma or a quote. */
static void csv_field(FILE *f, const char *t)
{
	if (!strpbrk(t, ",\"")) {
		fputs(t, f);
		return;
	}
	fputc('"', f);
	for (; *t; t++) {
		if (*t == '"')
			fputc('"', f);
		fputc(*t, f);
	}
	fputc('"', f);
}

static void json_string(FILE *f, const char *t)
{
	fputc('"', f);
	for (; *t; t++) {
		if (*t == '"' || *t == '\\')
			fputc('\\', f);
		fputc(*t, f);
	}
	fputc('"', f);
}

static void csv_piece(void *ctx, uint64_t first, uint64_t count, uint32_t owner)
{
	struct export_owners *x = ctx;
	char label[300];

	owners_row_label(&x->v, owner, label, sizeof(label));
	fprintf(x->csv, "%" PRIu64 ",%s,%" PRIu64 ",%" PRIu64 ",", x->seq, x->kind, first, count);
	csv_field(x->csv, label);
	fputc('\n', x->csv);
}

void export_owners_csv(struct export_owners *x, FILE *f, uint64_t seq, const char *kind,
		       const struct hvt_runs *runs, size_t k, size_t end)
{
	size_t cursor = 0;

	x->csv = f, x->seq = seq, x->kind = kind;
	for (; k < end; k++)
		owners_map_pieces(x->map, &cursor, runs->v[k].first, runs->v[k].count, csv_piece, x);
}

struct json_pieces {
	struct export_owners *x;
	FILE *f;
	bool first;
};

static void json_piece(void *ctx, uint64_t first, uint64_t count, uint32_t owner)
{
	struct json_pieces *j = ctx;
	char label[300];

	owners_row_label(&j->x->v, owner, label, sizeof(label));
	fprintf(j->f, "%s[%" PRIu64 ",%" PRIu64 ",", j->first ? "" : ",", first, count);
	json_string(j->f, label);
	fputc(']', j->f);
	j->first = false;
}

int export_owners_jsonl(FILE *f, void *ctx)
{
	struct export_owners *x = ctx;
	static const char *const names[2] = {"written_owners", "accessed_owners"};

	for (int s = 0; s < 2; s++) {
		struct json_pieces j = {x, f, true};
		size_t cursor = 0;

		fprintf(f, ",\"%s\":", names[s]);
		if (!(x->ir->hdr.flags & (s ? HVT_IV_ACCESSED : HVT_IV_WRITTEN))) {
			fputs("null", f);
			continue;
		}
		fputc('[', f);
		for (size_t k = 0; k < x->ir->set[s].n; k++)
			owners_map_pieces(x->map, &cursor, x->ir->set[s].v[k].first, x->ir->set[s].v[k].count,
					  json_piece, &j);
		fputc(']', f);
	}
	return ferror(f) ? -EIO : 0;
}

void export_owners_close(struct export_owners *x)
{
	owners_interval_free(&x->v);
	owners_timeline_free(&x->tl);
}
