// SPDX-License-Identifier: MIT
/* The owners snapshot reader (owners_snapshot.h): bounds first, allocation after. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "attribute/owners_snapshot.h"
#include "hvmtrace/util.h"

/* The largest file owners_read takes: a few snapshots at the limit. */
#define OWNERS_FILE_MAX (1ull << 30)

static const char *const kind_names[HVT_KIND_MAX + 1] = {
    [HVT_KIND_FREE] = "free", [HVT_KIND_SLAB] = "slab",   [HVT_KIND_PGTABLE] = "pagetable",
    [HVT_KIND_ANON] = "anon", [HVT_KIND_CACHE] = "cache", [HVT_KIND_OTHER] = "other",
};

const char *owners_kind_name(unsigned kind)
{
	return kind >= 1 && kind <= HVT_KIND_MAX ? kind_names[kind] : "?";
}

/* A cursor over [p, end): reads fail (false) rather than pass end. */
struct cur {
	const uint8_t *p, *end;
};

static bool get_le(struct cur *c, size_t bytes, uint64_t *v)
{
	if ((size_t)(c->end - c->p) < bytes)
		return false;
	*v = 0;
	for (size_t i = 0; i < bytes; i++)
		*v |= (uint64_t)c->p[i] << (8 * i);
	c->p += bytes;
	return true;
}

/* LEB128, at most 64 bits. */
static bool get_varint(struct cur *c, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (c->p == c->end)
			return false;
		b = *c->p++;
		if (shift == 63 && b > 1)
			return false;
		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* A copy of n bytes of printable ASCII, or NULL (*bad set when a byte is not). */
static char *get_text(struct cur *c, size_t n, bool *bad)
{
	char *t;

	for (size_t i = 0; i < n; i++)
		if (c->p[i] < 0x20 || c->p[i] > 0x7e) {
			*bad = true;
			return NULL;
		}
	t = malloc(n + 1);
	if (!t)
		return NULL;
	memcpy(t, c->p, n);
	t[n] = 0;
	c->p += n;
	return t;
}

void owners_free(struct owners_snapshot *s)
{
	for (size_t i = 0; i < s->nowners; i++) {
		free(s->owners[i].name);
		free(s->owners[i].cgroup);
	}
	free(s->owners);
	free(s->runs);
	memset(s, 0, sizeof(*s));
}

/* The runs of owner o: nruns pairs in exactly runs_bytes. */
static int parse_runs(const char *name, size_t own, struct cur *c, uint64_t runs_bytes,
		      struct owners_snapshot *s, struct owner *o, struct hvt_err *err)
{
	struct cur r = {c->p, c->p + runs_bytes};
	uint64_t end = 0;

	for (size_t i = 0; i < o->nruns; i++) {
		uint64_t gap, len1;

		if (!get_varint(&r, &gap) || !get_varint(&r, &len1))
			return hvt_err_set(err, -EINVAL,
					   "%s: owner %zu: run %zu is cut short or not a varint", name, own,
					   i);
		if (i && !gap)
			return hvt_err_set(err, -EINVAL,
					   "%s: owner %zu: run %zu touches the one before (runs are apart)",
					   name, own, i);
		if (gap >= HVT_OWN_MAX_PFN_END - end || len1 >= HVT_OWN_MAX_PFN_END - end - gap)
			return hvt_err_set(
			    err, -EINVAL,
			    "%s: owner %zu: run %zu ends past PFN 2^40 (52-bit guest-physical addresses)",
			    name, own, i);
		s->runs[s->nruns++] = (struct hvt_run){end + gap, len1 + 1};
		end += gap + len1 + 1;
		o->pages += len1 + 1;
	}
	if (r.p != r.end)
		return hvt_err_set(err, -EINVAL, "%s: owner %zu: %zu bytes after its %zu runs", name, own,
				   (size_t)(r.end - r.p), o->nruns);
	c->p = r.end;
	return 0;
}

static int parse_owner(const char *name, size_t own, struct cur *c, struct owners_snapshot *s,
		       bool *kind_seen, struct hvt_err *err)
{
	struct owner *o = &s->owners[own];
	uint64_t type, kind, flags, pid, nl, cl, nruns, rb;
	bool bad = false;

	if (!get_le(c, 1, &type) || !get_le(c, 1, &kind) || !get_le(c, 2, &flags) || !get_le(c, 4, &pid) ||
	    !get_le(c, 2, &nl) || !get_le(c, 2, &cl) || !get_le(c, 4, &nruns) || !get_le(c, 4, &rb))
		return hvt_err_set(err, -EINVAL, "%s: owner %zu: cut short in its %d fixed bytes", name, own,
				   HVT_OWN_OWNER_BYTES);
	if (type != HVT_OWN_PROCESS && type != HVT_OWN_KIND)
		return hvt_err_set(err, -EINVAL, "%s: owner %zu: type %" PRIu64 " (1 process, 2 kind)", name,
				   own, type);
	if (type == HVT_OWN_KIND && (kind < 1 || kind > HVT_KIND_MAX || pid || flags))
		return hvt_err_set(err, -EINVAL,
				   "%s: owner %zu: a kind owner with kind %" PRIu64 " (1 to %d), pid %" PRIu64
				   " and flags %#" PRIx64 " (both 0)",
				   name, own, kind, HVT_KIND_MAX, pid, flags);
	if (type == HVT_OWN_KIND && kind_seen[kind])
		return hvt_err_set(err, -EINVAL, "%s: owner %zu: kind %s a second time", name, own,
				   owners_kind_name((unsigned)kind));
	if (type == HVT_OWN_PROCESS && (kind || (flags & ~(uint64_t)HVT_OWN_PARTIAL)))
		return hvt_err_set(err, -EINVAL,
				   "%s: owner %zu: a process with kind %" PRIu64 " (0) or flags %#" PRIx64
				   " (known: %#x)",
				   name, own, kind, flags, HVT_OWN_PARTIAL);
	if (nl > HVT_OWN_MAX_NAME || cl > HVT_OWN_MAX_CGROUP)
		return hvt_err_set(err, -EINVAL,
				   "%s: owner %zu: name of %" PRIu64 " bytes or cgroup of %" PRIu64
				   " (limits %u, %u)",
				   name, own, nl, cl, HVT_OWN_MAX_NAME, HVT_OWN_MAX_CGROUP);
	if (nl + cl + rb > (uint64_t)(c->end - c->p))
		return hvt_err_set(err, -EINVAL,
				   "%s: owner %zu: its name, cgroup and %" PRIu64
				   " bytes of runs pass the snapshot's end",
				   name, own, rb);
	if (nruns > HVT_OWN_MAX_RUNS - s->nruns || nruns * 2 > rb)
		return hvt_err_set(err, -EINVAL,
				   "%s: owner %zu: %" PRIu64 " runs in %" PRIu64
				   " bytes (at least 2 bytes each, %u runs in all)",
				   name, own, nruns, rb, HVT_OWN_MAX_RUNS);
	*o = (struct owner){.type = (uint8_t)type,
			    .kind = (uint8_t)kind,
			    .flags = (uint16_t)flags,
			    .pid = (uint32_t)pid,
			    .first_run = s->nruns,
			    .nruns = nruns};
	o->name = get_text(c, nl, &bad);
	o->cgroup = o->name ? get_text(c, cl, &bad) : NULL;
	s->nowners = own + 1; /* owners_free frees what is there */
	if (bad)
		return hvt_err_set(err, -EINVAL,
				   "%s: owner %zu: a byte of its name or cgroup is not printable ASCII", name,
				   own);
	if (!o->name || !o->cgroup)
		return hvt_err_set(err, -ENOMEM, "%s: out of memory", name);
	if (type == HVT_OWN_KIND)
		kind_seen[kind] = true;
	else
		s->nprocesses++;
	return parse_runs(name, own, c, rb, s, o, err);
}

static int cmp_run(const void *a, const void *b)
{
	const struct hvt_run *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

static int cmp_pid(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* A page has one kind, a pid one owner. */
static int check_unique(const char *name, const struct owners_snapshot *s, struct hvt_err *err)
{
	size_t nk = 0, np = 0;
	struct hvt_run *k = malloc((s->nruns + 1) * sizeof(*k));
	uint32_t *pids = malloc((s->nowners + 1) * sizeof(*pids));
	int rc = 0;

	if (!k || !pids) {
		rc = hvt_err_set(err, -ENOMEM, "%s: out of memory", name);
		goto out;
	}
	for (size_t i = 0; i < s->nowners; i++) {
		const struct owner *o = &s->owners[i];

		if (o->type == HVT_OWN_PROCESS) {
			pids[np++] = o->pid;
			continue;
		}
		memcpy(k + nk, s->runs + o->first_run, o->nruns * sizeof(*k));
		nk += o->nruns;
	}
	qsort(k, nk, sizeof(*k), cmp_run);
	for (size_t i = 1; i < nk; i++)
		if (k[i - 1].first + k[i - 1].count > k[i].first) {
			rc = hvt_err_set(err, -EINVAL, "%s: two kinds claim PFN %#" PRIx64, name, k[i].first);
			goto out;
		}
	qsort(pids, np, sizeof(*pids), cmp_pid);
	for (size_t i = 1; i < np; i++)
		if (pids[i - 1] == pids[i]) {
			rc = hvt_err_set(err, -EINVAL, "%s: pid %" PRIu32 " is two owners", name, pids[i]);
			goto out;
		}
out:
	free(k);
	free(pids);
	return rc;
}

int owners_parse(const char *name, const uint8_t *data, size_t size, size_t *used, struct owners_snapshot *s,
		 struct hvt_err *err)
{
	struct cur c = {data, data + size};
	uint64_t version = 0, flags = 0, page_size = 0, nowners = 0, reserved = 0, time_ns = 0, body = 0;
	bool kind_seen[HVT_KIND_MAX + 1] = {false};
	int rc;

	memset(s, 0, sizeof(*s));
	if (size < HVT_OWN_HEADER_BYTES || memcmp(data, HVT_OWN_MAGIC, 8))
		return hvt_err_set(err, -EINVAL, "%s: not an owners snapshot (no %s header of %d bytes)",
				   name, HVT_OWN_MAGIC, HVT_OWN_HEADER_BYTES);
	c.p += 8;
	get_le(&c, 2, &version);
	get_le(&c, 2, &flags);
	get_le(&c, 4, &page_size);
	get_le(&c, 4, &nowners);
	get_le(&c, 4, &reserved);
	get_le(&c, 8, &time_ns);
	get_le(&c, 8, &body);
	if (version != HVT_OWN_VERSION)
		return hvt_err_set(err, -EINVAL, "%s: version %" PRIu64 " (this reader knows %d)", name,
				   version, HVT_OWN_VERSION);
	if ((flags & ~(uint64_t)HVT_OWN_TRUNCATED) || reserved)
		return hvt_err_set(err, -EINVAL, "%s: unknown flags %#" PRIx64 " or reserved field %" PRIu64,
				   name, flags, reserved);
	if (page_size < HVT_OWN_MIN_PAGE || page_size > HVT_OWN_MAX_PAGE || (page_size & (page_size - 1)))
		return hvt_err_set(err, -EINVAL, "%s: page size %" PRIu64 " (a power of two, %u to %u)", name,
				   page_size, HVT_OWN_MIN_PAGE, HVT_OWN_MAX_PAGE);
	if (body > HVT_OWN_MAX_BODY || body > size - HVT_OWN_HEADER_BYTES)
		return hvt_err_set(err, -EINVAL, "%s: a body of %" PRIu64 " bytes, %zu there (limit %u)",
				   name, body, size - HVT_OWN_HEADER_BYTES, HVT_OWN_MAX_BODY);
	if (nowners > HVT_OWN_MAX_OWNERS || nowners * HVT_OWN_OWNER_BYTES > body)
		return hvt_err_set(err, -EINVAL,
				   "%s: %" PRIu64 " owners in %" PRIu64 " bytes (%d bytes each, limit %u)",
				   name, nowners, body, HVT_OWN_OWNER_BYTES, HVT_OWN_MAX_OWNERS);
	c.end = c.p + body;
	s->page_size = (uint32_t)page_size;
	s->flags = (uint16_t)flags;
	s->time_ns = time_ns;
	/* every run takes at least 2 bytes of the body: the allocation is bounded by what is there, and the
	 * limit */
	s->owners = calloc(nowners + 1, sizeof(*s->owners));
	s->runs =
	    malloc(((body / 2 < HVT_OWN_MAX_RUNS ? body / 2 : HVT_OWN_MAX_RUNS) + 1) * sizeof(*s->runs));
	if (!s->owners || !s->runs) {
		owners_free(s);
		return hvt_err_set(err, -ENOMEM, "%s: out of memory", name);
	}
	for (size_t i = 0; i < nowners; i++) {
		rc = parse_owner(name, i, &c, s, kind_seen, err);
		if (rc) {
			owners_free(s);
			return rc;
		}
	}
	if (c.p != c.end) {
		owners_free(s);
		return hvt_err_set(err, -EINVAL, "%s: %zu bytes after its %" PRIu64 " owners", name,
				   (size_t)(c.end - c.p), nowners);
	}
	rc = check_unique(name, s, err);
	if (rc) {
		owners_free(s);
		return rc;
	}
	*used = HVT_OWN_HEADER_BYTES + body;
	return 0;
}

/* malloc's overhead per block, rounded up (glibc: 8 bytes of header, 16-byte alignment) */
#define MALLOC_OVERHEAD 32

uint64_t owners_parse_peak_bytes(uint64_t body)
{
	uint64_t owners =
	    body / HVT_OWN_OWNER_BYTES < HVT_OWN_MAX_OWNERS ? body / HVT_OWN_OWNER_BYTES : HVT_OWN_MAX_OWNERS;
	uint64_t runs = (body / 2 < HVT_OWN_MAX_RUNS ? body / 2 : HVT_OWN_MAX_RUNS) + 1;

	/* the owners and their names and cgroups (two blocks each, their bytes from the body); the runs, and
	 * check_unique's copy of them and the pids */
	return (owners + 1) * sizeof(struct owner) + body + 2 * owners * MALLOC_OVERHEAD +
	       2 * runs * sizeof(struct hvt_run) + (owners + 1) * sizeof(uint32_t) + 4 * MALLOC_OVERHEAD;
}

int owners_read(const char *path, size_t index, struct owners_snapshot *s, size_t *count, struct hvt_err *err)
{
	char *data, name[300];
	size_t len, at = 0, n = 0;
	int rc = hvt_read_file(path, "owners snapshot", OWNERS_FILE_MAX, &data, &len, err);

	memset(s, 0, sizeof(*s));
	if (rc)
		return rc;
	if (!len) {
		free(data);
		return hvt_err_set(err, -EINVAL, "%s: empty (no snapshot)", path);
	}
	while (at < len) {
		struct owners_snapshot one;
		size_t used;

		snprintf(name, sizeof(name), "%s: snapshot %zu (byte %zu)", path, n, at);
		rc = owners_parse(name, (const uint8_t *)data + at, len - at, &used, &one, err);
		if (rc) {
			owners_free(s);
			free(data);
			return rc;
		}
		if (n == index)
			*s = one;
		else
			owners_free(&one);
		at += used;
		n++;
	}
	free(data);
	if (count)
		*count = n;
	if (index >= n)
		return hvt_err_set(err, -EINVAL, "%s: no snapshot %zu (it holds %zu)", path, index, n);
	return 0;
}
