// SPDX-License-Identifier: MIT
/* The snapshot's encoding (include/hvmtrace/owners_format.h, docs/attribution.md): little-endian fields,
 * runs as LEB128 pairs (gap since the previous run's end, length - 1). */
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "hvmtrace/owners_format.h"

int pfn_runs_add(struct pfn_runs *r, uint64_t pfn)
{
	if (r->n && r->v[r->n - 1].first + r->v[r->n - 1].count == pfn) {
		r->v[r->n - 1].count++;
		return 0;
	}
	if (r->n && r->v[r->n - 1].first + r->v[r->n - 1].count > pfn)
		return 0; /* already there (a page mapped twice) */
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 256;
		struct pfn_run *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -1;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = (struct pfn_run){pfn, 1};
	return 0;
}

void pfn_runs_free(struct pfn_runs *r)
{
	free(r->v);
	memset(r, 0, sizeof(*r));
}

void obuf_put(struct obuf *b, const void *p, size_t n)
{
	if (b->fail)
		return;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		uint8_t *q;

		while (cap < b->n + n)
			cap *= 2;
		q = realloc(b->p, cap);
		if (!q) {
			b->fail = true;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void put_le(struct obuf *b, uint64_t v, int bytes)
{
	uint8_t x[8];

	for (int i = 0; i < bytes; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	obuf_put(b, x, (size_t)bytes);
}

void obuf_u8(struct obuf *b, uint8_t v)
{
	put_le(b, v, 1);
}
void obuf_u16(struct obuf *b, uint16_t v)
{
	put_le(b, v, 2);
}
void obuf_u32(struct obuf *b, uint32_t v)
{
	put_le(b, v, 4);
}
void obuf_u64(struct obuf *b, uint64_t v)
{
	put_le(b, v, 8);
}

static void patch_le(struct obuf *b, size_t at, uint64_t v, int bytes)
{
	if (b->fail)
		return;
	for (int i = 0; i < bytes; i++)
		b->p[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

void obuf_patch_u32(struct obuf *b, size_t at, uint32_t v)
{
	patch_le(b, at, v, 4);
}
void obuf_patch_u64(struct obuf *b, size_t at, uint64_t v)
{
	patch_le(b, at, v, 8);
}

static void put_varint(struct obuf *b, uint64_t v)
{
	uint8_t x[10];
	size_t n = 0;

	do {
		x[n] = v & 0x7f;
		v >>= 7;
		if (v)
			x[n] |= 0x80;
		n++;
	} while (v);
	obuf_put(b, x, n);
}

/* header: magic[8] u16 version u16 flags u32 page_size u32 nowners u32 reserved u64 time_ns u64 body_bytes */
void snapshot_begin(struct obuf *b, uint32_t page_size, uint64_t time_ns)
{
	b->n = 0;
	obuf_put(b, HVT_OWN_MAGIC, 8);
	obuf_u16(b, HVT_OWN_VERSION);
	obuf_u16(b, 0);
	obuf_u32(b, page_size);
	obuf_u32(b, 0);
	obuf_u32(b, 0);
	obuf_u64(b, time_ns);
	obuf_u64(b, 0);
}

void snapshot_end(struct obuf *b, uint32_t nowners, uint16_t flags)
{
	if (b->fail)
		return;
	b->p[10] = (uint8_t)flags;
	b->p[11] = (uint8_t)(flags >> 8);
	obuf_patch_u32(b, 16, nowners);
	obuf_patch_u64(b, 32, b->n - HVT_OWN_HEADER_BYTES);
}

/* Text as the format takes it: bytes outside printable ASCII (UTF-8 names, control bytes) become '?'. */
static void put_text(struct obuf *b, const char *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t c = (uint8_t)t[i];

		obuf_u8(b, c >= 0x20 && c <= 0x7e ? c : '?');
	}
}

/* owner: u8 type u8 kind u16 flags u32 pid u16 name_len u16 cgroup_len u32 nruns u32 runs_bytes, name,
 * cgroup, runs */
void snapshot_owner(struct obuf *b, uint8_t type, uint8_t kind, uint16_t flags, uint32_t pid,
		    const char *name, const char *cgroup, const struct pfn_runs *runs)
{
	size_t nl = strlen(name), cl = strlen(cgroup), at, start;
	uint64_t end = 0;

	nl = nl > HVT_OWN_MAX_NAME ? HVT_OWN_MAX_NAME : nl;
	cl = cl > HVT_OWN_MAX_CGROUP ? HVT_OWN_MAX_CGROUP : cl;
	obuf_u8(b, type);
	obuf_u8(b, kind);
	obuf_u16(b, flags);
	obuf_u32(b, pid);
	obuf_u16(b, (uint16_t)nl);
	obuf_u16(b, (uint16_t)cl);
	obuf_u32(b, (uint32_t)runs->n);
	at = b->n;
	obuf_u32(b, 0);
	put_text(b, name, nl);
	put_text(b, cgroup, cl);
	start = b->n;
	for (size_t i = 0; i < runs->n; i++) {
		put_varint(b, runs->v[i].first - end);
		put_varint(b, runs->v[i].count - 1);
		end = runs->v[i].first + runs->v[i].count;
	}
	obuf_patch_u32(b, at, (uint32_t)(b->n - start));
}
