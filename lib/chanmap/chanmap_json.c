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

#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
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
		json_object_object_add(o, "confidence",
				       json_object_new_double(round(confidence * 1000) / 1000));
	return o;
}

static struct json_object *probe_json(const struct hvt_chanmap_probe_info *p)
{
	struct json_object *o = json_object_new_object();
	json_object_object_add(o, "memory", json_object_new_string(p->memory));
	json_object_object_add(o, "window_ns", json_object_new_int64((int64_t)p->window_ns));
	json_object_object_add(o, "sample_bytes", json_object_new_int64((int64_t)p->sample_bytes));
	json_object_object_add(o, "step_bytes", json_object_new_int64((int64_t)p->step_bytes));
	json_object_object_add(o, "granule_bytes", json_object_new_int64((int64_t)p->granule_bytes));
	json_object_object_add(o, "reps", json_object_new_int(p->reps));
	json_object_object_add(o, "calibration_windows", json_object_new_int(p->calibration_windows));
	json_object_object_add(o, "windows", json_object_new_int64((int64_t)p->windows));
	json_object_object_add(o, "probed_bytes", hex(p->probed_bytes));
	json_object_object_add(o, "implied_seconds", json_object_new_double(p->implied_seconds));
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

struct reader {
	const char *name;
	struct hvt_err *e;
};

static int bad(struct reader *rd, const char *where, const char *what)
{
	return hvt_err_set(rd->e, -EINVAL, "%s: %s %s", rd->name, where, what);
}

static struct json_object *member(struct json_object *o, const char *key, enum json_type t)
{
	struct json_object *v;
	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, t))
		return NULL;
	return v;
}

/* An address or size: a "0x…" (or decimal) string, or a non-negative JSON integer. */
static int get_u64(struct reader *rd, struct json_object *o, const char *key, const char *where,
		   uint64_t *out)
{
	struct json_object *v;
	char what[96];

	snprintf(what, sizeof(what), "member \"%s\" is missing or not a number or \"0x…\" string", key);
	if (!json_object_object_get_ex(o, key, &v))
		return bad(rd, where, what);
	if (json_object_is_type(v, json_type_int)) {
		int64_t i = json_object_get_int64(v);
		if (i < 0)
			return bad(rd, where, what);
		*out = (uint64_t)i;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return bad(rd, where, what);
	const char *s = json_object_get_string(v);
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (!*s || *s == '-' || *end || errno)
		return bad(rd, where, what);
	*out = x;
	return 0;
}

static int get_uint(struct reader *rd, struct json_object *o, const char *key, const char *where,
		    unsigned *out)
{
	struct json_object *v = member(o, key, json_type_int);
	char what[80];

	snprintf(what, sizeof(what), "member \"%s\" is missing or not a small non-negative integer", key);
	if (!v || json_object_get_int64(v) < 0 || json_object_get_int64(v) > 65535)
		return bad(rd, where, what);
	*out = (unsigned)json_object_get_int64(v);
	return 0;
}

static void get_str(struct json_object *o, const char *key, char *buf, size_t len)
{
	struct json_object *v = member(o, key, json_type_string);
	snprintf(buf, len, "%s", v ? json_object_get_string(v) : "");
}

/* "confidence" is optional (maps written before the probe recorded it): *confidence < 0 without it. */
static int read_range(struct reader *rd, struct json_object *o, const char *where, struct hvt_range *r,
		      double *confidence)
{
	struct json_object *c = member(o, "confidence", json_type_double);
	int rc = get_u64(rd, o, "start", where, &r->start);

	if (!c)
		c = member(o, "confidence", json_type_int);
	*confidence = c ? json_object_get_double(c) : -1;
	if (!rc && c && !(*confidence >= 0 && *confidence <= 1))
		return bad(rd, where, "has a \"confidence\" outside 0-1");
	return rc ? rc : get_u64(rd, o, "size", where, &r->size);
}

static int read_channel(struct reader *rd, struct hvt_chanmap *m, struct json_object *co, size_t i)
{
	struct hvt_chanmap_channel c = {0};
	char where[64];
	struct json_object *id = member(co, "id", json_type_string),
			   *rs = member(co, "ranges", json_type_array);
	int rc;

	snprintf(where, sizeof(where), "channels[%zu]", i);
	if (!id || strlen(json_object_get_string(id)) >= sizeof(c.id))
		return bad(rd, where, "has no \"id\" string (s<socket>.mc<controller>.ch<channel>)");
	snprintf(c.id, sizeof(c.id), "%s", json_object_get_string(id));
	snprintf(where, sizeof(where), "channel %s", c.id);
	if ((rc = get_uint(rd, co, "socket", where, &c.socket)) ||
	    (rc = get_uint(rd, co, "controller", where, &c.controller)) ||
	    (rc = get_uint(rd, co, "channel", where, &c.channel)))
		return rc;
	get_str(co, "pmu", c.pmu, sizeof(c.pmu));
	char numbering[16];
	get_str(co, "numbering", numbering, sizeof(numbering));
	c.inferred = !strcmp(numbering, "inferred");
	if (!rs)
		return bad(rd, where, "has no \"ranges\" array");
	int ci = hvt_chanmap_add_channel(m, &c, rd->e);
	if (ci < 0)
		return hvt_err_prefix(rd->e, ci, "%s: ", rd->name);
	for (size_t r = 0; r < json_object_array_length(rs); r++) {
		struct hvt_range x;
		double conf;
		char w2[96];
		snprintf(w2, sizeof(w2), "%s ranges[%zu]", c.id, r);
		if ((rc = read_range(rd, json_object_array_get_idx(rs, r), w2, &x, &conf)))
			return rc;
		/* Kept as written (not merged), so validation sees the file's own ranges. */
		struct hvt_chanmap_channel *cc = &m->channels[ci];
		struct hvt_range *nr = realloc(cc->ranges, (cc->nranges + 1) * sizeof(*nr));
		if (!nr)
			return hvt_err_set(rd->e, -ENOMEM, "out of memory");
		cc->ranges = nr;
		if (cc->confidence) {
			double *nc = realloc(cc->confidence, (cc->nranges + 1) * sizeof(*nc));
			if (!nc)
				return hvt_err_set(rd->e, -ENOMEM, "out of memory");
			cc->confidence = nc;
			nc[cc->nranges] = -1;
		}
		nr[cc->nranges++] = x;
		if (conf >= 0 && hvt_chanmap_set_confidence(m, (size_t)ci, cc->nranges - 1, conf))
			return hvt_err_set(rd->e, -ENOMEM, "out of memory");
	}
	return 0;
}

static int read_interleaved(struct reader *rd, struct hvt_chanmap *m, struct json_object *arr)
{
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		struct json_object *io = json_object_array_get_idx(arr, i),
				   *ids = member(io, "channels", json_type_array);
		struct hvt_range r;
		double conf;
		char where[48];
		unsigned idx[256];
		size_t n = 0;
		int rc;

		snprintf(where, sizeof(where), "interleaved[%zu]", i);
		if ((rc = read_range(rd, io, where, &r, &conf)))
			return rc;
		if (!ids || json_object_array_length(ids) > 256)
			return bad(rd, where, "has no \"channels\" array of channel ids");
		for (size_t j = 0; j < json_object_array_length(ids); j++) {
			const char *id = json_object_get_string(json_object_array_get_idx(ids, j));
			int ci = id ? hvt_chanmap_find(m, id) : -1;
			if (ci < 0)
				return hvt_err_set(rd->e, -EINVAL,
						   "%s: %s names channel '%s', which is not listed", rd->name,
						   where, id ? id : "(not a string)");
			idx[n++] = (unsigned)ci;
		}
		struct hvt_chanmap_interleave *ni =
		    realloc(m->interleaved, (m->ninterleaved + 1) * sizeof(*ni));
		if (!ni)
			return hvt_err_set(rd->e, -ENOMEM, "out of memory");
		m->interleaved = ni;
		unsigned *ch = malloc((n ? n : 1) * sizeof(*ch));
		if (!ch)
			return hvt_err_set(rd->e, -ENOMEM, "out of memory");
		memcpy(ch, idx, n * sizeof(*ch));
		ni[m->ninterleaved++] = (struct hvt_chanmap_interleave){r, n, ch, conf};
	}
	return 0;
}

static void read_probe(struct json_object *p, struct hvt_chanmap_probe_info *pi)
{
	struct json_object *v;

	if (!p)
		return;
	get_str(p, "memory", pi->memory, sizeof(pi->memory));
#define U64(k)                                                                                               \
	if ((v = member(p, #k, json_type_int)))                                                              \
	pi->k = (uint64_t)json_object_get_int64(v)
	U64(window_ns);
	U64(sample_bytes);
	U64(step_bytes);
	U64(granule_bytes);
	U64(windows);
#undef U64
	if ((v = member(p, "reps", json_type_int)))
		pi->reps = (unsigned)json_object_get_int(v);
	if ((v = member(p, "calibration_windows", json_type_int)))
		pi->calibration_windows = (unsigned)json_object_get_int(v);
	if ((v = member(p, "probed_bytes", json_type_string)))
		pi->probed_bytes = strtoull(json_object_get_string(v), NULL, 0);
	if (json_object_object_get_ex(p, "implied_seconds", &v))
		pi->implied_seconds = json_object_get_double(v);
}

static int read_doc(struct reader *rd, struct json_object *o, struct hvt_chanmap *m)
{
	struct json_object *v, *chans;
	int rc;

	if (!(v = member(o, "schema", json_type_string)) ||
	    strcmp(json_object_get_string(v), HVT_CHANMAP_SCHEMA))
		return hvt_err_set(rd->e, -EINVAL, "%s is not a channel map (no \"schema\": \"%s\")",
				   rd->name, HVT_CHANMAP_SCHEMA);
	if (!(v = member(o, "version", json_type_int)))
		return bad(rd, "the document", "has no \"version\" integer");
	if (json_object_get_int(v) != HVT_CHANMAP_VERSION)
		return hvt_err_set(
		    rd->e, -EINVAL,
		    "%s is chanmap schema version %d; this program reads version %d (re-run chanmap probe, or use a matching hvmtrace)",
		    rd->name, json_object_get_int(v), HVT_CHANMAP_VERSION);
	get_str(o, "created", m->created, sizeof(m->created));
	get_str(o, "source", m->source, sizeof(m->source));
	get_str(o, "advice", m->advice, sizeof(m->advice));
	if ((v = member(o, "host", json_type_object))) {
		get_str(v, "hostname", m->host.hostname, sizeof(m->host.hostname));
		get_str(v, "kernel", m->host.kernel, sizeof(m->host.kernel));
		get_str(v, "machine_id", m->host.machine_id, sizeof(m->host.machine_id));
	}
	if ((v = member(o, "cpu", json_type_object))) {
		struct json_object *x;
		get_str(v, "vendor", m->cpu.vendor, sizeof(m->cpu.vendor));
		get_str(v, "name", m->cpu.name, sizeof(m->cpu.name));
		get_str(v, "generation", m->cpu.generation, sizeof(m->cpu.generation));
		if ((x = member(v, "family", json_type_int)))
			m->cpu.family = (unsigned)json_object_get_int(x);
		if ((x = member(v, "model", json_type_int)))
			m->cpu.model = (unsigned)json_object_get_int(x);
	}
	if ((rc = get_uint(rd, o, "sockets", "the document", &m->sockets)))
		return rc;
	if (!(chans = member(o, "channels", json_type_array)))
		return bad(rd, "the document", "has no \"channels\" array");
	for (size_t i = 0; i < json_object_array_length(chans); i++)
		if ((rc = read_channel(rd, m, json_object_array_get_idx(chans, i), i)))
			return rc;
	if ((rc = read_interleaved(rd, m, member(o, "interleaved", json_type_array))))
		return rc;
	read_probe(member(o, "probe", json_type_object), &m->probe);
	if ((rc = hvt_chanmap_validate(m, rd->e)))
		return hvt_err_prefix(rd->e, rc, "%s: ", rd->name);
	return 0;
}

int hvt_chanmap_from_json(struct json_object *o, const char *name, struct hvt_chanmap *m, struct hvt_err *e)
{
	struct reader rd = {name, e};

	hvt_chanmap_init(m);
	int rc = read_doc(&rd, o, m);
	if (rc)
		hvt_chanmap_free(m);
	return rc;
}

int hvt_chanmap_parse(const char *text, const char *name, struct hvt_chanmap *m, struct hvt_err *e)
{
	struct reader rd = {name, e};
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
		rc = read_doc(&rd, o, m);
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
