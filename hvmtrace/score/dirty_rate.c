// SPDX-License-Identifier: MIT
/* Reading QEMU's query-dirty-rate replies (dirty_rate.h). */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "dirty_rate.h"
#include "hvmtrace/error.h"
#include "hvmtrace/json_read.h"
#include "hvmtrace/util.h"

static const char *const mode_names[DR_MODES] = {"page-sampling", "dirty-bitmap", "dirty-ring"};

const char *dirty_rate_mode_name(enum dirty_rate_mode m)
{
	return (unsigned)m < DR_MODES ? mode_names[m] : "?";
}

/* One reply (an object holding "status") into *r. */
static int read_reply(struct hvt_json_in *in, struct dirty_rate_reply *r)
{
	const char *status = NULL, *mode = "page-sampling", *unit = "second";
	int64_t start, calc, rate;
	struct hvt_json_in vcpus;
	size_t n = 0;
	int rc;

	if ((rc = hvt_json_str(in, "status", 32, &status)))
		return rc;
	if (strcmp(status, "measured"))
		return hvt_json_refuse(in, "status",
				       "= \"%s\": not a finished measurement (only \"measured\" replies are "
				       "scored)",
				       status);
	if ((rc = HVT_JSON_OPT(hvt_json_str, in, "mode", 32, &mode)) ||
	    (rc = HVT_JSON_OPT(hvt_json_str, in, "calc-time-unit", 32, &unit)))
		return rc;
	for (r->mode = 0; r->mode < DR_MODES && strcmp(mode, mode_names[r->mode]); r->mode++)
		;
	if (r->mode == DR_MODES)
		return hvt_json_refuse(
		    in, "mode", "= \"%s\" is not a mode (page-sampling, dirty-bitmap, dirty-ring)", mode);
	if (strcmp(unit, "second") && strcmp(unit, "millisecond"))
		return hvt_json_refuse(in, "calc-time-unit", "= \"%s\" is not a unit (second, millisecond)",
				       unit);
	r->calc_in_seconds = !strcmp(unit, "second");
	if ((rc = hvt_json_int(in, "start-time", 0, DIRTY_RATE_MAX_START_S, &start)) ||
	    (rc = hvt_json_int(
		 in, "calc-time", 1,
		 (int64_t)(DIRTY_RATE_MAX_CALC_NS / (r->calc_in_seconds ? 1000000000 : 1000000)), &calc)) ||
	    (rc = hvt_json_int(in, "dirty-rate", INT64_MIN, INT64_MAX, &rate)) ||
	    (rc = HVT_JSON_OPT(hvt_json_uint, in, "sample-pages", 0, UINT32_MAX, &r->sample_pages)))
		return rc;
	if (rate < 0)
		return hvt_json_refuse(in, "dirty-rate",
				       "= %" PRId64 ": QEMU's measurement failed (it reports -1 then)", rate);
	if (hvt_json_has(in, "vcpu-dirty-rate")) {
		if ((rc = hvt_json_array(in, "vcpu-dirty-rate", DIRTY_RATE_MAX_VCPUS, &vcpus, &n)))
			return rc;
		for (size_t i = 0; i < n; i++) {
			struct hvt_json_in v;
			int64_t id, vr;

			if ((rc = hvt_json_item_object(&vcpus, i, &v)) ||
			    (rc = hvt_json_int(&v, "id", 0, INT32_MAX, &id)) ||
			    (rc = hvt_json_int(&v, "dirty-rate", 0, INT64_MAX, &vr)))
				return rc;
		}
	}
	r->start_s = start;
	r->calc_ns = (uint64_t)calc * (r->calc_in_seconds ? 1000000000ull : 1000000ull);
	r->rate_mib = (uint64_t)rate;
	r->nvcpu = (uint32_t)n;
	return 0;
}

static bool same_measurement(const struct dirty_rate_reply *a, const struct dirty_rate_reply *b)
{
	return a->mode == b->mode && a->start_s == b->start_s && a->calc_ns == b->calc_ns &&
	       a->sample_pages == b->sample_pages && a->rate_mib == b->rate_mib && a->nvcpu == b->nvcpu;
}

/* One line: a reply appended to f, or skipped (not a reply). */
static int parse_line(const char *name, uint64_t lineno, const char *text, size_t len,
		      struct json_tokener *tok, struct dirty_rate_file *f, struct hvt_err *err)
{
	struct json_object *o;
	struct hvt_json_in top, in;
	struct dirty_rate_reply r = {.line = lineno};
	int rc = 0;

	json_tokener_reset(tok);
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (!o || json_tokener_get_parse_end(tok) < len) {
		size_t at = json_tokener_get_parse_end(tok);

		while (o && at < len && (text[at] == ' ' || text[at] == '\t' || text[at] == '\r'))
			at++;
		if (o && at == len)
			goto parsed;
		rc = hvt_err_set(err, -EINVAL,
				 "%s line %" PRIu64 ": not a QMP reply (one JSON object a line): %s", name,
				 lineno,
				 o ? "text after the object"
				 : json_tokener_get_error(tok) == json_tokener_continue
				     ? "the object does not end on its line"
				     : json_tokener_error_desc(json_tokener_get_error(tok)));
		goto out;
	}
parsed:
	if (!json_object_is_type(o, json_type_object)) {
		rc = hvt_err_set(err, -EINVAL,
				 "%s line %" PRIu64 ": not a QMP reply (a JSON object expected, got %s)",
				 name, lineno, hvt_json_kind(o));
		goto out;
	}
	hvt_json_in_init(&top, o, -EINVAL, err, "%s line %" PRIu64, name, lineno);
	in = top;
	if (json_object_object_get_ex(o, "error", NULL)) {
		struct json_object *e = NULL, *desc = NULL;

		json_object_object_get_ex(o, "error", &e);
		if (e && json_object_is_type(e, json_type_object))
			json_object_object_get_ex(e, "desc", &desc);
		rc = hvt_err_set(
		    err, -EINVAL, "%s line %" PRIu64 ": a QMP error, not a measurement: %.200s", name, lineno,
		    desc && json_object_is_type(desc, json_type_string) ? json_object_get_string(desc)
									: "(no desc)");
		goto out;
	}
	if (json_object_object_get_ex(o, "return", NULL)) {
		if ((rc = hvt_json_object(&top, "return", &in)))
			goto out;
		if (!json_object_object_length(in.o))
			goto out; /* calc-dirty-rate's acknowledgement */
	} else if (json_object_object_get_ex(o, "event", NULL) || json_object_object_get_ex(o, "QMP", NULL))
		goto out; /* an event, or the greeting */
	if ((rc = read_reply(&in, &r)))
		goto out;
	if (f->n && same_measurement(&f->v[f->n - 1], &r))
		goto out;
	if (hvt_array_room((void **)&f->v, &f->cap, f->n, sizeof(*f->v))) {
		rc = hvt_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	f->v[f->n++] = r;
out:
	json_object_put(o);
	return rc;
}

int dirty_rate_parse(const char *name, const char *data, size_t len, struct dirty_rate_file *f,
		     struct hvt_err *err)
{
	struct json_tokener *tok = json_tokener_new();
	uint64_t lineno = 0;
	size_t at = 0;
	int rc = 0;

	if (!tok)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	if (len > DIRTY_RATE_MAX_BYTES)
		rc = hvt_err_set(err, -EINVAL, "%s: larger than %u MiB: not a file of QMP replies", name,
				 DIRTY_RATE_MAX_BYTES >> 20);
	while (!rc && at < len) {
		const char *nl = memchr(data + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - data) : len, i = at;

		lineno++;
		while (i < end && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r'))
			i++;
		if (memchr(data + at, '\0', end - at))
			rc = hvt_err_set(err, -EINVAL,
					 "%s line %" PRIu64 ": holds a NUL byte: not a QMP reply", name,
					 lineno);
		else if (end - at > DIRTY_RATE_MAX_LINE)
			rc = hvt_err_set(err, -EINVAL,
					 "%s line %" PRIu64 ": longer than %u KiB: not a QMP reply", name,
					 lineno, DIRTY_RATE_MAX_LINE >> 10);
		else if (i < end)
			rc = parse_line(name, lineno, data + i, end - i, tok, f, err);
		at = end + 1;
	}
	json_tokener_free(tok);
	if (!rc && !f->n)
		rc = hvt_err_set(err, -EINVAL,
				 "%s: no query-dirty-rate reply (a line like {\"return\": {\"status\": "
				 "\"measured\", ...}})",
				 name);
	if (rc)
		dirty_rate_free(f);
	return rc;
}

int dirty_rate_read(const char *path, struct dirty_rate_file *f, struct hvt_err *err)
{
	char *data;
	size_t len;
	int rc = hvt_read_file(path, "calc-dirty-rate replies", DIRTY_RATE_MAX_BYTES, &data, &len, err);

	if (rc)
		return rc;
	rc = dirty_rate_parse(path, data, len, f, err);
	free(data);
	return rc;
}

void dirty_rate_free(struct dirty_rate_file *f)
{
	free(f->v);
	*f = (struct dirty_rate_file){0};
}
