// SPDX-License-Identifier: MIT
/*
 * Probe logs (`chanmap probe --log`, JSON Lines, format in docs/chanmap.md; the docs call them session
 * logs): the probe writes one line per window, after a header with the channels, the touchable memory and
 * the parameters. A log replays as a backend that answers each window with the recorded counts, so a probe
 * session recorded on a real host reruns the probe's decisions anywhere.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "hvmtrace/probe.h"
#include "hvmtrace/error.h"
#include "hvmtrace/files.h"
#include "hvmtrace/json_read.h"
#include "hvmtrace/util.h"

#define LOG_SCHEMA  "hvmtrace-chanmap-probe" /* the header's "session" member */
#define LOG_VERSION 1

static const char *const dir_names[] = {"idle", "read", "write"};

static struct json_object *hex(uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_object_new_string(buf);
}

int hvt_probe_log_write_header(FILE *log, const struct hvt_probe_backend *b, const struct hvt_probe_params *p)
{
	struct json_object *o = json_object_new_object(), *t = json_object_new_array(),
			   *pr = json_object_new_object();

	json_object_object_add(o, "session", json_object_new_string(LOG_SCHEMA));
	json_object_object_add(o, "version", json_object_new_int(LOG_VERSION));
	json_object_object_add(o, "map", hvt_chanmap_to_json(&b->proto));
	for (size_t i = 0; i < b->ntouchable; i++) {
		struct json_object *r = json_object_new_object();
		json_object_object_add(r, "start", hex(b->touchable[i].start));
		json_object_object_add(r, "size", hex(b->touchable[i].size));
		json_object_array_add(t, r);
	}
	json_object_object_add(o, "touchable", t);
	json_object_object_add(pr, "window_ns", json_object_new_uint64(p->window_ns));
	json_object_object_add(pr, "sample_bytes", json_object_new_uint64(p->sample_bytes));
	json_object_object_add(pr, "step_bytes", json_object_new_uint64(p->step_bytes));
	json_object_object_add(pr, "granule", json_object_new_uint64(p->granule));
	json_object_object_add(pr, "calibration_windows", json_object_new_int((int)p->calibration_windows));
	json_object_object_add(pr, "reps", json_object_new_int((int)p->reps));
	json_object_object_add(pr, "max_retries", json_object_new_int((int)p->max_retries));
	json_object_object_add(pr, "write_check", json_object_new_boolean(p->write_check));
	json_object_object_add(o, "params", pr);
	int rc = fprintf(log, "%s\n",
			 json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE)) < 0
		     ? -EIO
		     : 0;
	json_object_put(o);
	return rc;
}

void hvt_probe_log_write_window(FILE *log, uint64_t n, const char *phase, const struct hvt_probe_touch *t,
				const uint64_t *rd, const uint64_t *wr, size_t nch)
{
	fprintf(log,
		"{\"w\":%" PRIu64 ",\"phase\":\"%s\",\"dir\":\"%s\",\"hpa\":\"0x%" PRIx64
		"\",\"bytes\":%" PRIu64 ",\"reps\":%u,\"socket\":%u,\"window_ns\":%" PRIu64 ",\"rd\":[",
		n, phase, dir_names[t->dir], t->hpa, t->bytes, t->reps, t->socket, t->window_ns);
	for (size_t c = 0; c < nch; c++)
		fprintf(log, "%s%" PRIu64, c ? "," : "", rd[c]);
	fputs("],\"wr\":[", log);
	for (size_t c = 0; c < nch; c++)
		fprintf(log, "%s%" PRIu64, c ? "," : "", wr[c]);
	fputs("]}\n", log);
}

/* ---- replay ---- */

struct replay {
	FILE *f;
	char path[256];
	unsigned line;
	struct hvt_probe_params params;
	char *buf;
	size_t cap;
};

/* The log's numbers are JSON integers or "0x…"/decimal strings (the writer's "hpa"): hvt_json_addr reads
 * them; this one those of an unsigned. */
static int read_u32(const struct hvt_json_in *in, const char *key, unsigned *out)
{
	uint64_t v;
	int rc = hvt_json_addr(in, key, UINT32_MAX, &v);

	if (!rc)
		*out = (unsigned)v;
	return rc;
}

/* "rd" or "wr": one count per channel of the header's map. */
static int read_counts(const struct hvt_json_in *in, const char *key, uint64_t *out, size_t nch)
{
	struct hvt_json_in a;
	size_t n;
	int rc = hvt_json_array(in, key, SIZE_MAX, &a, &n);

	if (rc)
		return rc;
	if (n != nch)
		return hvt_json_refuse(in, key, "has %zu counts, not one per channel (%zu)", n, nch);
	for (size_t c = 0; c < nch && !rc; c++)
		rc = hvt_json_item_uint(&a, c, 0, UINT64_MAX, &out[c]);
	return rc;
}

/* A window line into rec and the counts. */
static int read_window(const struct replay *r, struct json_object *o, size_t nch, struct hvt_probe_touch *rec,
		       uint64_t *rd, uint64_t *wr, struct hvt_err *e)
{
	struct hvt_json_in in;
	const char *dir;
	unsigned d;
	int rc;

	hvt_json_in_init(&in, o, -EINVAL, e, "session %s line %u", r->path, r->line);
	if (!json_object_is_type(o, json_type_object))
		return hvt_err_set(e, -EINVAL, "%s is not a window record (a JSON object)", in.where);
	if ((rc = hvt_json_str(&in, "dir", SIZE_MAX, &dir)))
		return rc;
	for (d = 0; d < 3 && strcmp(dir, dir_names[d]); d++)
		;
	if (d == 3)
		return hvt_json_refuse(&in, "dir", "= \"%.16s\" is not idle, read or write", dir);
	rec->dir = (enum hvt_probe_dir)d;
	if ((rc = hvt_json_addr(&in, "hpa", UINT64_MAX, &rec->hpa)) ||
	    (rc = hvt_json_addr(&in, "bytes", UINT64_MAX, &rec->bytes)) ||
	    (rc = read_u32(&in, "reps", &rec->reps)) || (rc = read_u32(&in, "socket", &rec->socket)) ||
	    (rc = hvt_json_addr(&in, "window_ns", UINT64_MAX, &rec->window_ns)) ||
	    (rc = read_counts(&in, "rd", rd, nch)))
		return rc;
	return read_counts(&in, "wr", wr, nch);
}

/* A line the log cannot give: longer than HVT_PROBE_LOG_MAX_LINE, or a read error. */
static int unreadable_line(const struct replay *r, unsigned line, int rc, struct hvt_err *e)
{
	if (rc == -EFBIG)
		return hvt_err_set(e, -EINVAL, "session %s line %u is longer than %u bytes: not a probe log",
				   r->path, line, HVT_PROBE_LOG_MAX_LINE);
	return hvt_err_set(e, rc, "cannot read session %s line %u: %s", r->path, line, strerror(-rc));
}

static void describe(const struct hvt_probe_touch *t, char *buf, size_t len)
{
	snprintf(buf, len, "%s 0x%" PRIx64 "+%" PRIu64 " ×%u from socket %u over %" PRIu64 " ns",
		 dir_names[t->dir], t->hpa, t->bytes, t->reps, t->socket, t->window_ns);
}

static int replay_window(struct hvt_probe_backend *b, const struct hvt_probe_touch *t, uint64_t *rd,
			 uint64_t *wr, struct hvt_err *e)
{
	struct replay *r = b->ctx;
	int n = hvt_read_line(r->f, HVT_PROBE_LOG_MAX_LINE, &r->buf, &r->cap);
	if (n < 0)
		return unreadable_line(r, r->line + 1, n, e);
	if (n == 0)
		return hvt_err_set(e, -EPROTO,
				   "session %s ends after line %u, but the probe asked for one more window",
				   r->path, r->line);
	r->line++;
	struct json_object *o = json_tokener_parse(r->buf);
	struct hvt_probe_touch rec = {0};
	int rc = read_window(r, o, b->proto.nchannels, &rec, rd, wr, e);

	json_object_put(o);
	if (rc)
		return rc;
	if (rec.dir != t->dir || rec.hpa != t->hpa || rec.bytes != t->bytes || rec.reps != t->reps ||
	    rec.socket != t->socket || rec.window_ns != t->window_ns) {
		char want[160], got[160];
		describe(&rec, got, sizeof(got));
		describe(t, want, sizeof(want));
		return hvt_err_set(
		    e, -EPROTO,
		    "session %s line %u recorded \"%s\" but the probe now asks for \"%s\": the replay diverges (another probe version or parameters)",
		    r->path, r->line, got, want);
	}
	return 0;
}

static void replay_destroy(struct hvt_probe_backend *b)
{
	struct replay *r = b->ctx;
	if (r->f)
		fclose(r->f);
	free(r->buf);
	free(r);
}

static int read_params(const struct hvt_json_in *in, struct hvt_probe_params *p)
{
	struct hvt_json_in pr;
	int rc;

	if ((rc = hvt_json_object(in, "params", &pr)) ||
	    (rc = hvt_json_addr(&pr, "window_ns", UINT64_MAX, &p->window_ns)) ||
	    (rc = hvt_json_addr(&pr, "sample_bytes", UINT64_MAX, &p->sample_bytes)) ||
	    (rc = hvt_json_addr(&pr, "step_bytes", UINT64_MAX, &p->step_bytes)) ||
	    (rc = hvt_json_addr(&pr, "granule", UINT64_MAX, &p->granule)) ||
	    (rc = read_u32(&pr, "calibration_windows", &p->calibration_windows)) ||
	    (rc = read_u32(&pr, "reps", &p->reps)) || (rc = read_u32(&pr, "max_retries", &p->max_retries)))
		return rc;
	p->write_check = false;
	return HVT_JSON_OPT(hvt_json_bool, &pr, "write_check", &p->write_check);
}

static int read_header(struct hvt_probe_backend *b, struct replay *r, struct json_object *o,
		       struct hvt_err *e)
{
	struct hvt_json_in in, map, t;
	const char *session;
	int64_t version;
	size_t n;
	int rc;

	hvt_json_in_init(&in, o, -EINVAL, e, "session %s", r->path);
	if (!hvt_json_has(&in, "session") || hvt_json_str(&in, "session", SIZE_MAX, &session) ||
	    strcmp(session, LOG_SCHEMA))
		return hvt_err_set(
		    e, -EINVAL, "%s is not a chanmap probe session (first line has no \"session\": \"%s\")",
		    r->path, LOG_SCHEMA);
	if ((rc = hvt_json_int(&in, "version", INT64_MIN, INT64_MAX, &version)))
		return rc;
	if (version != LOG_VERSION)
		return hvt_err_set(e, -EINVAL,
				   "session %s has version %" PRId64 "; this program replays version %d",
				   r->path, version, LOG_VERSION);
	if ((rc = hvt_json_object(&in, "map", &map)) ||
	    (rc = hvt_json_array(&in, "touchable", SIZE_MAX, &t, &n)) ||
	    (rc = read_params(&in, &r->params)) || (rc = hvt_chanmap_from_json(map.o, r->path, &b->proto, e)))
		return rc;
	char src[sizeof(b->proto.source) + sizeof(r->path) + 16];
	snprintf(src, sizeof(src), "replay of %s (%s)", r->path, b->proto.source);
	snprintf(b->proto.source, sizeof(b->proto.source), "%.*s", (int)sizeof(b->proto.source) - 1, src);
	b->ntouchable = n;
	b->touchable = calloc(b->ntouchable + 1, sizeof(*b->touchable));
	if (!b->touchable)
		return hvt_err_set(e, -ENOMEM, "out of memory");
	for (size_t i = 0; i < b->ntouchable; i++) {
		struct hvt_json_in it;

		if ((rc = hvt_json_item_object(&t, i, &it)) ||
		    (rc = hvt_json_addr(&it, "start", UINT64_MAX, &b->touchable[i].start)) ||
		    (rc = hvt_json_addr(&it, "size", UINT64_MAX, &b->touchable[i].size)))
			return rc;
	}
	return 0;
}

int hvt_probe_log_open(const char *path, struct hvt_probe_backend **out, struct hvt_err *e)
{
	struct hvt_probe_backend *b =
	    hvt_probe_backend_new(sizeof(struct replay), replay_window, replay_destroy, e);
	struct replay *r;
	int rc;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	r = b->ctx;
	snprintf(r->path, sizeof(r->path), "%s", path);
	/* a regular file only: a FIFO would block in open(), a device might never end */
	mode_t mode = 0;
	int fd = hvt_open_regular(path, &mode);

	if (fd >= 0 && !(r->f = fdopen(fd, "r"))) {
		int err = -errno;

		close(fd);
		fd = err;
	}
	if (fd < 0) {
		rc = fd == -EINVAL && mode
			 ? hvt_err_set(e, fd, "cannot read session %s: it is %s, not a regular file", path,
				       hvt_file_type_name(mode))
			 : hvt_err_set(e, fd, "cannot open session %s: %s", path, strerror(-fd));
		hvt_probe_backend_destroy(b);
		return rc;
	}
	int n = hvt_read_line(r->f, HVT_PROBE_LOG_MAX_LINE, &r->buf, &r->cap);
	struct json_object *o = n > 0 ? json_tokener_parse(r->buf) : NULL;
	r->line = 1;
	rc = n < 0 ? unreadable_line(r, 1, n, e) : read_header(b, r, o, e);
	json_object_put(o);
	if (rc) {
		hvt_probe_backend_destroy(b);
		return rc;
	}
	b->fixed_params = &r->params;
	*out = b;
	return 0;
}
