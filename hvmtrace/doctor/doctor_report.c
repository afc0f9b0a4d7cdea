// SPDX-License-Identifier: MIT
/* The doctor's table of checks, and its two views: text for people, JSON for scripts (docs/doctor.md). */
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "hvmtrace/json_number.h"

#include "doctor/doctor.h"

static const char *const status_names[] = {"yes", "no", "warn", "info", "skip"};
static const char *const group_names[] = {"virtualisation", "memory placement", "counters",
					  "the rest of the chain"};
static const char *const cap_names[] = {"dirty-log", "ad", "bandwidth"};
static const char *const cap_titles[] = {
    "written sets (dirty-log)",
    "accessed and written sets (ad)",
    "per-channel bandwidth of the VM's channels",
};

const char *doc_status_name(enum doc_status s)
{
	return s <= DOC_SKIP ? status_names[s] : "?";
}

const char *doc_group_name(enum doc_group g)
{
	return g < DOC_NGROUPS ? group_names[g] : "?";
}

const char *doc_cap_name(enum doc_cap c)
{
	return c < DOC_NCAPS ? cap_names[c] : "?";
}

struct doc_check *doc_add(struct doc_report *r, enum doc_group g, const char *id, enum doc_status s,
			  const char *fmt, ...)
{
	static struct doc_check scratch;
	struct doc_check *c = &scratch;
	va_list ap;

	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 32;
		struct doc_check *n = realloc(r->c, cap * sizeof(*n));

		if (n) {
			r->c = n;
			r->cap = cap;
		}
	}
	if (r->n < r->cap)
		c = &r->c[r->n++];
	else
		r->oom = true;
	memset(c, 0, sizeof(*c));
	c->group = g;
	c->status = s;
	snprintf(c->id, sizeof(c->id), "%s", id);
	va_start(ap, fmt);
	vsnprintf(c->what, sizeof(c->what), fmt, ap);
	va_end(ap);
	return c;
}

void doc_evidence(struct doc_check *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->evidence, sizeof(c->evidence), fmt, ap);
	va_end(ap);
}

void doc_fix(struct doc_check *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->fix, sizeof(c->fix), fmt, ap);
	va_end(ap);
}

const struct doc_check *doc_find(const struct doc_report *r, const char *id)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->c[i].id, id))
			return &r->c[i];
	return NULL;
}

void doc_report_free(struct doc_report *r)
{
	free(r->c);
	r->c = NULL;
	r->n = r->cap = 0;
}

void doc_print_text(const struct doc_report *r, unsigned needed, FILE *f)
{
	static const char *const marks[] = {"ok  ", "NO  ", "warn", "    ", "skip"};

	for (int g = 0; g < DOC_NGROUPS; g++) {
		fprintf(f, "%s%s\n", g ? "\n" : "", doc_group_name((enum doc_group)g));
		for (size_t i = 0; i < r->n; i++) {
			const struct doc_check *c = &r->c[i];

			if (c->group != (enum doc_group)g)
				continue;
			fprintf(f, "  %s %s\n", marks[c->status], c->what);
			if (c->evidence[0])
				fprintf(f, "         evidence: %s\n", c->evidence);
			if (c->fix[0])
				fprintf(f, "         fix: %s\n", c->fix);
		}
	}
	if (r->oom)
		fprintf(f, "\n(out of memory: some checks are missing from this report)\n");
	fprintf(f, "\nOn this host you can trace:\n");
	for (int k = 0; k < DOC_NCAPS; k++)
		fprintf(f, "  %-44s %s%s, because %s%s\n", cap_titles[k], r->v.yes[k] ? "yes" : "no",
			needed & (1u << k) ? "" : " (not asked for)", r->v.because[k],
			k + 1 < DOC_NCAPS ? "" : "");
	fprintf(f, "(%.1f s)\n", r->seconds);
}

static void add_str(json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(v));
}

static json_object *check_json(const struct doc_check *c)
{
	json_object *o = json_object_new_object();

	add_str(o, "group", doc_group_name(c->group));
	add_str(o, "id", c->id);
	add_str(o, "status", doc_status_name(c->status));
	add_str(o, "what", c->what);
	add_str(o, "evidence", c->evidence);
	add_str(o, "fix", c->fix);
	if (c->fig.set) {
		json_object_object_add(o, "moved_bytes", json_object_new_uint64(c->fig.moved));
		json_object_object_add(o, "counted_bytes", json_object_new_uint64(c->fig.counted));
		json_object_object_add(o, "ratio", hvt_json_new_double(c->fig.ratio));
		json_object *band = json_object_new_array();
		json_object_array_add(band, hvt_json_new_double(c->fig.lo));
		json_object_array_add(band, hvt_json_new_double(c->fig.hi));
		json_object_object_add(o, "band", band);
	}
	return o;
}

int doc_print_json(const struct doc_report *r, unsigned needed, int exit_status, FILE *f)
{
	json_object *o = json_object_new_object(), *checks = json_object_new_array(),
		    *verdict = json_object_new_object(), *host = json_object_new_object();
	struct utsname u;
	int rc = 0;

	add_str(o, "schema", "hvmtrace-doctor");
	json_object_object_add(o, "version", json_object_new_int(1));
	if (!uname(&u)) {
		add_str(host, "hostname", u.nodename);
		add_str(host, "kernel", u.release);
	}
	json_object_object_add(o, "host", host);
	for (size_t i = 0; i < r->n; i++)
		json_object_array_add(checks, check_json(&r->c[i]));
	json_object_object_add(o, "checks", checks);
	for (int k = 0; k < DOC_NCAPS; k++) {
		json_object *v = json_object_new_object();

		json_object_object_add(v, "available", json_object_new_boolean(r->v.yes[k]));
		json_object_object_add(v, "asked", json_object_new_boolean(!!(needed & (1u << k))));
		add_str(v, "because", r->v.because[k]);
		json_object_object_add(verdict, doc_cap_name((enum doc_cap)k), v);
	}
	json_object_object_add(o, "verdict", verdict);
	json_object_object_add(o, "complete", json_object_new_boolean(!r->oom));
	json_object_object_add(o, "exit", json_object_new_int(exit_status));
	json_object_object_add(o, "seconds", hvt_json_new_double(r->seconds));
	if (fprintf(f, "%s\n",
		    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
							  JSON_C_TO_STRING_NOSLASHESCAPE)) < 0 ||
	    fflush(f))
		rc = -EIO;
	json_object_put(o);
	return rc;
}
