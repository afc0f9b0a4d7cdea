// SPDX-License-Identifier: MIT
/*
 * Reads .hvt traces (docs/formats.md). Opening walks every record once, checking its frame and CRC, so the
 * count of intervals it reports is a count of intervals that can be read: it stops at the first incomplete
 * or corrupt record and keeps everything before it. A closed trace ends in an INDEX and a trailer; the walk
 * checks that they agree with the records, which is what makes the status "complete".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hvmtrace/error.h"
#include "hvmtrace/files.h"
#include "hvmtrace/owners_format.h"
#include "hvmtrace/trace.h"
#include "trace_format.h"
#include "trace_decode.h"

#define WINDOW_SIZE (1u << 20) /* bytes read at a time while walking records */

struct layout_entry {
	uint64_t offset;
	struct hvt_layout layout;
};

struct interval_entry {
	uint64_t offset, seq, generation, t_start_ns;
	uint32_t length;
	uint32_t layout; /* index into layouts */
};

struct hvt_trace_reader {
	int fd;
	char *path;
	uint64_t size;
	struct hvt_trace_meta meta;
	struct layout_entry *layouts;
	size_t nlayouts;
	struct interval_entry *intervals;
	size_t nintervals, cap_intervals;
	struct hvt_owners_info *owners; /* OWNERS records, in file order */
	size_t nowners, cap_owners;
	struct hvt_trace_status st;
	/* a window of the file, so walking small records does not cost two syscalls each */
	uint8_t *win;
	uint64_t win_off;
	size_t win_len, win_cap;
};

/* A framed record as found in the file. */
struct record {
	uint64_t offset;
	uint32_t type;
	uint32_t length;
	const uint8_t *payload; /* valid until the next fetch */
	uint64_t end;           /* offset of the next record */
};

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* the file shrank under us */
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/*
 * Bytes [off, off+len) of the file, which the caller has checked lie inside it, from the window or read with
 * up to `ahead` bytes more; NULL with rc on failure.
 */
static const uint8_t *fetch_ahead(struct hvt_trace_reader *r, uint64_t off, size_t len, size_t ahead, int *rc)
{
	size_t want;

	if (off >= r->win_off && off - r->win_off <= r->win_len && len <= r->win_len - (off - r->win_off))
		return r->win + (off - r->win_off);
	want = len > ahead ? len : ahead;
	if (want > r->size - off)
		want = (size_t)(r->size - off);
	if (want > r->win_cap) {
		uint8_t *p = realloc(r->win, want);

		if (!p) {
			*rc = -ENOMEM;
			return NULL;
		}
		r->win = p;
		r->win_cap = want;
	}
	r->win_len = 0;
	*rc = read_at(r->fd, r->win, want, off);
	if (*rc)
		return NULL;
	r->win_off = off;
	r->win_len = want;
	return r->win;
}

static const uint8_t *fetch(struct hvt_trace_reader *r, uint64_t off, size_t len, int *rc)
{
	return fetch_ahead(r, off, len, WINDOW_SIZE, rc);
}

/*
 * Reads and checks the frame of the record at off: complete, CRC right, reserved and padding zero. On
 * failure writes why into why (without the offset) and returns -EINVAL, or another -errno for I/O errors.
 */
static int read_record(struct hvt_trace_reader *r, uint64_t off, struct record *rec, char *why, size_t whylen)
{
	const uint8_t *hdr, *pad;
	uint64_t padded;
	uint32_t crc;
	int rc = 0;

	if (r->size - off < HVT_REC_HEADER_SIZE) {
		snprintf(why, whylen, "header runs past end of file (torn write?)");
		return -EINVAL;
	}
	hdr = fetch(r, off, HVT_REC_HEADER_SIZE, &rc);
	if (!hdr)
		goto io;
	rec->offset = off;
	rec->type = hvt_get_le32(hdr);
	rec->length = hvt_get_le32(hdr + 4);
	padded = hvt_rec_padded(rec->length);
	if (rec->length > HVT_REC_MAX_PAYLOAD) {
		snprintf(why, whylen, "payload length %u is beyond any record's", rec->length);
		return -EINVAL;
	}
	if (r->size - off - HVT_REC_HEADER_SIZE < padded) {
		snprintf(why, whylen, "payload runs past end of file (torn write?)");
		return -EINVAL;
	}
	hdr = fetch(r, off, HVT_REC_HEADER_SIZE + (size_t)padded, &rc);
	if (!hdr)
		goto io;
	rec->payload = hdr + HVT_REC_HEADER_SIZE;
	rec->end = off + HVT_REC_HEADER_SIZE + padded;
	crc = hvt_rec_crc(hdr, rec->payload, rec->length);
	if (crc != hvt_get_le32(hdr + HVT_REC_CRC_OFFSET)) {
		snprintf(why, whylen, "CRC mismatch (stored 0x%08x, computed 0x%08x)",
			 hvt_get_le32(hdr + HVT_REC_CRC_OFFSET), crc);
		return -EINVAL;
	}
	if (hvt_get_le32(hdr + 12) != 0) {
		snprintf(why, whylen, "reserved header field is not zero");
		return -EINVAL;
	}
	for (pad = rec->payload + rec->length; pad < rec->payload + padded; pad++)
		if (*pad) {
			snprintf(why, whylen, "padding is not zero");
			return -EINVAL;
		}
	return 0;
io:
	snprintf(why, whylen, "read error: %s", strerror(-rc));
	return rc;
}

static struct json_object *parse_json(const uint8_t *text, size_t len)
{
	struct json_tokener *tok;
	struct json_object *o;

	if (memchr(text, '\0', len) || len > INT_MAX)
		return NULL;
	tok = json_tokener_new();
	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, (const char *)text, (int)len);
	if (o &&
	    (json_tokener_get_error(tok) != json_tokener_success || json_tokener_get_parse_end(tok) != len)) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

static const struct layout_entry *find_layout(const struct hvt_trace_reader *r, uint64_t generation,
					      size_t *index)
{
	size_t lo = 0, hi = r->nlayouts;

	/* generations increase through the file */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->layouts[mid].layout.generation < generation)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == r->nlayouts || r->layouts[lo].layout.generation != generation)
		return NULL;
	if (index)
		*index = lo;
	return &r->layouts[lo];
}

static int accept_layout(struct hvt_trace_reader *r, const struct record *rec, char *why, size_t whylen)
{
	struct json_object *o = parse_json(rec->payload, rec->length);
	struct layout_entry *grown, *e;
	struct hvt_err err = {{0}};
	int rc;

	if (!o) {
		snprintf(why, whylen, "layout is not valid JSON");
		return -EINVAL;
	}
	grown = realloc(r->layouts, (r->nlayouts + 1) * sizeof(*grown));
	if (!grown) {
		json_object_put(o);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	r->layouts = grown;
	e = &r->layouts[r->nlayouts];
	rc = hvt_layout_from_json(&e->layout, o, &err);
	json_object_put(o);
	if (rc) {
		snprintf(why, whylen, "invalid layout: %.150s", err.msg);
		return -EINVAL;
	}
	if (e->layout.page_size != r->meta.page_size) {
		snprintf(why, whylen, "layout generation %llu: field page_size: %u, but META's is %u",
			 (unsigned long long)e->layout.generation, e->layout.page_size, r->meta.page_size);
		hvt_layout_fini(&e->layout);
		return -EINVAL;
	}
	if (r->nlayouts && e->layout.generation <= r->layouts[r->nlayouts - 1].layout.generation) {
		snprintf(why, whylen, "layout generation %llu does not follow %llu",
			 (unsigned long long)e->layout.generation,
			 (unsigned long long)r->layouts[r->nlayouts - 1].layout.generation);
		hvt_layout_fini(&e->layout);
		return -EINVAL;
	}
	e->offset = rec->offset;
	r->nlayouts++;
	return 0;
}

static int accept_interval(struct hvt_trace_reader *r, const struct record *rec, char *why, size_t whylen)
{
	struct hvt_interval_head h;
	const struct layout_entry *l;
	uint64_t prev = r->nintervals ? r->intervals[r->nintervals - 1].seq : 0;
	size_t li = 0;

	if (hvt_interval_parse_head(rec->payload, rec->length, &h, NULL)) {
		snprintf(why, whylen, "interval record of %u bytes is too short", rec->length);
		return -EINVAL;
	}
	if (h.seq <= prev) {
		snprintf(why, whylen, "interval %llu does not follow interval %llu",
			 (unsigned long long)h.seq, (unsigned long long)prev);
		return -EINVAL;
	}
	l = find_layout(r, h.generation, &li);
	if (!l) {
		snprintf(why, whylen,
			 "interval %llu refers to layout generation %llu, which the trace does not define",
			 (unsigned long long)h.seq, (unsigned long long)h.generation);
		return -EINVAL;
	}
	if (h.nslots != l->layout.nslots) {
		snprintf(why, whylen, "interval %llu has %u slots, layout generation %llu has %u",
			 (unsigned long long)h.seq, h.nslots, (unsigned long long)h.generation,
			 l->layout.nslots);
		return -EINVAL;
	}
	if (r->nintervals == r->cap_intervals) {
		size_t cap = r->cap_intervals ? r->cap_intervals * 2 : 1024;
		struct interval_entry *grown = realloc(r->intervals, cap * sizeof(*grown));

		if (!grown) {
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		r->intervals = grown;
		r->cap_intervals = cap;
	}
	r->intervals[r->nintervals++] = (struct interval_entry){
	    .offset = rec->offset,
	    .seq = h.seq,
	    .generation = h.generation,
	    .t_start_ns = h.t_start_ns,
	    .length = rec->length,
	    .layout = (uint32_t)li,
	};
	return 0;
}

/*
 * An OWNERS record: the frame of one snapshot (its magic, and a body_bytes that fills the payload exactly)
 * after the interval it says it follows. What the snapshot says is the loader's to check
 * (hvmtrace/attribute/owners_from_trace.c): lib/ knows the trace's frames, not the snapshot's rules.
 */
static int accept_owners(struct hvt_trace_reader *r, const struct record *rec, char *why, size_t whylen)
{
	const uint8_t *snap = rec->payload + HVT_OWNERS_FIXED_SIZE;
	uint64_t prev = r->nintervals ? r->intervals[r->nintervals - 1].seq : HVT_OWNERS_NONE_BEFORE;
	uint64_t bytes, after;

	if (rec->length < HVT_OWNERS_FIXED_SIZE + HVT_OWN_HEADER_BYTES) {
		snprintf(why, whylen, "owners record of %u bytes is too short for a snapshot", rec->length);
		return -EINVAL;
	}
	bytes = rec->length - HVT_OWNERS_FIXED_SIZE;
	if (memcmp(snap, HVT_OWN_MAGIC, 8) || hvt_get_le64(snap + 32) != bytes - HVT_OWN_HEADER_BYTES ||
	    bytes - HVT_OWN_HEADER_BYTES > HVT_OWN_MAX_BODY) {
		snprintf(why, whylen,
			 "owners record does not hold one snapshot (no %s magic, or its body_bytes is not "
			 "the %llu bytes after its header)",
			 HVT_OWN_MAGIC, (unsigned long long)(bytes - HVT_OWN_HEADER_BYTES));
		return -EINVAL;
	}
	after = hvt_get_le64(rec->payload + 8);
	if (after != prev) {
		snprintf(why, whylen, "owners record says it follows interval %llu, but it follows %llu",
			 (unsigned long long)after, (unsigned long long)prev);
		return -EINVAL;
	}
	if (r->nowners == r->cap_owners) {
		size_t cap = r->cap_owners ? r->cap_owners * 2 : 64;
		struct hvt_owners_info *grown = realloc(r->owners, cap * sizeof(*grown));

		if (!grown) {
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		r->owners = grown;
		r->cap_owners = cap;
	}
	r->owners[r->nowners++] = (struct hvt_owners_info){
	    .offset = rec->offset, .at_ns = hvt_get_le64(rec->payload), .after_seq = after, .bytes = bytes};
	return 0;
}

/* A closed trace: the INDEX lists exactly the records the walk found, and the trailer follows it to EOF. */
static int check_index(struct hvt_trace_reader *r, const struct record *rec, char *why, size_t whylen)
{
	struct hvt_cursor c = {.p = rec->payload, .left = rec->length};
	const uint8_t *t;
	uint8_t trailer[HVT_TRAILER_SIZE];
	uint64_t nl, ni;
	int rc = 0;

	nl = hvt_cursor_u64(&c);
	ni = hvt_cursor_u64(&c);
	if (c.bad || nl != r->nlayouts || ni != r->nintervals ||
	    c.left != nl * HVT_INDEX_LAYOUT_SIZE + ni * HVT_INDEX_INTERVAL_SIZE) {
		snprintf(why, whylen, "index does not match the records before it");
		return -EINVAL;
	}
	for (size_t i = 0; i < nl; i++) {
		uint64_t off = hvt_cursor_u64(&c), gen = hvt_cursor_u64(&c);

		if (off != r->layouts[i].offset || gen != r->layouts[i].layout.generation) {
			snprintf(why, whylen, "index entry for layout %zu does not match its record", i);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < ni; i++) {
		const struct interval_entry *e = &r->intervals[i];
		uint64_t off = hvt_cursor_u64(&c), seq = hvt_cursor_u64(&c);
		uint64_t gen = hvt_cursor_u64(&c), t0 = hvt_cursor_u64(&c);

		if (off != e->offset || seq != e->seq || gen != e->generation || t0 != e->t_start_ns) {
			snprintf(why, whylen, "index entry for interval %zu does not match its record", i);
			return -EINVAL;
		}
	}
	if (r->size - rec->end != HVT_TRAILER_SIZE) {
		snprintf(why, whylen,
			 "index is not followed by a trailer at end of file (closing interrupted?)");
		return -EINVAL;
	}
	t = fetch(r, rec->end, HVT_TRAILER_SIZE, &rc);
	if (!t) {
		snprintf(why, whylen, "read error: %s", strerror(-rc));
		return rc;
	}
	memcpy(trailer, t, sizeof(trailer));
	memset(trailer + HVT_TRAILER_CRC_OFFSET, 0, 4);
	if (memcmp(t + 24, HVT_TRAILER_MAGIC, 8) ||
	    hvt_get_le32(t + HVT_TRAILER_CRC_OFFSET) != hvt_crc32c(0, trailer, sizeof(trailer)) ||
	    hvt_get_le32(t + 20) != 0 || hvt_get_le64(t) != rec->offset || hvt_get_le64(t + 8) != ni) {
		snprintf(why, whylen, "trailer is corrupt or does not point at this index");
		return -EINVAL;
	}
	return 0;
}

static void set_problem(struct hvt_trace_reader *r, uint64_t off, const char *why)
{
	snprintf(r->st.problem, sizeof(r->st.problem), "record at offset %llu: %s", (unsigned long long)off,
		 why);
}

/* Walks the records after META until the end, the INDEX, or the first one that is not sound. */
static int walk(struct hvt_trace_reader *r, uint64_t off)
{
	char why[200];
	struct record rec;
	int rc;

	for (;;) {
		r->st.valid_bytes = off;
		if (off == r->size) {
			snprintf(
			    r->st.problem, sizeof(r->st.problem),
			    "no index at end of file: the trace was not closed (writer killed?); %zu intervals recovered by scanning",
			    r->nintervals);
			return 0;
		}
		rc = read_record(r, off, &rec, why, sizeof(why));
		if (!rc) {
			switch (rec.type) {
			case HVT_REC_LAYOUT:
				rc = accept_layout(r, &rec, why, sizeof(why));
				break;
			case HVT_REC_INTERVAL:
				rc = accept_interval(r, &rec, why, sizeof(why));
				break;
			case HVT_REC_INDEX:
				rc = check_index(r, &rec, why, sizeof(why));
				if (!rc) {
					r->st.complete = true;
					r->st.valid_bytes = r->size;
					return 0;
				}
				break;
			case HVT_REC_OWNERS:
				rc = accept_owners(r, &rec, why, sizeof(why));
				break;
			case HVT_REC_META:
				snprintf(why, sizeof(why), "a second META record");
				rc = -EINVAL;
				break;
			default:
				/* optional: its frame and CRC are sound (read_record), and it is not ours */
				if (rec.type >= HVT_REC_OPTIONAL)
					break;
				snprintf(why, sizeof(why), "unknown record type %u", rec.type);
				rc = -EINVAL;
			}
		}
		if (rc == -ENOMEM)
			return rc;
		if (rc) {
			set_problem(r, off, why);
			return 0;
		}
		off = rec.end;
	}
}

static int open_fail(struct hvt_trace_reader *r, struct hvt_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int open_fail(struct hvt_trace_reader *r, struct hvt_err *err, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hvt_err_set(err, -EINVAL, "%s: %s", r->path, msg);
	hvt_trace_reader_close(r);
	return -EINVAL;
}

int hvt_trace_open(struct hvt_trace_reader **rp, const char *path, struct hvt_err *err)
{
	struct hvt_trace_reader *r;
	const uint8_t *hdr;
	struct json_object *meta;
	struct hvt_err merr = {{0}};
	struct record rec;
	struct stat sb;
	mode_t mode = 0;
	char why[200];
	uint32_t version, flags;
	int rc = 0;

	*rp = NULL;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path))) {
		free(r);
		return hvt_err_set(err, -ENOMEM, "%s: out of memory", path);
	}
	/* a FIFO would block in open() and a device might never end: only regular files are traces */
	r->fd = hvt_open_regular(path, &mode);
	if (r->fd == -EINVAL && mode)
		return open_fail(r, err, "not a trace: it is %s, not a regular file",
				 hvt_file_type_name(mode));
	if (r->fd < 0)
		return open_fail(r, err, "cannot open: %s", strerror(-r->fd));
	if (fstat(r->fd, &sb))
		return open_fail(r, err, "cannot stat: %s", strerror(errno));
	r->size = (uint64_t)sb.st_size;
	r->st.file_bytes = r->size;
	if (r->size == 0)
		return open_fail(r, err, "empty file, not a trace");
	if (r->size < HVT_FILE_HEADER_SIZE)
		return open_fail(r, err, "not a trace: %llu bytes is too short for the file header",
				 (unsigned long long)r->size);
	hdr = fetch(r, 0, HVT_FILE_HEADER_SIZE, &rc);
	if (!hdr)
		return open_fail(r, err, "read error: %s", strerror(-rc));
	if (memcmp(hdr, HVT_FILE_MAGIC, 8))
		return open_fail(r, err, "not a trace (no HVMTRACE magic)");
	version = hvt_get_le32(hdr + 8);
	flags = hvt_get_le32(hdr + 12);
	if (version != HVT_TRACE_VERSION)
		return open_fail(r, err, "trace format version %u; this reader knows version %d", version,
				 HVT_TRACE_VERSION);
	if (flags & HVT_FILE_FLAGS_MUST_KNOW)
		return open_fail(r, err, "trace needs features this reader lacks (flags 0x%x)", flags);

	rc = read_record(r, HVT_FILE_HEADER_SIZE, &rec, why, sizeof(why));
	if (rc)
		return open_fail(r, err, "no intact META record: %s", why);
	if (rec.type != HVT_REC_META)
		return open_fail(r, err, "no intact META record: the first record has type %u", rec.type);
	meta = parse_json(rec.payload, rec.length);
	if (!meta || !json_object_is_type(meta, json_type_object)) {
		json_object_put(meta);
		return open_fail(r, err, "no intact META record: its JSON is not an object");
	}
	rc = hvt_trace_meta_from_json(&r->meta, meta, &merr);
	json_object_put(meta);
	if (rc)
		return open_fail(r, err, "%s", merr.msg);

	rc = walk(r, rec.end);
	if (rc) {
		hvt_err_set(err, rc, "%s: out of memory", path);
		hvt_trace_reader_close(r);
		return rc;
	}
	r->st.intervals = r->nintervals;
	r->st.layouts = r->nlayouts;
	*rp = r;
	return 0;
}

void hvt_trace_reader_close(struct hvt_trace_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	hvt_trace_meta_fini(&r->meta);
	for (size_t i = 0; i < r->nlayouts; i++)
		hvt_layout_fini(&r->layouts[i].layout);
	free(r->layouts);
	free(r->intervals);
	free(r->owners);
	free(r->win);
	free(r->path);
	free(r);
}

void hvt_trace_get_status(const struct hvt_trace_reader *r, struct hvt_trace_status *st)
{
	*st = r->st;
}

const char *hvt_trace_path(const struct hvt_trace_reader *r)
{
	return r->path;
}

const struct hvt_trace_meta *hvt_trace_meta(const struct hvt_trace_reader *r)
{
	return &r->meta;
}

uint64_t hvt_trace_interval_count(const struct hvt_trace_reader *r)
{
	return r->nintervals;
}

const struct hvt_layout *hvt_trace_layout(const struct hvt_trace_reader *r, uint64_t generation)
{
	const struct layout_entry *e = find_layout(r, generation, NULL);

	return e ? &e->layout : NULL;
}

const struct hvt_layout *hvt_trace_layout_at(const struct hvt_trace_reader *r, uint64_t i)
{
	return i < r->nlayouts ? &r->layouts[i].layout : NULL;
}

/* What an interval holds must be what META says the trace can hold, and its channels META's channels. */
int hvt_trace_check_interval_meta(const struct hvt_trace_reader *r, const struct hvt_interval *iv,
				  struct hvt_err *err)
{
	const struct hvt_trace_meta *m = &r->meta;
	static const struct {
		uint32_t flag;
		const char *what;
		size_t available; /* offset of the META bool */
	} needs[] = {
	    {HVT_IV_WRITTEN, "written sets", offsetof(struct hvt_trace_meta, written_available)},
	    {HVT_IV_ACCESSED, "accessed sets", offsetof(struct hvt_trace_meta, accessed_available)},
	    {HVT_IV_BANDWIDTH, "bandwidth", offsetof(struct hvt_trace_meta, bandwidth_available)},
	};

	for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++)
		if ((iv->flags & needs[i].flag) && !*(const bool *)((const char *)m + needs[i].available))
			return hvt_err_set(err, -EINVAL, "field flags: %s, which META says the trace has not",
					   needs[i].what);
	for (uint32_t i = 0; i < iv->nchannels; i++)
		if (iv->channels[i].channel >= m->channels.n)
			return hvt_err_set(err, -EINVAL,
					   "channel entry %u: field channel: %u, but META lists %u channels",
					   i, iv->channels[i].channel, m->channels.n);
	return 0;
}

int hvt_trace_read_interval(struct hvt_trace_reader *r, uint64_t i, struct hvt_interval *iv,
			    struct hvt_err *err)
{
	struct hvt_iv_runs ir = {0};
	int rc;

	memset(iv, 0, sizeof(*iv));
	rc = hvt_trace_read_runs(r, i, &ir, err);
	if (!rc && (rc = hvt_interval_from_runs(iv, &ir, hvt_trace_layout(r, ir.hdr.generation), err)))
		hvt_trace_interval_err(r, i, rc, err);
	hvt_iv_runs_fini(&ir);
	return rc;
}

int hvt_trace_interval_err(const struct hvt_trace_reader *r, uint64_t i, int rc, struct hvt_err *err)
{
	return hvt_err_prefix(err, rc, "%s: interval %llu, record at offset %llu: ", r->path,
			      (unsigned long long)i, (unsigned long long)r->intervals[i].offset);
}

int hvt_trace_read_payload(struct hvt_trace_reader *r, uint64_t i, const uint8_t **payload, size_t *len,
			   const struct hvt_layout **layout, struct hvt_err *err)
{
	const struct interval_entry *e;
	struct record rec;
	char why[200];
	int rc = 0;

	if (i >= r->nintervals)
		return hvt_err_set(err, -EINVAL, "%s: no interval %llu (the trace has %zu)", r->path,
				   (unsigned long long)i, r->nintervals);
	e = &r->intervals[i];
	/* as hvt_trace_read_interval: the record afresh, its CRC checked again */
	r->win_len = 0;
	if (e->offset + HVT_REC_HEADER_SIZE + hvt_rec_padded(e->length) <= r->size &&
	    !fetch_ahead(r, e->offset, HVT_REC_HEADER_SIZE + (size_t)hvt_rec_padded(e->length), 0, &rc))
		snprintf(why, sizeof(why), "read error: %s", strerror(-rc));
	else
		rc = read_record(r, e->offset, &rec, why, sizeof(why));
	if (!rc && (rec.type != HVT_REC_INTERVAL || rec.length != e->length ||
		    hvt_get_le64(rec.payload) != e->seq || hvt_get_le64(rec.payload + 40) != e->generation)) {
		snprintf(why, sizeof(why), "record changed since the trace was opened");
		rc = -EINVAL;
	}
	if (rc)
		return hvt_err_set(err, rc, "%s: interval %llu, record at offset %llu: %s", r->path,
				   (unsigned long long)i, (unsigned long long)e->offset, why);
	*payload = rec.payload;
	*len = rec.length;
	*layout = &r->layouts[e->layout].layout;
	return 0;
}

uint64_t hvt_trace_owners_count(const struct hvt_trace_reader *r)
{
	return r->nowners;
}

const struct hvt_owners_info *hvt_trace_owners_at(const struct hvt_trace_reader *r, uint64_t i)
{
	return i < r->nowners ? &r->owners[i] : NULL;
}

int hvt_trace_read_owners(struct hvt_trace_reader *r, uint64_t i, uint8_t **data, struct hvt_err *err)
{
	const struct hvt_owners_info *o;
	struct record rec;
	char why[200];
	int rc;

	*data = NULL;
	if (i >= r->nowners)
		return hvt_err_set(err, -EINVAL, "%s: no owners record %llu (the trace has %zu)", r->path,
				   (unsigned long long)i, r->nowners);
	o = &r->owners[i];
	r->win_len = 0; /* the record afresh, its CRC checked again */
	rc = read_record(r, o->offset, &rec, why, sizeof(why));
	if (!rc && (rec.type != HVT_REC_OWNERS || rec.length != o->bytes + HVT_OWNERS_FIXED_SIZE ||
		    hvt_get_le64(rec.payload) != o->at_ns)) {
		snprintf(why, sizeof(why), "record changed since the trace was opened");
		rc = -EINVAL;
	}
	if (!rc && !(*data = malloc(o->bytes ? o->bytes : 1)))
		return hvt_err_set(err, -ENOMEM, "%s: out of memory", r->path);
	if (rc)
		return hvt_err_set(err, rc, "%s: owners record %llu at offset %llu: %s", r->path,
				   (unsigned long long)i, (unsigned long long)o->offset, why);
	memcpy(*data, rec.payload + HVT_OWNERS_FIXED_SIZE, o->bytes);
	return 0;
}
