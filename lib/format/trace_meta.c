// SPDX-License-Identifier: MIT
/*
 * The trace metadata (trace_meta.h): one table row per item, and the code that reads and writes any row.
 * Nothing here knows an item by name except its row.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "hvmtrace/error.h"
#include "hvmtrace/json_read.h"
#include "hvmtrace/trace_meta.h"

#define STR_MAX  4096 /* bytes in a string item */
#define LIST_MAX 4096 /* entries in an array item */

static const char *const bw_source_names[] = {
    [HVT_BW_SOURCE_PMU] = "pmu",
    [HVT_BW_SOURCE_PMU_STAND_IN] = "pmu-stand-in",
    [HVT_BW_SOURCE_RESCTRL_TOTAL] = "resctrl-total",
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const char *hvt_bw_source_name(enum hvt_bw_source s)
{
	return (unsigned)s < NELEM(bw_source_names) ? bw_source_names[s] : NULL;
}

enum hvt_bw_source hvt_bw_source_from_name(const char *name)
{
	for (unsigned i = 1; name && i < NELEM(bw_source_names); i++)
		if (!strcmp(name, bw_source_names[i]))
			return (enum hvt_bw_source)i;
	return HVT_BW_SOURCE_NONE;
}

/* ---- the rows ---- */

enum field_type {
	FT_STR,       /* char *, at most max bytes */
	FT_I32,       /* int32_t in [min, max] */
	FT_U32,       /* uint32_t in [min, max] */
	FT_U64,       /* uint64_t in [min, max] */
	FT_BOOL,      /* bool */
	FT_MODE,      /* enum hvt_mode, by name */
	FT_BW_SOURCE, /* enum hvt_bw_source, by name */
	FT_STRV,      /* struct hvt_meta_strv: an array of strings */
	FT_CHANNELS,  /* struct hvt_meta_channels: an array of channel objects (channel_rows) */
};

struct row {
	const char *group; /* NULL: a member of the record's object; else of its member object `group` */
	const char *key;
	enum field_type type;
	size_t offset;     /* of the field in the struct */
	int64_t min;       /* integers: smallest value */
	uint64_t max;      /* integers: largest value; strings: longest, in bytes; arrays: most entries */
	bool required;     /* false: optional, in the struct's present bits when given */
	const char *since; /* the first hvmtrace whose writer wrote it */
	const char *(*check)(const void *field); /* a further check: why the value is wrong, or NULL */
};

static const char *ad_walk_name(const void *field)
{
	const char *w = *(char *const *)field;

	return !strcmp(w, "pruned") || !strcmp(w, "full") ? NULL : "neither \"pruned\" nor \"full\"";
}

static const char *power_of_two_page(const void *field)
{
	uint32_t ps = *(const uint32_t *)field;

	return ps >= 4096 && !(ps & (ps - 1)) ? NULL : "not a power of two of at least 4096";
}

/* The present bits are a uint64_t. */
_Static_assert(HVT_META_NITEMS <= 64 && HVT_MCH_NITEMS <= 64, "too many items for the present bits");

/* Each row: {group, key, type, offset, min, max, required, since, check}. */
#define M(f) offsetof(struct hvt_trace_meta, f)
static const struct row meta_rows[HVT_META_NITEMS] = {
    [HVT_META_TOOL] = {NULL, "tool", FT_STR, M(tool), 0, STR_MAX, true, "0.1.0", NULL},
    [HVT_META_CREATED] = {NULL, "created", FT_STR, M(created), 0, STR_MAX, true, "0.1.0", NULL},
    [HVT_META_HOST_NAME] = {"host", "hostname", FT_STR, M(host_name), 0, STR_MAX, true, "0.1.0", NULL},
    /* absent if uname failed */
    [HVT_META_HOST_KERNEL] = {"host", "kernel", FT_STR, M(host_kernel), 0, STR_MAX, false, "0.1.0", NULL},
    [HVT_META_HOST_MACHINE] = {"host", "machine", FT_STR, M(host_machine), 0, STR_MAX, false, "0.1.0", NULL},
    [HVT_META_VM_NAME] = {"vm", "name", FT_STR, M(vm_name), 0, STR_MAX, true, "0.1.0", NULL},
    [HVT_META_VM_UUID] = {"vm", "uuid", FT_STR, M(vm_uuid), 0, STR_MAX, true, "0.1.0", NULL},
    [HVT_META_VM_PID] = {"vm", "pid", FT_I32, M(vm_pid), 1, INT32_MAX, true, "0.1.0", NULL},
    [HVT_META_VM_VMM] = {"vm", "vmm", FT_STR, M(vm_vmm), 0, STR_MAX, true, "0.1.0", NULL},
    [HVT_META_VM_ACCEL] = {"vm", "accel", FT_STR, M(vm_accel), 0, STR_MAX, true, "0.1.0", NULL},
    [HVT_META_TRACER_VERSION] = {"tracer", "version", FT_STR, M(tracer_version), 0, STR_MAX, true, "0.1.0",
				 NULL},
    [HVT_META_TRACER_CPU] = {"tracer", "cpu", FT_I32, M(tracer_cpu), 0, INT32_MAX, true, "0.1.0", NULL},
    [HVT_META_TRACER_HARVEST_CPU] = {"tracer", "harvest_cpu", FT_I32, M(harvest_cpu), -1, INT32_MAX, true,
				     "0.1.0", NULL},
    [HVT_META_TRACER_COMMAND] = {"tracer", "command", FT_STRV, M(command), 0, LIST_MAX, true, "0.1.0", NULL},
    [HVT_META_MODE] = {NULL, "mode", FT_MODE, M(mode), 0, 0, true, "0.1.0", NULL},
    [HVT_META_INTERVAL_NS] = {NULL, "interval_ns", FT_U64, M(interval_ns), 1, UINT64_MAX, true, "0.1.0",
			      NULL},
    [HVT_META_PAGE_SIZE] = {NULL, "page_size", FT_U32, M(page_size), 0, UINT32_MAX, true, "0.1.0",
			    power_of_two_page},
    [HVT_META_WRITTEN_AVAILABLE] = {NULL, "written_available", FT_BOOL, M(written_available), 0, 0, true,
				    "0.1.0", NULL},
    [HVT_META_ACCESSED_AVAILABLE] = {NULL, "accessed_available", FT_BOOL, M(accessed_available), 0, 0, true,
				     "0.1.0", NULL},
    [HVT_META_BANDWIDTH_AVAILABLE] = {NULL, "bandwidth_available", FT_BOOL, M(bandwidth_available), 0, 0,
				      true, "0.1.0", NULL},
    /* given exactly when bandwidth_available (checked after the rows) */
    [HVT_META_BANDWIDTH_SOURCE] = {NULL, "bandwidth_source", FT_BW_SOURCE, M(bandwidth_source), 0, 0, false,
				   "0.1.0", NULL},
    [HVT_META_CHANNELS] = {NULL, "channels", FT_CHANNELS, M(channels), 0, LIST_MAX, true, "0.1.0", NULL},
    [HVT_META_T_ARMED_NS] = {NULL, "t_armed_ns", FT_U64, M(t_armed_ns), 0, UINT64_MAX, true, "0.1.0", NULL},
    /* mode ad only; absent in traces of other modes and of earlier tracers */
    [HVT_META_AD_WALK] = {NULL, "ad_walk", FT_STR, M(ad_walk), 0, STR_MAX, false, "0.1.0", ad_walk_name},
};
#undef M

#define C(f) offsetof(struct hvt_meta_channel, f)
/* PMU channels carry socket … inferred, resctrl domains group and note. */
static const struct row channel_rows[HVT_MCH_NITEMS] = {
    [HVT_MCH_ID] = {NULL, "id", FT_STR, C(id), 0, STR_MAX, true, "0.1.0", NULL},
    [HVT_MCH_SOURCE] = {NULL, "source", FT_STR, C(source), 0, STR_MAX, true, "0.1.0", NULL},
    [HVT_MCH_SOCKET] = {NULL, "socket", FT_I32, C(socket), 0, INT32_MAX, false, "0.1.0", NULL},
    [HVT_MCH_CONTROLLER] = {NULL, "controller", FT_I32, C(controller), 0, INT32_MAX, false, "0.1.0", NULL},
    [HVT_MCH_CHANNEL] = {NULL, "channel", FT_I32, C(channel), 0, INT32_MAX, false, "0.1.0", NULL},
    [HVT_MCH_PMU] = {NULL, "pmu", FT_STR, C(pmu), 0, STR_MAX, false, "0.1.0", NULL},
    [HVT_MCH_CPU] = {NULL, "cpu", FT_I32, C(cpu), -1, INT32_MAX, false, "0.1.0", NULL},
    [HVT_MCH_INFERRED] = {NULL, "inferred", FT_BOOL, C(inferred), 0, 0, false, "0.1.0", NULL},
    [HVT_MCH_GROUP] = {NULL, "group", FT_STR, C(group), 0, STR_MAX, false, "0.1.0", NULL},
    [HVT_MCH_READS_WRITES_SPLIT] = {NULL, "reads_writes_split", FT_BOOL, C(reads_writes_split), 0, 0, true,
				    "0.1.0", NULL},
    [HVT_MCH_NOTE] = {NULL, "note", FT_STR, C(note), 0, STR_MAX, false, "0.1.0", NULL},
};
#undef C

struct table {
	const struct row *rows;
	unsigned n;
};

static const struct table meta_table = {meta_rows, HVT_META_NITEMS};
static const struct table channel_table = {channel_rows, HVT_MCH_NITEMS};

#define FIELD(base, r, T)  ((T *)((char *)(base) + (r)->offset))
#define CFIELD(base, r, T) ((const T *)((const char *)(base) + (r)->offset))

/* ---- freeing ---- */

static void strv_fini(struct hvt_meta_strv *sv)
{
	for (uint32_t i = 0; sv->v && i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = 0;
}

static void table_fini(const struct table *t, void *base)
{
	for (unsigned i = 0; i < t->n; i++) {
		const struct row *r = &t->rows[i];

		if (r->type == FT_STR) {
			free(*FIELD(base, r, char *));
		} else if (r->type == FT_STRV) {
			strv_fini(FIELD(base, r, struct hvt_meta_strv));
		} else if (r->type == FT_CHANNELS) {
			struct hvt_meta_channels *cs = FIELD(base, r, struct hvt_meta_channels);

			for (uint32_t c = 0; cs->v && c < cs->n; c++)
				hvt_meta_channel_fini(&cs->v[c]);
			free(cs->v);
		}
	}
}

void hvt_meta_channel_fini(struct hvt_meta_channel *c)
{
	if (!c)
		return;
	table_fini(&channel_table, c);
	json_object_put(c->unknown);
	memset(c, 0, sizeof(*c));
}

void hvt_trace_meta_fini(struct hvt_trace_meta *m)
{
	if (!m)
		return;
	table_fini(&meta_table, m);
	json_object_put(m->unknown);
	memset(m, 0, sizeof(*m));
}

int hvt_meta_set_str(char **dst, const char *s)
{
	char *copy = NULL;

	if (s && !(copy = strdup(s)))
		return -ENOMEM;
	free(*dst);
	*dst = copy;
	return 0;
}

/* ---- to JSON ---- */

static struct json_object *channel_to_json(const struct hvt_meta_channel *c);

static struct json_object *value_to_json(const struct row *r, const void *base)
{
	switch (r->type) {
	case FT_STR: {
		const char *s = *CFIELD(base, r, char *const);
		return json_object_new_string(s ? s : "");
	}
	case FT_I32:
		return json_object_new_int(*CFIELD(base, r, int32_t));
	case FT_U32:
		return json_object_new_uint64(*CFIELD(base, r, uint32_t));
	case FT_U64:
		return json_object_new_uint64(*CFIELD(base, r, uint64_t));
	case FT_BOOL:
		return json_object_new_boolean(*CFIELD(base, r, bool));
	case FT_MODE:
		return json_object_new_string(hvt_mode_name(*CFIELD(base, r, enum hvt_mode)));
	case FT_BW_SOURCE: {
		const char *s = hvt_bw_source_name(*CFIELD(base, r, enum hvt_bw_source));
		return s ? json_object_new_string(s) : json_object_new_null();
	}
	case FT_STRV: {
		const struct hvt_meta_strv *sv = CFIELD(base, r, struct hvt_meta_strv);
		struct json_object *a = json_object_new_array();

		for (uint32_t i = 0; a && i < sv->n; i++)
			json_object_array_add(a, json_object_new_string(sv->v[i] ? sv->v[i] : ""));
		return a;
	}
	case FT_CHANNELS: {
		const struct hvt_meta_channels *cs = CFIELD(base, r, struct hvt_meta_channels);
		struct json_object *a = json_object_new_array();

		for (uint32_t i = 0; a && i < cs->n; i++)
			json_object_array_add(a, channel_to_json(&cs->v[i]));
		return a;
	}
	}
	return NULL;
}

/* Adds what unknown holds to o: members o lacks, and inside member objects both have, theirs. */
static void merge_unknown(struct json_object *o, struct json_object *unknown)
{
	if (!unknown || !json_object_is_type(unknown, json_type_object))
		return;
	json_object_object_foreach(unknown, k, v)
	{
		struct json_object *have;

		if (!json_object_object_get_ex(o, k, &have))
			json_object_object_add(o, k, json_object_get(v));
		else if (json_object_is_type(have, json_type_object) &&
			 json_object_is_type(v, json_type_object))
			merge_unknown(have, v);
	}
}

static struct json_object *table_to_json(const struct table *t, const void *base, uint64_t present,
					 struct json_object *unknown)
{
	struct json_object *o = json_object_new_object();

	for (unsigned i = 0; o && i < t->n; i++) {
		const struct row *r = &t->rows[i];
		struct json_object *into = o;

		if (!r->required && !(present & (1ull << i)))
			continue;
		if (r->group && !json_object_object_get_ex(o, r->group, &into)) {
			into = json_object_new_object();
			json_object_object_add(o, r->group, into);
		}
		json_object_object_add(into, r->key, value_to_json(r, base));
	}
	if (o)
		merge_unknown(o, unknown);
	return o;
}

static struct json_object *channel_to_json(const struct hvt_meta_channel *c)
{
	return table_to_json(&channel_table, c, c->present, c->unknown);
}

struct json_object *hvt_trace_meta_to_json(const struct hvt_trace_meta *m)
{
	return table_to_json(&meta_table, m, m->present, m->unknown);
}

/* ---- from JSON ---- */

static int string_copy(const char *s, char **out, struct hvt_err *err)
{
	if (!(*out = strdup(s)))
		return hvt_err_set(err, -ENOMEM, "META: out of memory");
	return 0;
}

static int channel_from_json(struct hvt_meta_channel *c, const struct hvt_json_in *in);

static int strv_from_json(struct hvt_meta_strv *sv, const struct hvt_json_in *in, const struct row *r)
{
	struct hvt_json_in a;
	size_t n;
	int rc = hvt_json_array(in, r->key, r->max, &a, &n);

	if (rc || !n)
		return rc;
	if (!(sv->v = calloc(n, sizeof(*sv->v))))
		return hvt_err_set(in->err, -ENOMEM, "META: out of memory");
	sv->n = (uint32_t)n;
	for (size_t i = 0; i < n && !rc; i++) {
		const char *s;

		if (!(rc = hvt_json_item_str(&a, i, STR_MAX, &s)))
			rc = string_copy(s, &sv->v[i], in->err);
	}
	return rc;
}

static int channels_from_json(struct hvt_meta_channels *cs, const struct hvt_json_in *in, const struct row *r)
{
	struct hvt_json_in a;
	size_t n;
	int rc = hvt_json_array(in, r->key, r->max, &a, &n);

	if (rc || !n)
		return rc;
	if (!(cs->v = calloc(n, sizeof(*cs->v))))
		return hvt_err_set(in->err, -ENOMEM, "META: out of memory");
	cs->n = (uint32_t)n;
	for (size_t i = 0; i < n && !rc; i++) {
		struct hvt_json_in c;

		if (!(rc = hvt_json_item_object(&a, i, &c)))
			rc = channel_from_json(&cs->v[i], &c);
	}
	return rc;
}

static int value_from_json(const struct row *r, void *base, const struct hvt_json_in *in)
{
	const char *s;
	int64_t i;
	uint64_t u;
	int rc = 0;

	switch (r->type) {
	case FT_STR:
		if (!(rc = hvt_json_str(in, r->key, r->max, &s)))
			rc = string_copy(s, FIELD(base, r, char *), in->err);
		break;
	case FT_I32:
		if (!(rc = hvt_json_int(in, r->key, r->min, (int64_t)r->max, &i)))
			*FIELD(base, r, int32_t) = (int32_t)i;
		break;
	case FT_U32:
		if (!(rc = hvt_json_uint(in, r->key, (uint64_t)r->min, r->max, &u)))
			*FIELD(base, r, uint32_t) = (uint32_t)u;
		break;
	case FT_U64:
		rc = hvt_json_uint(in, r->key, (uint64_t)r->min, r->max, FIELD(base, r, uint64_t));
		break;
	case FT_BOOL:
		rc = hvt_json_bool(in, r->key, FIELD(base, r, bool));
		break;
	case FT_MODE:
		if ((rc = hvt_json_str(in, r->key, SIZE_MAX, &s)))
			break;
		if ((*FIELD(base, r, enum hvt_mode) = hvt_mode_from_name(s)) == HVT_MODE_NONE)
			return hvt_json_refuse(in, r->key,
					       "= \"%.64s\" is not a harvest mode (dirty-log or ad)", s);
		break;
	case FT_BW_SOURCE:
		if ((rc = hvt_json_str(in, r->key, SIZE_MAX, &s)))
			break;
		if ((*FIELD(base, r, enum hvt_bw_source) = hvt_bw_source_from_name(s)) == HVT_BW_SOURCE_NONE)
			return hvt_json_refuse(
			    in, r->key,
			    "= \"%.64s\" is not a bandwidth source (pmu, pmu-stand-in or resctrl-total)", s);
		break;
	case FT_STRV:
		rc = strv_from_json(FIELD(base, r, struct hvt_meta_strv), in, r);
		break;
	case FT_CHANNELS:
		rc = channels_from_json(FIELD(base, r, struct hvt_meta_channels), in, r);
		break;
	}
	if (!rc && r->check) {
		const char *why = r->check(FIELD(base, r, void));

		if (why)
			rc = hvt_json_refuse(in, r->key, "is %s", why);
	}
	return rc;
}

/* Whether a row has this key in this group (NULL: the top level); or, with key NULL, is in the group. */
static bool row_known(const struct table *t, const char *group, const char *key)
{
	for (unsigned i = 0; i < t->n; i++) {
		const struct row *r = &t->rows[i];

		if (!key ? r->group && !strcmp(r->group, group)
			 : (group ? r->group && !strcmp(r->group, group) : !r->group) && !strcmp(r->key, key))
			return true;
	}
	return false;
}

/* Keeps the members of o that no row knows (inside the row groups too) in *unknown. */
static void keep_unknown(const struct table *t, struct json_object *o, struct json_object **unknown)
{
	json_object_object_foreach(o, k, v)
	{
		bool group = row_known(t, k, NULL);
		struct json_object *u = NULL;

		if (!group && !row_known(t, NULL, k)) {
			u = json_object_get(v);
		} else if (group) { /* checked to be an object by table_from_json */
			json_object_object_foreach(v, k2, v2)
			{
				if (row_known(t, k, k2))
					continue;
				if (!u)
					u = json_object_new_object();
				json_object_object_add(u, k2, json_object_get(v2));
			}
		}
		if (!u)
			continue;
		if (!*unknown)
			*unknown = json_object_new_object();
		json_object_object_add(*unknown, k, u);
	}
}

static int table_from_json(const struct table *t, void *base, uint64_t *present, const struct hvt_json_in *in)
{
	for (unsigned i = 0; i < t->n; i++) {
		const struct row *r = &t->rows[i];
		struct hvt_json_in group;
		const struct hvt_json_in *from = in;
		int rc;

		/* An absent group is as good as its members absent: refused ("missing") for a required one.
		 */
		if (r->group && !hvt_json_has(in, r->group) && !r->required)
			continue;
		if (r->group && (rc = hvt_json_object(in, r->group, &group)))
			return rc;
		if (r->group)
			from = &group;
		if (!r->required && !hvt_json_has(from, r->key))
			continue;
		/* every getter refuses a missing member */
		if ((rc = value_from_json(r, base, from)))
			return rc;
		if (!r->required)
			*present |= 1ull << i;
	}
	return 0;
}

static int channel_from_json(struct hvt_meta_channel *c, const struct hvt_json_in *in)
{
	int rc = table_from_json(&channel_table, c, &c->present, in);

	if (!rc)
		keep_unknown(&channel_table, in->o, &c->unknown);
	return rc;
}

int hvt_trace_meta_from_json(struct hvt_trace_meta *m, struct json_object *o, struct hvt_err *err)
{
	struct hvt_json_in in;
	int rc;

	memset(m, 0, sizeof(*m));
	if (!o || !json_object_is_type(o, json_type_object))
		return hvt_err_set(err, -EINVAL, "META: expected a JSON object, got %s",
				   o ? hvt_json_kind(o) : "nothing");
	hvt_json_in_init(&in, o, -EINVAL, err, "META");
	rc = table_from_json(&meta_table, m, &m->present, &in);
	/* The source says how to read the bytes: it comes with bandwidth, and only then. */
	if (!rc && m->bandwidth_available && !hvt_trace_meta_has(m, HVT_META_BANDWIDTH_SOURCE))
		rc =
		    hvt_err_set(err, -EINVAL,
				"META: missing \"bandwidth_source\", though \"bandwidth_available\" is true");
	if (!rc && !m->bandwidth_available && hvt_trace_meta_has(m, HVT_META_BANDWIDTH_SOURCE))
		rc = hvt_json_refuse(&in, "bandwidth_source",
				     "is given, though \"bandwidth_available\" is false");
	if (!rc)
		keep_unknown(&meta_table, o, &m->unknown);
	if (rc)
		hvt_trace_meta_fini(m);
	return rc;
}
