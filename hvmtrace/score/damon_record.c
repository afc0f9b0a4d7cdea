// SPDX-License-Identifier: MIT
/* Reading a DAMON record (damon_record.h): damo's JSON, compressed or not, and "hvmtrace-damon 1" text. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "damon_record.h"
#include "hvmtrace/error.h"
#include "hvmtrace/json_read.h"
#include "hvmtrace/util.h"

#define TEXT_HEADER "hvmtrace-damon 1"

static int add_snapshot(struct damon_record *rec, uint64_t start_ns, uint64_t end_ns, uint64_t where)
{
	if (hvt_array_room((void **)&rec->snaps, &rec->snaps_cap, rec->nsnaps, sizeof(*rec->snaps)))
		return -ENOMEM;
	rec->snaps[rec->nsnaps++] = (struct damon_snapshot){start_ns, end_ns, rec->nregions, 0, where};
	return 0;
}

/* Appends a region to the last snapshot; "" or the problem with it (empty, or not after its neighbour). */
static const char *add_region(struct damon_record *rec, uint64_t start, uint64_t end, uint32_t nr,
			      uint64_t where, int *rc)
{
	struct damon_snapshot *s = &rec->snaps[rec->nsnaps - 1];

	*rc = 0;
	if (end <= start)
		return "is empty (end not after start)";
	if (s->n && rec->regions[rec->nregions - 1].end > start)
		return "overlaps or comes before the region before it (regions must ascend, apart)";
	if (hvt_array_room((void **)&rec->regions, &rec->regions_cap, rec->nregions, sizeof(*rec->regions))) {
		*rc = -ENOMEM;
		return "";
	}
	rec->regions[rec->nregions++] = (struct damon_region){start, end, nr, where};
	s->n++;
	return NULL;
}

/* A window must not run backwards nor start before the previous one ends. */
static const char *window_problem(const struct damon_record *rec, uint64_t start_ns, uint64_t end_ns)
{
	if (end_ns <= start_ns)
		return "ends before it starts";
	if (rec->nsnaps && rec->snaps[rec->nsnaps - 1].end_ns > start_ns)
		return "starts before the previous snapshot's window ends";
	return NULL;
}

/* ---- "hvmtrace-damon 1" ---- */

/* A decimal or 0x-hex number, wholly digits, into *v; the rest of s after it in *end. */
static bool text_number(const char *s, const char **end, uint64_t *v)
{
	int base = 10;
	char *e;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!isxdigit((unsigned char)s[0]) || (base == 10 && !isdigit((unsigned char)s[0])))
		return false;
	errno = 0;
	*v = strtoull(s, &e, base);
	if (errno || (*e && *e != ' ' && *e != '\t'))
		return false;
	*end = e;
	return true;
}

static const char *skip_blank(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/*
 * Lines: the header, then "aggr_us N" (optional, before the first region), comments (#) and blank lines,
 * and one region a line: TIME_NS START END NR_ACCESSES, TIME the end of its window. The lines with one TIME
 * are one snapshot; its window starts aggr_us before TIME but not before the previous snapshot's TIME, or
 * without aggr_us at the previous snapshot's TIME (the first one's as long as the second one's).
 */
static int parse_text(const char *name, char *text, struct damon_record *rec, struct hvt_err *err)
{
	uint64_t aggr_ns = 0, lineno = 0, prev_time = 0;
	bool header = false;
	char *line = text, *next;
	int rc;

	rec->format = TEXT_HEADER;
	rec->text = true;
	for (; line; line = next) {
		const char *p, *problem;
		uint64_t f[4];
		int k;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		if (!header) {
			if (strcmp(line, TEXT_HEADER))
				return hvt_err_set(err, -EINVAL,
						   "%s line 1: not a DAMON record (\"%s\" expected)", name,
						   TEXT_HEADER);
			header = true;
			continue;
		}
		p = skip_blank(line);
		if (!*p || *p == '#')
			continue;
		if (!strncmp(p, "aggr_us", 7)) {
			if (rec->nsnaps || aggr_ns)
				return hvt_err_set(err, -EINVAL,
						   "%s line %" PRIu64
						   ": aggr_us comes once, before the first region",
						   name, lineno);
			p = skip_blank(p + 7);
			if (!text_number(p, &p, &aggr_ns) || *skip_blank(p) || !aggr_ns ||
			    aggr_ns > UINT64_MAX / 1000)
				return hvt_err_set(err, -EINVAL,
						   "%s line %" PRIu64
						   ": aggr_us needs a whole number of us above 0",
						   name, lineno);
			aggr_ns *= 1000;
			continue;
		}
		for (k = 0; k < 4; k++) {
			if (!text_number(p, &p, &f[k]))
				break;
			p = skip_blank(p);
		}
		if (k < 4 || *p)
			return hvt_err_set(
			    err, -EINVAL,
			    "%s line %" PRIu64
			    ": not a region (TIME_NS START END NR_ACCESSES, numbers decimal or 0x-hex)",
			    name, lineno);
		if (f[3] > UINT32_MAX)
			return hvt_err_set(err, -EINVAL,
					   "%s line %" PRIu64 ": nr_accesses %" PRIu64 " is too large", name,
					   lineno, f[3]);
		if (!rec->nsnaps || f[0] != prev_time) {
			/* aggr_us before it, but not before the previous snapshot (a reader's loop drifts) */
			uint64_t start = aggr_ns && f[0] > aggr_ns ? f[0] - aggr_ns : 0;

			if (!aggr_ns || (rec->nsnaps && start < prev_time))
				start = prev_time;
			if (rec->nsnaps && f[0] < prev_time)
				return hvt_err_set(err, -EINVAL,
						   "%s line %" PRIu64 ": time %" PRIu64
						   " comes before the previous snapshot's %" PRIu64,
						   name, lineno, f[0], prev_time);
			if ((rec->nsnaps || aggr_ns) && start >= f[0])
				return hvt_err_set(err, -EINVAL,
						   "%s line %" PRIu64 ": time %" PRIu64
						   " leaves its window empty",
						   name, lineno, f[0]);
			if (add_snapshot(rec, start, f[0], lineno))
				return hvt_err_set(err, -ENOMEM, "out of memory");
			prev_time = f[0];
		}
		problem = add_region(rec, f[1], f[2], (uint32_t)f[3], lineno, &rc);
		if (rc)
			return hvt_err_set(err, rc, "out of memory");
		if (problem)
			return hvt_err_set(err, -EINVAL,
					   "%s line %" PRIu64 ": region 0x%" PRIx64 "-0x%" PRIx64 " %s", name,
					   lineno, f[1], f[2], problem);
	}
	if (!header)
		return hvt_err_set(err, -EINVAL, "%s: empty, not a DAMON record", name);
	if (!rec->nsnaps)
		return hvt_err_set(err, -EINVAL, "%s: no regions: an empty DAMON record", name);
	/* without aggr_us, the first window is as long as the second one */
	if (!aggr_ns && rec->nsnaps == 1)
		return hvt_err_set(err, -EINVAL,
				   "%s: one snapshot and no aggr_us line: its window's length is unknown",
				   name);
	if (!aggr_ns) {
		uint64_t len = rec->snaps[1].end_ns - rec->snaps[1].start_ns;

		rec->snaps[0].start_ns = rec->snaps[0].end_ns > len ? rec->snaps[0].end_ns - len : 0;
		if (rec->snaps[0].start_ns == rec->snaps[0].end_ns)
			return hvt_err_set(err, -EINVAL,
					   "%s line %" PRIu64 ": time 0 leaves its window empty", name,
					   rec->snaps[0].where);
	}
	return 0;
}

/* ---- damo's JSON ---- */

/* nr_accesses: an integer (older damo) or {"samples": N, ...} */
static int json_nr(const struct hvt_json_in *reg, uint32_t *nr)
{
	struct json_object *v = NULL;
	struct hvt_json_in obj;
	int rc;

	json_object_object_get_ex(reg->o, "nr_accesses", &v);
	if (v && json_object_is_type(v, json_type_object)) {
		if ((rc = hvt_json_object(reg, "nr_accesses", &obj)))
			return rc;
		return hvt_json_u32(&obj, "samples", 0, UINT32_MAX, nr);
	}
	return hvt_json_u32(reg, "nr_accesses", 0, UINT32_MAX, nr);
}

static int json_snapshot(struct hvt_json_in *snaps, size_t i, struct damon_record *rec)
{
	struct hvt_json_in snap, regions, reg;
	uint64_t start_ns, end_ns;
	const char *problem;
	size_t n;
	int rc;

	if ((rc = hvt_json_item_object(snaps, i, &snap)) ||
	    (rc = hvt_json_uint(&snap, "start_time", 0, INT64_MAX, &start_ns)) ||
	    (rc = hvt_json_uint(&snap, "end_time", 0, INT64_MAX, &end_ns)))
		return rc;
	if ((problem = window_problem(rec, start_ns, end_ns)))
		return hvt_err_set(snap.err, -EINVAL, "%s: the window %" PRIu64 "-%" PRIu64 " ns %s",
				   snap.where, start_ns, end_ns, problem);
	if ((rc = hvt_json_array(&snap, "regions", SIZE_MAX, &regions, &n)))
		return rc;
	if (add_snapshot(rec, start_ns, end_ns, i))
		return hvt_err_set(snap.err, -ENOMEM, "out of memory");
	for (size_t j = 0; j < n; j++) {
		uint64_t start, end;
		uint32_t nr;

		if ((rc = hvt_json_item_object(&regions, j, &reg)) ||
		    (rc = hvt_json_uint(&reg, "start", 0, UINT64_MAX, &start)) ||
		    (rc = hvt_json_uint(&reg, "end", 0, UINT64_MAX, &end)) || (rc = json_nr(&reg, &nr)))
			return rc;
		problem = add_region(rec, start, end, nr, j, &rc);
		if (rc)
			return hvt_err_set(snap.err, rc, "out of memory");
		if (problem)
			return hvt_err_set(snap.err, -EINVAL, "%s: 0x%" PRIx64 "-0x%" PRIx64 " %s", reg.where,
					   start, end, problem);
	}
	return 0;
}

static int parse_json(const char *name, const char *text, size_t len, struct damon_record *rec,
		      struct hvt_err *err)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = NULL;
	struct hvt_json_in top, record, snaps;
	size_t nrec, nsnaps;
	int rc;

	if (!tok)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (!o || json_tokener_get_parse_end(tok) < len) {
		size_t at = json_tokener_get_parse_end(tok), line = 1;

		for (size_t i = 0; i < at && i < len; i++)
			line += text[i] == '\n';
		rc = hvt_err_set(err, -EINVAL, "%s line %zu: not damo's JSON: %s", name, line,
				 o ? "text after its end"
				   : json_tokener_error_desc(json_tokener_get_error(tok)));
		goto out;
	}
	if (!json_object_is_type(o, json_type_array)) {
		rc = hvt_err_set(err, -EINVAL, "%s: not damo's JSON (a list of records expected, got %s)",
				 name, hvt_json_kind(o));
		goto out;
	}
	hvt_json_in_init(&top, o, -EINVAL, err, "%s: record", name);
	nrec = json_object_array_length(o);
	if (nrec != 1) {
		rc = hvt_err_set(err, -EINVAL,
				 "%s: %zu records (monitoring targets); score reads a record of one target "
				 "(DAMON's paddr of the guest)",
				 name, nrec);
		goto out;
	}
	if ((rc = hvt_json_item_object(&top, 0, &record)) ||
	    (rc = hvt_json_array(&record, "snapshots", SIZE_MAX, &snaps, &nsnaps)))
		goto out;
	for (size_t i = 0; i < nsnaps && !rc; i++)
		rc = json_snapshot(&snaps, i, rec);
	if (!rc && !rec->nregions)
		rc = hvt_err_set(err, -EINVAL, "%s: no regions: an empty DAMON record", name);
out:
	json_object_put(o);
	json_tokener_free(tok);
	return rc;
}

/* ---- the form ---- */

/* Inflates a zlib stream into *out (NUL-terminated), at most DAMON_RECORD_MAX_BYTES. */
static int inflate_all(const char *name, const unsigned char *data, size_t len, char **out, size_t *outlen,
		       struct hvt_err *err)
{
	z_stream z = {0};
	size_t cap = len * 4 + 4096, n = 0;
	char *buf = NULL;
	int zrc = Z_OK;

	if (inflateInit(&z) != Z_OK)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	z.next_in = (unsigned char *)data;
	z.avail_in = (uInt)(len < UINT32_MAX ? len : UINT32_MAX);
	while (zrc != Z_STREAM_END) {
		if (n + 1 >= cap || !buf) {
			char *nb;

			cap = buf ? cap * 2 : cap;
			if (cap > DAMON_RECORD_MAX_BYTES + 1ull)
				cap = DAMON_RECORD_MAX_BYTES + 1ull;
			if (n + 1 >= cap) {
				zrc = Z_MEM_ERROR;
				break;
			}
			nb = realloc(buf, cap);
			if (!nb) {
				zrc = Z_MEM_ERROR;
				break;
			}
			buf = nb;
		}
		z.next_out = (unsigned char *)buf + n;
		z.avail_out = (uInt)(cap - 1 - n);
		zrc = inflate(&z, Z_NO_FLUSH);
		n = cap - 1 - z.avail_out;
		if (zrc != Z_OK && zrc != Z_STREAM_END)
			break;
		if (zrc == Z_OK && z.avail_in == 0 && z.avail_out > 0) {
			zrc = Z_DATA_ERROR; /* the stream ends early */
			break;
		}
	}
	inflateEnd(&z);
	if (zrc != Z_STREAM_END) {
		free(buf);
		if (zrc == Z_MEM_ERROR && n + 1 >= DAMON_RECORD_MAX_BYTES)
			return hvt_err_set(err, -EINVAL, "%s: decompresses to more than %u MiB", name,
					   DAMON_RECORD_MAX_BYTES >> 20);
		return hvt_err_set(err, zrc == Z_MEM_ERROR ? -ENOMEM : -EINVAL,
				   "%s: a zlib stream (damo's json_compressed) that does not decompress: %s",
				   name,
				   zrc == Z_MEM_ERROR ? "out of memory" : (z.msg ? z.msg : "it ends early"));
	}
	buf[n] = '\0';
	*out = buf;
	*outlen = n;
	return 0;
}

int damon_record_parse(const char *name, const unsigned char *data, size_t len, struct damon_record *rec,
		       struct hvt_err *err)
{
	/* zlib: CMF 0x78 (deflate, 32 KiB window) and a header check that divides by 31 */
	bool compressed = len >= 2 && data[0] == 0x78 && ((data[0] << 8) | data[1]) % 31 == 0;
	char *text = NULL;
	size_t tlen = len, i = 0;
	int rc;

	if (compressed) {
		if ((rc = inflate_all(name, data, len, &text, &tlen, err)))
			return rc;
	} else {
		text = malloc(len + 1);
		if (!text)
			return hvt_err_set(err, -ENOMEM, "out of memory");
		memcpy(text, data, len);
		text[len] = '\0';
	}
	if (strlen(text) != tlen)
		rc = hvt_err_set(err, -EINVAL, "%s: holds a NUL byte: not a DAMON record", name);
	else {
		while (i < tlen && isspace((unsigned char)text[i]))
			i++;
		if (i < tlen && text[i] == '[') {
			rc = parse_json(name, text, tlen, rec, err);
			if (!rc)
				rec->format = compressed ? "damo json_compressed" : "damo json";
		} else
			rc = parse_text(name, text, rec, err);
	}
	free(text);
	if (rc) {
		damon_record_free(rec);
		memset(rec, 0, sizeof(*rec));
	}
	return rc;
}

int damon_record_read(const char *path, struct damon_record *rec, struct hvt_err *err)
{
	char *data;
	size_t len;
	int rc = hvt_read_file(path, "DAMON record", DAMON_RECORD_MAX_BYTES, &data, &len, err);

	if (rc)
		return rc;
	rc = damon_record_parse(path, (unsigned char *)data, len, rec, err);
	free(data);
	return rc;
}

void damon_record_free(struct damon_record *rec)
{
	free(rec->snaps);
	free(rec->regions);
	rec->snaps = NULL;
	rec->regions = NULL;
	rec->nsnaps = rec->nregions = 0;
}
