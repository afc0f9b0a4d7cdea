// SPDX-License-Identifier: MIT
/*
 * Writes .hvt traces (docs/formats.md). Each record is assembled in memory and handed to the kernel with one
 * write(), so a writer killed at any moment leaves whole records and at most one torn one at the end. After
 * a failed or short write the writer refuses to add anything: a record appended after a torn one would be
 * unreachable anyway, and the caller must know the trace ends there.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hvmtrace/error.h"
#include "hvmtrace/files.h"
#include "hvmtrace/owners_format.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/trace_meta.h"
#include "trace_format.h"

struct interval_entry {
	uint64_t offset, seq, generation, t_start_ns;
};

struct layout_entry {
	uint64_t offset;
	struct hvt_layout layout; /* a copy, to check the intervals that use it */
};

struct hvt_trace_writer {
	int fd;
	char *path;
	uint64_t offset; /* where the next record goes */
	bool failed;
	struct layout_entry *layouts;
	size_t nlayouts;
	struct interval_entry *intervals;
	size_t nintervals, cap_intervals;
	uint64_t last_seq;
};

static void writer_free(struct hvt_trace_writer *w)
{
	for (size_t i = 0; i < w->nlayouts; i++)
		hvt_layout_fini(&w->layouts[i].layout);
	free(w->layouts);
	free(w->intervals);
	free(w->path);
	free(w);
}

/* One write() for the whole buffer; anything less is an error, never retried past the first byte. */
static int write_all_once(struct hvt_trace_writer *w, const void *buf, size_t len, struct hvt_err *err)
{
	ssize_t n;

	do
		n = write(w->fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		int e = errno;

		w->failed = true;
		return hvt_err_set(err, -e, "%s: write at offset %llu: %s", w->path,
				   (unsigned long long)w->offset, strerror(e));
	}
	if ((size_t)n != len) {
		w->failed = true;
		return hvt_err_set(err, -EIO, "%s: short write at offset %llu (%zd of %zu bytes; disk full?)",
				   w->path, (unsigned long long)w->offset, n, len);
	}
	w->offset += len;
	return 0;
}

/*
 * Completes a record whose payload sits in b after `start` + HVT_REC_HEADER_SIZE reserved bytes: pads it,
 * fills in the header and its CRC. Returns the record's size, or 0 if the payload is too large.
 */
static size_t finish_record(struct hvt_buf *b, size_t start, uint32_t type)
{
	size_t len = b->len - start - HVT_REC_HEADER_SIZE;
	uint8_t *hdr;

	if (len > HVT_REC_MAX_PAYLOAD || !hvt_buf_append(b, hvt_rec_padded(len) - len))
		return 0;
	hdr = b->p + start;
	hvt_put_le32(hdr, type);
	hvt_put_le32(hdr + 4, (uint32_t)len);
	hvt_put_le32(hdr + 12, 0);
	hvt_put_le32(hdr + HVT_REC_CRC_OFFSET, hvt_rec_crc(hdr, hdr + HVT_REC_HEADER_SIZE, len));
	return b->len - start;
}

static int append_text(struct hvt_buf *b, const char *text)
{
	size_t n = strlen(text);
	uint8_t *p = hvt_buf_append(b, n);

	if (!p)
		return -ENOMEM;
	memcpy(p, text, n);
	return 0;
}

/* Writes a record holding JSON text (META, LAYOUT). */
static int write_json_record(struct hvt_trace_writer *w, struct hvt_buf *b, size_t start, uint32_t type,
			     struct json_object *o, struct hvt_err *err)
{
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);

	if (!text || !hvt_buf_append(b, HVT_REC_HEADER_SIZE) || append_text(b, text))
		return hvt_err_set(err, -ENOMEM, "%s: out of memory", w->path);
	if (!finish_record(b, start, type))
		return hvt_err_set(err, -EFBIG, "%s: JSON of %zu bytes does not fit a record", w->path,
				   strlen(text));
	return write_all_once(w, b->p, b->len, err);
}

int hvt_trace_create(struct hvt_trace_writer **wp, const char *path, const struct hvt_trace_meta *meta,
		     struct hvt_err *err)
{
	struct hvt_trace_writer *w;
	struct hvt_trace_meta check;
	struct json_object *json;
	struct hvt_outfile out;
	struct hvt_buf b = {0};
	uint8_t *hdr;
	int rc;

	*wp = NULL;
	if (!meta)
		return hvt_err_set(err, -EINVAL, "%s: a trace needs its metadata", path);
	/* What the writer writes, its reader must take: the JSON goes through the reader's checks first. */
	json = hvt_trace_meta_to_json(meta);
	if (!json)
		return hvt_err_set(err, -ENOMEM, "%s: out of memory", path);
	rc = hvt_trace_meta_from_json(&check, json, err);
	hvt_trace_meta_fini(&check);
	if (rc) {
		json_object_put(json);
		if (rc == -ENOMEM) /* the check could not run: not the metadata's fault */
			return hvt_err_set(err, rc, "%s: out of memory", path);
		return hvt_err_prefix(err, rc,
				      "%s: refusing to write metadata a reader would refuse: ", path);
	}
	w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(path))) {
		free(w);
		json_object_put(json);
		return hvt_err_set(err, -ENOMEM, "%s: out of memory", path);
	}
	/*
	 * Like perf record, an existing trace at path is replaced, but only by a trace: the file is created
	 * under a temporary name in the same directory (0600: a trace shows what the guest touched), and
	 * renamed to path once its header and META are written. A writer killed before that leaves
	 * what was at path as it was, and a hidden temporary file; never an empty file where a trace was
	 * (docs/reliability.md). An existing non-regular file (/dev/null) is written in place.
	 */
	rc = hvt_outfile_open(&out, strcmp(path, "-") ? path : "./-", err);
	if (rc) {
		writer_free(w);
		json_object_put(json);
		return rc;
	}
	w->fd = fcntl(fileno(out.f), F_DUPFD_CLOEXEC, 0); /* outlives the FILE, which commit closes */
	if (w->fd < 0) {
		rc = hvt_err_set(err, -errno, "%s: cannot create: %s", path, strerror(errno));
		goto fail;
	}
	/* The file header and META go out in one write, so any trace that exists has both or neither. */
	hdr = hvt_buf_append(&b, HVT_FILE_HEADER_SIZE);
	if (!hdr) {
		rc = hvt_err_set(err, -ENOMEM, "%s: out of memory", path);
		goto fail;
	}
	memcpy(hdr, HVT_FILE_MAGIC, 8);
	hvt_put_le32(hdr + 8, HVT_TRACE_VERSION);
	hvt_put_le32(hdr + 12, 0);
	rc = write_json_record(w, &b, HVT_FILE_HEADER_SIZE, HVT_REC_META, json, err);
	if (rc)
		goto fail;
	rc = hvt_outfile_publish(&out, err); /* rename over path; the records go on through w->fd */
	if (rc) {
		close(w->fd);
		json_object_put(json);
		free(b.p);
		writer_free(w);
		return rc;
	}
	json_object_put(json);
	free(b.p);
	*wp = w;
	return 0;
fail:
	json_object_put(json);
	free(b.p);
	if (w->fd >= 0)
		close(w->fd);
	hvt_outfile_abort(&out);
	writer_free(w);
	return rc;
}

static const struct hvt_layout *find_layout(const struct hvt_trace_writer *w, uint64_t generation)
{
	for (size_t i = w->nlayouts; i-- > 0;)
		if (w->layouts[i].layout.generation == generation)
			return &w->layouts[i].layout;
	return NULL;
}

int hvt_trace_write_layout(struct hvt_trace_writer *w, const struct hvt_layout *l, struct hvt_err *err)
{
	struct json_object *o;
	struct layout_entry *grown, *e;
	struct hvt_buf b = {0};
	uint64_t offset = w->offset;
	int rc;

	if (w->failed)
		return hvt_err_set(err, -EIO, "%s: an earlier write failed; the trace ends there", w->path);
	if (w->nlayouts && l->generation <= w->layouts[w->nlayouts - 1].layout.generation)
		return hvt_err_set(err, -EINVAL, "%s: layout generation %llu does not follow %llu", w->path,
				   (unsigned long long)l->generation,
				   (unsigned long long)w->layouts[w->nlayouts - 1].layout.generation);
	rc = hvt_layout_validate(l, err);
	if (rc)
		return hvt_err_prefix(err, rc, "%s: layout generation %llu: ", w->path,
				      (unsigned long long)l->generation);
	grown = realloc(w->layouts, (w->nlayouts + 1) * sizeof(*grown));
	if (!grown)
		return hvt_err_set(err, -ENOMEM, "%s: out of memory", w->path);
	w->layouts = grown;
	e = &w->layouts[w->nlayouts];
	if (hvt_layout_copy(&e->layout, l))
		return hvt_err_set(err, -ENOMEM, "%s: out of memory", w->path);
	o = hvt_layout_to_json(l);
	rc = o ? write_json_record(w, &b, 0, HVT_REC_LAYOUT, o, err)
	       : hvt_err_set(err, -ENOMEM, "%s: out of memory", w->path);
	json_object_put(o);
	free(b.p);
	if (rc) {
		hvt_layout_fini(&e->layout);
		return rc;
	}
	e->offset = offset;
	w->nlayouts++;
	return 0;
}

int hvt_trace_write_interval(struct hvt_trace_writer *w, const struct hvt_interval *iv, struct hvt_err *err)
{
	const struct hvt_layout *l;
	struct hvt_buf b = {0};
	uint64_t offset = w->offset;
	int rc;

	if (w->failed)
		return hvt_err_set(err, -EIO, "%s: an earlier write failed; the trace ends there", w->path);
	l = find_layout(w, iv->generation);
	if (!l)
		return hvt_err_set(err, -EINVAL, "%s: interval %llu: layout generation %llu was not written",
				   w->path, (unsigned long long)iv->seq, (unsigned long long)iv->generation);
	if (iv->seq <= w->last_seq)
		return hvt_err_set(err, -EINVAL, "%s: interval %llu does not follow interval %llu", w->path,
				   (unsigned long long)iv->seq, (unsigned long long)w->last_seq);
	if (w->nintervals == w->cap_intervals) {
		size_t cap = w->cap_intervals ? w->cap_intervals * 2 : 1024;
		struct interval_entry *grown = realloc(w->intervals, cap * sizeof(*grown));

		if (!grown)
			return hvt_err_set(err, -ENOMEM, "%s: out of memory", w->path);
		w->intervals = grown;
		w->cap_intervals = cap;
	}
	/* one allocation for the whole record, the sets encoded into it (record's budget counts this) */
	if (hvt_buf_reserve(&b, HVT_REC_HEADER_SIZE + hvt_interval_bound(iv)) ||
	    !hvt_buf_append(&b, HVT_REC_HEADER_SIZE)) {
		rc = hvt_err_set(err, -ENOMEM, "%s: out of memory", w->path);
	} else {
		rc = hvt_interval_encode(iv, l, &b, err);
		if (rc)
			hvt_err_prefix(err, rc, "%s: interval %llu: ", w->path, (unsigned long long)iv->seq);
		else if (!finish_record(&b, 0, HVT_REC_INTERVAL))
			rc = hvt_err_set(err, -EFBIG, "%s: interval %llu: %zu bytes do not fit a record",
					 w->path, (unsigned long long)iv->seq, b.len);
		else
			rc = write_all_once(w, b.p, b.len, err);
	}
	free(b.p);
	if (rc)
		return rc;
	w->intervals[w->nintervals++] =
	    (struct interval_entry){offset, iv->seq, iv->generation, iv->t_start_ns};
	w->last_seq = iv->seq;
	return 0;
}

/* The frame of a snapshot as an OWNERS record carries it: its magic, and a body that fills exactly len. */
static bool owners_frame_ok(const uint8_t *snap, size_t len)
{
	return len >= HVT_OWN_HEADER_BYTES && len - HVT_OWN_HEADER_BYTES <= HVT_OWN_MAX_BODY &&
	       !memcmp(snap, HVT_OWN_MAGIC, 8) && hvt_get_le64(snap + 32) == len - HVT_OWN_HEADER_BYTES;
}

int hvt_trace_write_owners(struct hvt_trace_writer *w, uint64_t at_ns, const void *snapshot, size_t len,
			   struct hvt_err *err)
{
	size_t payload = HVT_OWNERS_FIXED_SIZE + len, total;
	struct hvt_buf b = {0};
	uint8_t *p;
	int rc;

	if (w->failed)
		return hvt_err_set(err, -EIO, "%s: an earlier write failed; the trace ends there", w->path);
	if (!owners_frame_ok(snapshot, len))
		return hvt_err_set(
		    err, -EINVAL,
		    "%s: owners record: %zu bytes that are not one snapshot (magic %s, a body of "
		    "body_bytes, at most %u)",
		    w->path, len, HVT_OWN_MAGIC, HVT_OWN_MAX_BODY);
	/* sized exactly: a snapshot can be megabytes, and record counts this buffer in its budget */
	total = HVT_REC_HEADER_SIZE + (size_t)hvt_rec_padded(payload);
	b.p = malloc(total);
	if (!b.p)
		return hvt_err_set(err, -ENOMEM, "%s: out of memory", w->path);
	b.cap = total;
	p = hvt_buf_append(&b, HVT_REC_HEADER_SIZE + payload);
	hvt_put_le64(p + HVT_REC_HEADER_SIZE, at_ns);
	hvt_put_le64(p + HVT_REC_HEADER_SIZE + 8, w->nintervals ? w->last_seq : HVT_OWNERS_NONE_BEFORE);
	memcpy(p + HVT_REC_HEADER_SIZE + HVT_OWNERS_FIXED_SIZE, snapshot, len);
	if (!finish_record(&b, 0, HVT_REC_OWNERS))
		rc = hvt_err_set(err, -EFBIG, "%s: owners record of %zu bytes does not fit a record", w->path,
				 payload);
	else
		rc = write_all_once(w, b.p, b.len, err);
	free(b.p);
	return rc;
}

/* INDEX record and trailer, assembled together: they reach the file in one write. */
static int build_index(const struct hvt_trace_writer *w, struct hvt_buf *b)
{
	size_t payload = HVT_INDEX_HEADER_SIZE + w->nlayouts * HVT_INDEX_LAYOUT_SIZE +
			 w->nintervals * HVT_INDEX_INTERVAL_SIZE;
	uint8_t *p, *t;

	if (payload > HVT_REC_MAX_PAYLOAD)
		return -EFBIG;
	if (!hvt_buf_append(b, HVT_REC_HEADER_SIZE) || !(p = hvt_buf_append(b, payload)))
		return -ENOMEM;
	hvt_put_le64(p, w->nlayouts);
	hvt_put_le64(p + 8, w->nintervals);
	p += HVT_INDEX_HEADER_SIZE;
	for (size_t i = 0; i < w->nlayouts; i++, p += HVT_INDEX_LAYOUT_SIZE) {
		hvt_put_le64(p, w->layouts[i].offset);
		hvt_put_le64(p + 8, w->layouts[i].layout.generation);
	}
	for (size_t i = 0; i < w->nintervals; i++, p += HVT_INDEX_INTERVAL_SIZE) {
		hvt_put_le64(p, w->intervals[i].offset);
		hvt_put_le64(p + 8, w->intervals[i].seq);
		hvt_put_le64(p + 16, w->intervals[i].generation);
		hvt_put_le64(p + 24, w->intervals[i].t_start_ns);
	}
	if (!finish_record(b, 0, HVT_REC_INDEX) || !(t = hvt_buf_append(b, HVT_TRAILER_SIZE)))
		return -ENOMEM;
	hvt_put_le64(t, w->offset);
	hvt_put_le64(t + 8, w->nintervals);
	memcpy(t + 24, HVT_TRAILER_MAGIC, 8);
	hvt_put_le32(t + HVT_TRAILER_CRC_OFFSET, hvt_crc32c(0, t, HVT_TRAILER_SIZE));
	return 0;
}

int hvt_trace_close(struct hvt_trace_writer *w, struct hvt_err *err)
{
	struct hvt_buf b = {0};
	int rc = 0;

	if (!w)
		return 0;
	if (w->failed) {
		rc = hvt_err_set(err, -EIO, "%s: not closed cleanly: an earlier write failed", w->path);
	} else {
		rc = build_index(w, &b);
		if (rc == -EFBIG)
			hvt_err_set(
			    err, rc,
			    "%s: the index of %zu intervals does not fit a record; the trace is readable by scanning",
			    w->path, w->nintervals);
		else if (rc)
			hvt_err_set(err, rc, "%s: out of memory for the index", w->path);
		else
			rc = write_all_once(w, b.p, b.len, err);
		free(b.p);
	}
	/* Flush what was written, whatever happened to the index: the intervals are worth keeping. */
	if (fdatasync(w->fd) && !rc)
		rc = hvt_err_set(err, -errno, "%s: fdatasync: %s", w->path, strerror(errno));
	if (close(w->fd) && !rc)
		rc = hvt_err_set(err, -errno, "%s: close: %s", w->path, strerror(errno));
	writer_free(w);
	return rc;
}

void hvt_trace_abandon(struct hvt_trace_writer *w)
{
	if (!w)
		return;
	close(w->fd);
	writer_free(w);
}
