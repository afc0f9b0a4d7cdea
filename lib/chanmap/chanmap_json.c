// SPDX-License-Identifier: MIT
/* chanmap.json: reading, writing (schema in docs/chanmap.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvmtrace/json_number.h"
#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/json_read.h"
#include "hvmtrace/util.h"

/* ---- writing ---- */

static struct json_object *hex(uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_object_new_string(buf);
}

/* confidence < 0: not recorded, so not written */
static struct json_object *range_json(const struct hvt_range *r, double confidence)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "start", hex(r->start));
	json_object_object_add(o, "size", hex(r->size));
	if (confidence >= 0)
		json_object_object_add(o, "confidence", hvt_json_new_double(round(confidence * 1000) / 1000));
	return o;
}

static struct json_object *probe_json(const struct hvt_chanmap_probe_info *p)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "memory", json_object_new_string(p->memory));
	json_object_object_add(o, "window_ns", json_object_new_uint64(p->window_ns));
	json_object_object_add(o, "sample_bytes", json_object_new_uint64(p->sample_bytes));
	json_object_object_add(o, "step_bytes", json_object_new_uint64(p->step_bytes));
	json_object_object_add(o, "granule_bytes", json_object_new_uint64(p->granule_bytes));
	json_object_object_add(o, "reps", json_object_new_int(p->reps));
	json_object_object_add(o, "calibration_windows", json_object_new_int(p->calibration_windows));
	json_object_object_add(o, "windows", json_object_new_uint64(p->windows));
	json_object_object_add(o, "probed_bytes", hex(p->probed_bytes));
	json_object_object_add(o, "implied_seconds", hvt_json_new_double(p->implied_seconds));
	return o;
}

struct json_object *hvt_chanmap_to_json(const struct hvt_chanmap *m)
{
	struct json_object *o = json_object_new_object(), *host = json_object_new_object(),
			   *cpu = json_object_new_object(), *chans = json_object_new_array(),
			   *ils = json_object_new_array();

	json_object_object_add(o, "schema", json_object_new_string(HVT_CHANMAP_SCHEMA));
	json_object_object_add(o, "version", json_object_new_int(HVT_CHANMAP_VERSION));
	json_object_object_add(o, "created", json_object_new_string(m->created));
	json_object_object_add(o, "source", json_object_new_string(m->source));
	json_object_object_add(host, "hostname", json_object_new_string(m->host.hostname));
	json_object_object_add(host, "kernel", json_object_new_string(m->host.kernel));
	json_object_object_add(host, "machine_id", json_object_new_string(m->host.machine_id));
	json_object_object_add(o, "host", host);
	json_object_object_add(cpu, "vendor", json_object_new_string(m->cpu.vendor));
	json_object_object_add(cpu, "family", json_object_new_int((int)m->cpu.family));
	json_object_object_add(cpu, "model", json_object_new_int((int)m->cpu.model));
	json_object_object_add(cpu, "name", json_object_new_string(m->cpu.name));
	json_object_object_add(cpu, "generation", json_object_new_string(m->cpu.generation));
	json_object_object_add(o, "cpu", cpu);
	json_object_object_add(o, "sockets", json_object_new_int((int)m->sockets));
	for (size_t i = 0; i < m->nchannels; i++) {
		const struct hvt_chanmap_channel *c = &m->channels[i];
		struct json_object *co = json_object_new_object(), *rs = json_object_new_array();
		hvt_channel_json_add(co, c->id, (int)c->socket, (int)c->controller, (int)c->channel, c->pmu);
		if (c->inferred)
			json_object_object_add(co, "numbering", json_object_new_string("inferred"));
		for (size_t r = 0; r < c->nranges; r++)
			json_object_array_add(rs, range_json(&c->ranges[r], hvt_chanmap_confidence(c, r)));
		json_object_object_add(co, "ranges", rs);
		json_object_array_add(chans, co);
	}
	json_object_object_add(o, "channels", chans);
	for (size_t i = 0; i < m->ninterleaved; i++) {
		const struct hvt_chanmap_interleave *il = &m->interleaved[i];
		struct json_object *io = range_json(&il->range, il->confidence),
				   *ids = json_object_new_array();
		for (size_t j = 0; j < il->nchannels; j++)
			json_object_array_add(ids, json_object_new_string(m->channels[il->channels[j]].id));
		json_object_object_add(io, "channels", ids);
		json_object_array_add(ils, io);
	}
	json_object_object_add(o, "interleaved", ils);
	json_object_object_add(o, "advice", json_object_new_string(m->advice));
	json_object_object_add(o, "probe", probe_json(&m->probe));
	return o;
}

char *hvt_chanmap_to_string(const struct hvt_chanmap *m)
{
	struct json_object *o = hvt_chanmap_to_json(m);
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
							      JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = strlen(s);
	char *out = malloc(n + 2);
	if (out) {
		memcpy(out, s, n);
		out[n] = '\n';
		out[n + 1] = '\0';
	}
	json_object_put(o);
	return out;
}

int hvt_chanmap_write(const struct hvt_chanmap *m, const char *path, struct hvt_err *e)
{
	char tmp[4096];
	char *text = hvt_chanmap_to_string(m);
	int rc = 0;

	if (!text)
		return hvt_err_set(e, -ENOMEM, "out of memory");
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		free(text);
		return hvt_err_set(e, rc, "cannot create %s: %s", tmp, strerror(-rc));
	}
	size_t len = strlen(text), done = 0;
	while (done < len && !rc) {
		ssize_t w = write(fd, text + done, len - done);
		if (w < 0)
			rc = -errno;
		else
			done += (size_t)w;
	}
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc) {
		unlink(tmp);
		hvt_err_set(e, rc, "cannot write %s: %s", path, strerror(-rc));
	}
	free(text);
	return rc;
}

/* ---- reading ---- */

/* Free text (names, dates, advice) is optional and cut to its field, as the writer's own buffers are. */
#define TEXT(in, key, field) HVT_JSON_OPT(hvt_json_strbuf, in, key, field, sizeof(field), true)

/* "confidence" is optional (maps written before the probe recorded it): *confidence < 0 without it. */
static int read_range(const struct hvt_json_in *in, struct hvt_range *r, double *confidence)
{
	int rc;

	*confidence = -1;
	if ((rc = hvt_json_addr(in, "start", UINT64_MAX, &r->start)) ||
	    (rc = HVT_JSON_OPT(hvt_json_double, in, "confidence", 0, 1, confidence)))
		return rc;
	return hvt_json_addr(in, "size", UINT64_MAX, &r->size);
}

/* Kept as written (not merged), so validation sees the file's own ranges. */
static int add_range(struct hvt_chanmap *m, int ci, const struct hvt_range *x, double conf, struct hvt_err *e)
{
	struct hvt_chanmap_channel *cc = &m->channels[ci];
	struct hvt_range *nr = realloc(cc->ranges, (cc->nranges + 1) * sizeof(*nr));

	if (!nr)
		return hvt_err_set(e, -ENOMEM, "out of memory");
	cc->ranges = nr;
	if (cc->confidence) {
		double *nc = realloc(cc->confidence, (cc->nranges + 1) * sizeof(*nc));
		if (!nc)
			return hvt_err_set(e, -ENOMEM, "out of memory");
		cc->confidence = nc;
		nc[cc->nranges] = -1;
	}
	nr[cc->nranges++] = *x;
	if (conf >= 0 && hvt_chanmap_set_confidence(m, (size_t)ci, cc->nranges - 1, conf))
		return hvt_err_set(e, -ENOMEM, "out of memory");
	return 0;
}

static int read_channel(const char *name, struct hvt_chanmap *m, const struct hvt_json_in *chans, size_t i)
{
	struct hvt_chanmap_channel c = {0};
	struct hvt_json_in co, rs;
	char numbering[16] = "";
	size_t n;
	int rc;

	if ((rc = hvt_json_item_object(chans, i, &co)) ||
	    (rc = hvt_json_strbuf(&co, "id", c.id, sizeof(c.id), 0)))
		return rc;
	hvt_json_rename(&co, "%s: channel %s", name, c.id);
	if ((rc = hvt_json_u32(&co, "socket", 0, 65535, &c.socket)) ||
	    (rc = hvt_json_u32(&co, "controller", 0, 65535, &c.controller)) ||
	    (rc = hvt_json_u32(&co, "channel", 0, 65535, &c.channel)) || (rc = TEXT(&co, "pmu", c.pmu)) ||
	    (rc = TEXT(&co, "numbering", numbering)) ||
	    (rc = hvt_json_array(&co, "ranges", SIZE_MAX, &rs, &n)))
		return rc;
	c.inferred = !strcmp(numbering, "inferred");
	int ci = hvt_chanmap_add_channel(m, &c, co.err);
	if (ci < 0)
		return hvt_err_prefix(co.err, ci, "%s: ", name);
	for (size_t r = 0; r < n; r++) {
		struct hvt_json_in ro;
		struct hvt_range x;
		double conf;

		if ((rc = hvt_json_item_object(&rs, r, &ro)) || (rc = read_range(&ro, &x, &conf)) ||
		    (rc = add_range(m, ci, &x, conf, co.err)))
			return rc;
	}
	return 0;
}

static int read_interleaved(struct hvt_chanmap *m, const struct hvt_json_in *in)
{
	struct hvt_json_in arr;
	size_t n;
	int rc;

	if (!hvt_json_has(in, "interleaved"))
		return 0;
	if ((rc = hvt_json_array(in, "interleaved", SIZE_MAX, &arr, &n)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		struct hvt_json_in io, ids;
		struct hvt_range r;
		double conf;
		unsigned idx[256];
		size_t nids;

		if ((rc = hvt_json_item_object(&arr, i, &io)) || (rc = read_range(&io, &r, &conf)) ||
		    (rc = hvt_json_array(&io, "channels", 256, &ids, &nids)))
			return rc;
		for (size_t j = 0; j < nids; j++) {
			const char *id;
			int ci;

			if ((rc = hvt_json_item_str(&ids, j, SIZE_MAX, &id)))
				return rc;
			if ((ci = hvt_chanmap_find(m, id)) < 0)
				return hvt_err_set(in->err, -EINVAL,
						   "%s names channel '%.64s', which is not listed", io.where,
						   id);
			idx[j] = (unsigned)ci;
		}
		struct hvt_chanmap_interleave *ni =
		    realloc(m->interleaved, (m->ninterleaved + 1) * sizeof(*ni));
		if (!ni)
			return hvt_err_set(in->err, -ENOMEM, "out of memory");
		m->interleaved = ni;
		unsigned *ch = malloc((nids ? nids : 1) * sizeof(*ch));
		if (!ch)
			return hvt_err_set(in->err, -ENOMEM, "out of memory");
		memcpy(ch, idx, nids * sizeof(*ch));
		ni[m->ninterleaved++] = (struct hvt_chanmap_interleave){r, nids, ch, conf};
	}
	return 0;
}

/* "probe": what the probe did, every member optional. */
static int read_probe(const struct hvt_json_in *in, struct hvt_chanmap_probe_info *pi)
{
	struct hvt_json_in p;
	int rc;

	if (!hvt_json_has(in, "probe"))
		return 0;
	if ((rc = hvt_json_object(in, "probe", &p)) || (rc = TEXT(&p, "memory", pi->memory)))
		return rc;
#define U64(k) HVT_JSON_OPT(hvt_json_uint, &p, #k, 0, UINT64_MAX, &pi->k)
	if ((rc = U64(window_ns)) || (rc = U64(sample_bytes)) || (rc = U64(step_bytes)) ||
	    (rc = U64(granule_bytes)) || (rc = U64(windows)) ||
	    (rc = HVT_JSON_OPT(hvt_json_u32, &p, "reps", 0, UINT32_MAX, &pi->reps)) ||
	    (rc = HVT_JSON_OPT(hvt_json_u32, &p, "calibration_windows", 0, UINT32_MAX,
			       &pi->calibration_windows)) ||
	    (rc = HVT_JSON_OPT(hvt_json_addr, &p, "probed_bytes", UINT64_MAX, &pi->probed_bytes)))
		return rc;
#undef U64
	return HVT_JSON_OPT(hvt_json_double, &p, "implied_seconds", -HUGE_VAL, HUGE_VAL,
			    &pi->implied_seconds);
}

static int read_host_cpu(const struct hvt_json_in *in, struct hvt_chanmap *m)
{
	struct hvt_json_in h, c;
	int rc;

	if (hvt_json_has(in, "host") &&
	    ((rc = hvt_json_object(in, "host", &h)) || (rc = TEXT(&h, "hostname", m->host.hostname)) ||
	     (rc = TEXT(&h, "kernel", m->host.kernel)) || (rc = TEXT(&h, "machine_id", m->host.machine_id))))
		return rc;
	if (!hvt_json_has(in, "cpu"))
		return 0;
	if ((rc = hvt_json_object(in, "cpu", &c)) || (rc = TEXT(&c, "vendor", m->cpu.vendor)) ||
	    (rc = TEXT(&c, "name", m->cpu.name)) || (rc = TEXT(&c, "generation", m->cpu.generation)) ||
	    (rc = HVT_JSON_OPT(hvt_json_u32, &c, "family", 0, UINT32_MAX, &m->cpu.family)))
		return rc;
	return HVT_JSON_OPT(hvt_json_u32, &c, "model", 0, UINT32_MAX, &m->cpu.model);
}

static int read_doc(const char *name, struct json_object *o, struct hvt_chanmap *m, struct hvt_err *e)
{
	struct hvt_json_in in, chans;
	const char *schema;
	int64_t version;
	size_t n;
	int rc;

	hvt_json_in_init(&in, o, -EINVAL, e, "%s", name);
	if (!hvt_json_has(&in, "schema") || hvt_json_str(&in, "schema", SIZE_MAX, &schema) ||
	    strcmp(schema, HVT_CHANMAP_SCHEMA))
		return hvt_err_set(e, -EINVAL, "%s is not a channel map (no \"schema\": \"%s\")", name,
				   HVT_CHANMAP_SCHEMA);
	if ((rc = hvt_json_int(&in, "version", INT64_MIN, INT64_MAX, &version)))
		return rc;
	if (version != HVT_CHANMAP_VERSION)
		return hvt_err_set(
		    e, -EINVAL,
		    "%s is chanmap schema version %" PRId64
		    "; this program reads version %d (re-run chanmap probe, or use a matching hvmtrace)",
		    name, version, HVT_CHANMAP_VERSION);
	if ((rc = TEXT(&in, "created", m->created)) || (rc = TEXT(&in, "source", m->source)) ||
	    (rc = TEXT(&in, "advice", m->advice)) || (rc = read_host_cpu(&in, m)) ||
	    (rc = hvt_json_u32(&in, "sockets", 0, 65535, &m->sockets)) ||
	    (rc = hvt_json_array(&in, "channels", SIZE_MAX, &chans, &n)))
		return rc;
	for (size_t i = 0; i < n; i++)
		if ((rc = read_channel(name, m, &chans, i)))
			return rc;
	if ((rc = read_interleaved(m, &in)) || (rc = read_probe(&in, &m->probe)))
		return rc;
	if ((rc = hvt_chanmap_validate(m, e)))
		return hvt_err_prefix(e, rc, "%s: ", name);
	return 0;
}

int hvt_chanmap_from_json(struct json_object *o, const char *name, struct hvt_chanmap *m, struct hvt_err *e)
{
	hvt_chanmap_init(m);
	int rc = read_doc(name, o, m, e);
	if (rc)
		hvt_chanmap_free(m);
	return rc;
}

int hvt_chanmap_parse(const char *text, const char *name, struct hvt_chanmap *m, struct hvt_err *e)
{
	struct json_tokener *tok = json_tokener_new();
	int rc;

	hvt_chanmap_init(m);
	if (!tok)
		return hvt_err_set(e, -ENOMEM, "out of memory");
	struct json_object *o = json_tokener_parse_ex(tok, text, (int)strlen(text));
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	if (!o || jerr != json_tokener_success) {
		rc = hvt_err_set(e, -EINVAL, "%s is not valid JSON: %s (at byte %zu)", name,
				 jerr == json_tokener_continue ? "unexpected end"
							       : json_tokener_error_desc(jerr),
				 json_tokener_get_parse_end(tok));
	} else {
		rc = read_doc(name, o, m, e);
	}
	json_object_put(o);
	json_tokener_free(tok);
	if (rc)
		hvt_chanmap_free(m);
	return rc;
}

int hvt_chanmap_read(const char *path, struct hvt_chanmap *m, struct hvt_err *e)
{
	char *text;
	int rc;

	hvt_chanmap_init(m);
	if ((rc = hvt_read_file(path, "channel map", HVT_CHANMAP_MAX_BYTES, &text, NULL, e)))
		return rc;
	rc = hvt_chanmap_parse(text, path, m, e);
	free(text);
	return rc;
}
