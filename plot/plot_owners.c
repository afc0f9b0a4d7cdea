// SPDX-License-Identifier: MIT
/* The owners of a heatmap's written pages, read from `hvmtrace export --by X --jsonl -` (plot_owners.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/json_read.h"
#include "hvmtrace/trace_input.h"
#include "plot.h"
#include "plot_owners.h"

#define MAX_OWNERS (1u << 20)

/* "hvmtrace export TRACE --by X --jsonl - [--owners FILE] [selection]": the argv, strings in buf. */
static void export_argv(const struct plot_args *a, const char *prog, char buf[3][64], const char **argv)
{
	const struct hvt_point *pt[2] = {&a->sel.from, &a->sel.to};
	static const char *const names[2] = {"--from", "--to"};
	int n = 0;

	argv[n++] = prog;
	argv[n++] = "export";
	argv[n++] = a->trace;
	argv[n++] = "--by";
	argv[n++] = a->by;
	argv[n++] = "--jsonl";
	argv[n++] = "-";
	if (a->owners) {
		argv[n++] = "--owners";
		argv[n++] = a->owners;
	}
	for (int k = 0; k < 2; k++) {
		if (pt[k]->kind == HVT_POINT_NONE)
			continue;
		snprintf(buf[k], 64, pt[k]->kind == HVT_POINT_INTERVAL ? "%" PRIu64 : "%" PRIu64 "ns",
			 pt[k]->value);
		argv[n++] = names[k];
		argv[n++] = buf[k];
	}
	if (a->sel.gfns_given) {
		snprintf(buf[2], 64, "0x%" PRIx64 "-0x%" PRIx64, a->sel.gfn_first, a->sel.gfn_last);
		argv[n++] = "--range";
		argv[n++] = buf[2];
	}
	argv[n] = NULL;
}

static uint64_t label_hash(const char *l)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (; *l; l++)
		h = (h ^ (unsigned char)*l) * 0x100000001b3ull;
	return h;
}

/* Grows the label table (and its hash, at most half full) to hold one more owner. */
static int make_room(struct plot_owners *o)
{
	size_t cap = o->cap_owners ? 2 * o->cap_owners : 64;
	char **l;
	uint64_t *p;
	uint32_t *h;

	if (o->nowners < o->cap_owners)
		return 0;
	l = realloc(o->label, cap * sizeof(*l));
	if (!l)
		return -ENOMEM;
	o->label = l;
	p = realloc(o->pages, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	o->pages = p;
	h = malloc(2 * cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	memset(h, 0xff, 2 * cap * sizeof(*h));
	for (uint32_t i = 0; i < o->nowners; i++) {
		size_t k = label_hash(o->label[i]) & (2 * cap - 1);

		while (h[k] != UINT32_MAX)
			k = (k + 1) & (2 * cap - 1);
		h[k] = i;
	}
	free(o->hash);
	o->hash = h;
	o->cap_owners = cap;
	return 0;
}

/* The owner named label: found, or added. */
static int owner_of(struct plot_owners *o, const char *label, uint32_t *id)
{
	size_t k, mask;

	if (o->nowners >= MAX_OWNERS)
		return -E2BIG;
	if (make_room(o))
		return -ENOMEM;
	mask = 2 * o->cap_owners - 1;
	for (k = label_hash(label) & mask; o->hash[k] != UINT32_MAX; k = (k + 1) & mask)
		if (!strcmp(o->label[o->hash[k]], label)) {
			*id = o->hash[k];
			return 0;
		}
	o->label[o->nowners] = strdup(label);
	if (!o->label[o->nowners])
		return -ENOMEM;
	o->pages[o->nowners] = 0;
	o->hash[k] = (uint32_t)o->nowners;
	*id = (uint32_t)o->nowners++;
	return 0;
}

static void *grow(void *v, size_t *cap, size_t n, size_t size)
{
	void *w;

	if (n < *cap)
		return v;
	w = realloc(v, (*cap ? 2 * *cap : 64) * size);
	if (w)
		*cap = *cap ? 2 * *cap : 64;
	return w;
}

/* One line of export's JSON Lines: its seq and its written_owners. */
static int read_line(struct plot_owners *o, const char *text, size_t lineno, struct hvt_err *err)
{
	struct json_object *root = json_tokener_parse(text);
	struct hvt_json_in in, runs, run;
	struct owner_line *l;
	size_t n = 0, k;
	int rc;

	if (!root || !json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		return hvt_err_set(err, -EINVAL, "hvmtrace export's line %zu is not a JSON object", lineno);
	}
	hvt_json_in_init(&in, root, -EINVAL, err, "hvmtrace export's line %zu", lineno);
	l = grow(o->line, &o->cap_lines, o->nlines, sizeof(*o->line));
	if (!l) {
		rc = hvt_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	o->line = l;
	l = &o->line[o->nlines];
	*l = (struct owner_line){.p0 = o->npieces};
	rc = hvt_json_uint(&in, "seq", 0, UINT64_MAX, &l->seq);
	if (rc)
		goto out;
	if (json_object_is_type(json_object_object_get(root, "written_owners"), json_type_null)) {
		o->nlines++; /* no written pages in this interval */
		goto out;
	}
	rc = hvt_json_array(&in, "written_owners", SIZE_MAX, &runs, &n);
	for (k = 0; !rc && k < n; k++) {
		struct owner_piece *p = grow(o->piece, &o->cap_pieces, o->npieces, sizeof(*o->piece));
		const char *label;
		size_t m;

		if (!p) {
			rc = hvt_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		o->piece = p;
		p = &o->piece[o->npieces];
		rc = hvt_json_item_array(&runs, k, 3, &run, &m);
		if (!rc && m != 3)
			rc = hvt_err_set(err, -EINVAL, "%s[%zu] has %zu items, not [first_gfn, count, owner]",
					 runs.where, k, m);
		rc = rc ? rc : hvt_json_item_uint(&run, 0, 0, UINT64_MAX, &p->first);
		rc = rc ? rc : hvt_json_item_uint(&run, 1, 1, UINT64_MAX - p->first, &p->count);
		rc = rc ? rc : hvt_json_item_str(&run, 2, 299, &label);
		rc = rc ? rc : owner_of(o, label, &p->owner);
		if (rc == -ENOMEM || rc == -E2BIG)
			rc = hvt_err_set(err, rc, "%s",
					 rc == -E2BIG ? "more than 2^20 owners" : "out of memory");
		if (!rc) {
			o->pages[p->owner] += p->count;
			o->npieces++;
		}
	}
	if (!rc) {
		l->n = o->npieces - l->p0;
		o->nlines++;
	}
out:
	json_object_put(root);
	return rc;
}

static int by_pages(const void *x, const void *y, void *ctx)
{
	const struct plot_owners *o = ctx;
	uint64_t a = o->pages[*(const uint32_t *)x], b = o->pages[*(const uint32_t *)y];

	return a != b ? (a < b) - (a > b)
		      : (*(const uint32_t *)x > *(const uint32_t *)y) -
			    (*(const uint32_t *)x < *(const uint32_t *)y);
}

static bool is_grey(const char *l)
{
	return !strcmp(l, "(shared)") || !strcmp(l, "(changed owner)") || !strcmp(l, "(no process)") ||
	       !strcmp(l, "(no kind)");
}

/* The top writers (named owners with pages) a hue each, most pages first; every other owner its grey. */
static int assign_slots(struct plot_owners *o, unsigned top, const char *by)
{
	static const char *const extra[OWNER_SLOTS_EXTRA] = {"other owners", "shared", "changed owner", ""};
	uint32_t *order = malloc((o->nowners + 1) * sizeof(*order));
	unsigned hues = 0;

	o->slot = malloc((o->nowners + 1) * sizeof(*o->slot));
	if (!order || !o->slot) {
		free(order);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < o->nowners; i++) {
		order[i] = i;
		o->slot[i] = UINT32_MAX;
	}
	qsort_r(order, o->nowners, sizeof(*order), by_pages, o);
	for (size_t k = 0; k < o->nowners && hues < top; k++)
		if (!is_grey(o->label[order[k]]) && o->pages[order[k]]) {
			o->slot[order[k]] = hues;
			snprintf(o->slot_label[hues], sizeof(o->slot_label[0]), "%s", o->label[order[k]]);
			hues++;
		}
	o->top = hues;
	for (uint32_t i = 0; i < o->nowners; i++) {
		const char *l = o->label[i];

		if (o->slot[i] == UINT32_MAX)
			o->slot[i] = hues + (!strcmp(l, "(shared)")          ? OWNER_SLOT_SHARED
					     : !strcmp(l, "(changed owner)") ? OWNER_SLOT_CHANGED
					     : is_grey(l)                    ? OWNER_SLOT_NONE
									     : OWNER_SLOT_OTHER);
		o->slot_pages[o->slot[i]] += o->pages[i];
	}
	for (unsigned e = 0; e < OWNER_SLOTS_EXTRA; e++)
		snprintf(o->slot_label[hues + e], sizeof(o->slot_label[0]), "%s", extra[e]);
	snprintf(o->slot_label[hues + OWNER_SLOT_NONE], sizeof(o->slot_label[0]), "no %s",
		 strcmp(by, "kind") ? "process" : "kind");
	free(order);
	return 0;
}

int plot_owners_load(struct plot_owners *o, const struct plot_args *a, unsigned top)
{
	char self[PATH_MAX], prog[PATH_MAX + 16], buf[3][64], *text = NULL, *slash;
	const char *argv[20];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t cap = 0, lineno = 0;
	struct hvt_err err = {""};
	int fd[2], status, rc = 0;
	pid_t pid;
	FILE *f;

	memset(o, 0, sizeof(*o));
	if (n < 0) {
		fprintf(stderr, "hvmtrace plot: cannot find where hvmtrace-plot lies: /proc/self/exe: %s\n",
			strerror(errno));
		return TRACE_USAGE;
	}
	self[n] = '\0';
	slash = strrchr(self, '/');
	*slash = '\0';
	snprintf(prog, sizeof(prog), "%s/hvmtrace", self);
	if (access(prog, X_OK)) {
		fprintf(stderr,
			"hvmtrace plot: --color-by owner needs hvmtrace beside hvmtrace-plot: %s: %s\n", prog,
			strerror(errno));
		return TRACE_USAGE;
	}
	export_argv(a, prog, buf, argv);
	if (pipe2(fd, O_CLOEXEC)) {
		fprintf(stderr, "hvmtrace plot: pipe: %s\n", strerror(errno));
		return TRACE_OUTPUT_FAILED;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "hvmtrace plot: fork: %s\n", strerror(errno));
		close(fd[0]);
		close(fd[1]);
		return TRACE_OUTPUT_FAILED;
	}
	if (!pid) {
		dup2(fd[1], STDOUT_FILENO);
		execv(prog, (char *const *)argv);
		fprintf(stderr, "hvmtrace plot: cannot run %s: %s\n", prog, strerror(errno));
		_exit(127);
	}
	close(fd[1]);
	f = fdopen(fd[0], "r");
	if (!f) {
		close(fd[0]);
		rc = -ENOMEM;
		hvt_err_set(&err, rc, "out of memory");
	}
	while (f && getline(&text, &cap, f) > 0)
		if (!rc)
			rc = read_line(o, text, ++lineno, &err);
	free(text);
	if (f)
		fclose(f);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || (WEXITSTATUS(status) && WEXITSTATUS(status) != TRACE_INCOMPLETE)) {
		/* export said why (a trace without snapshots: its sentence), or could not be run */
		if (!WIFEXITED(status) || WEXITSTATUS(status) == 127)
			fprintf(stderr, "hvmtrace plot: %s export did not finish\n", prog);
		plot_owners_fini(o);
		return !WIFEXITED(status) || WEXITSTATUS(status) == 127 ? TRACE_USAGE : WEXITSTATUS(status);
	}
	if (!rc && assign_slots(o, top, a->by))
		rc = hvt_err_set(&err, -ENOMEM, "out of memory");
	if (rc) {
		fprintf(stderr, "hvmtrace plot: %s\n", err.msg);
		plot_owners_fini(o);
		return rc == -ENOMEM ? TRACE_OUTPUT_FAILED : TRACE_USAGE;
	}
	return 0;
}

const struct owner_line *plot_owners_line(struct plot_owners *o, uint64_t seq)
{
	while (o->cursor < o->nlines && o->line[o->cursor].seq < seq)
		o->cursor++;
	return o->cursor < o->nlines && o->line[o->cursor].seq == seq ? &o->line[o->cursor] : NULL;
}

unsigned plot_owners_nslots(const struct plot_owners *o)
{
	return o->top + OWNER_SLOTS_EXTRA;
}

struct rgb plot_owners_colour(const struct plot_owners *o, unsigned slot)
{
	/* hues apart from each other and from the greys; the greys apart from each other */
	static const struct rgb hue[PLOT_OWNERS_TOP_MAX] = {
	    {0.12, 0.47, 0.71}, {0.84, 0.15, 0.16}, {0.17, 0.63, 0.17},
	    {0.58, 0.40, 0.74}, {1.00, 0.50, 0.05}, {0.55, 0.34, 0.29},
	    {0.89, 0.47, 0.76}, {0.74, 0.74, 0.13}, {0.09, 0.75, 0.81},
	};
	static const struct rgb grey[OWNER_SLOTS_EXTRA] = {
	    {0.60, 0.60, 0.60}, /* other owners */
	    {0.40, 0.40, 0.40}, /* shared */
	    {0.15, 0.15, 0.15}, /* changed owner */
	    {0.78, 0.78, 0.78}, /* no process */
	};

	return slot < o->top ? hue[slot] : grey[(slot - o->top) % OWNER_SLOTS_EXTRA];
}

void plot_owners_fini(struct plot_owners *o)
{
	for (size_t i = 0; i < o->nowners; i++)
		free(o->label[i]);
	free(o->label);
	free(o->hash);
	free(o->pages);
	free(o->slot);
	free(o->piece);
	free(o->line);
	memset(o, 0, sizeof(*o));
}
