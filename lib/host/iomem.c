// SPDX-License-Identifier: MIT
/* /proc/iomem: parsing, and the rules an extent must meet to be mapped through /dev/mem. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/iomem.h"
#include "hvmtrace/util.h"

#define PAGE      4096ull
#define MAX_DEPTH 32

static int parse_line(const char *line, size_t len, struct hvt_iomem_entry *out)
{
	size_t sp = 0;
	while (sp < len && line[sp] == ' ')
		sp++;
	char buf[256];
	if (len - sp >= sizeof(buf))
		return -1;
	memcpy(buf, line + sp, len - sp);
	buf[len - sp] = '\0';
	unsigned long long s, e;
	int name_at = -1;
	if (sscanf(buf, "%llx-%llx : %n", &s, &e, &name_at) != 2 || name_at < 0 || e < s || sp % 2)
		return -1;
	out->start = s;
	out->end = e;
	out->depth = (unsigned)(sp / 2);
	snprintf(out->name, sizeof(out->name), "%s", buf + name_at);
	return 0;
}

int hvt_iomem_parse(const char *text, const char *name, struct hvt_iomem *io, struct hvt_err *e)
{
	int stack[MAX_DEPTH];
	unsigned lineno = 0;
	bool all_zero = true;

	memset(io, 0, sizeof(*io));
	snprintf(io->source, sizeof(io->source), "%s", name);
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		struct hvt_iomem_entry ent;

		lineno++;
		if (len == 0) {
			p += nl ? 1 : 0;
			if (!nl)
				break;
			continue;
		}
		if (parse_line(p, len, &ent) || ent.depth >= MAX_DEPTH ||
		    (ent.depth > 0 && (io->n == 0 || ent.depth > io->entries[io->n - 1].depth + 1))) {
			hvt_iomem_free(io);
			return hvt_err_set(
			    e, -EINVAL,
			    "%s line %u is not a /proc/iomem line (\"  start-end : name\", two spaces of indent per level): '%.*s'",
			    name, lineno, (int)(len > 80 ? 80 : len), p);
		}
		ent.parent = ent.depth ? stack[ent.depth - 1] : -1;
		stack[ent.depth] = (int)io->n;
		if (ent.start || ent.end)
			all_zero = false;
		struct hvt_iomem_entry *n = realloc(io->entries, (io->n + 1) * sizeof(*n));
		if (!n) {
			hvt_iomem_free(io);
			return hvt_err_set(e, -ENOMEM, "out of memory");
		}
		io->entries = n;
		n[io->n++] = ent;
		p += len + (nl ? 1 : 0);
	}
	if (io->n == 0) {
		hvt_iomem_free(io);
		return hvt_err_set(e, -EINVAL, "%s lists no resources", name);
	}
	io->hidden = all_zero;
	return 0;
}

int hvt_iomem_read(const char *path, struct hvt_iomem *io, struct hvt_err *e)
{
	if (!path)
		path = HVT_IOMEM_PATH;
	char *text;
	int rc = hvt_read_file(path, NULL, HVT_IOMEM_MAX_BYTES, &text, NULL, e);

	if (rc)
		return rc;
	rc = hvt_iomem_parse(text, path, io, e);
	free(text);
	return rc;
}

void hvt_iomem_free(struct hvt_iomem *io)
{
	free(io->entries);
	io->entries = NULL;
	io->n = 0;
}

int hvt_iomem_find(const struct hvt_iomem *io, uint64_t addr)
{
	int best = -1;
	for (size_t i = 0; i < io->n; i++)
		if (io->entries[i].start <= addr && addr <= io->entries[i].end &&
		    (best < 0 || io->entries[i].depth > io->entries[best].depth))
			best = (int)i;
	return best;
}

static bool is_ram(const struct hvt_iomem_entry *x)
{
	return !strncmp(x->name, "System RAM", 10);
}

static bool overlaps(const struct hvt_iomem_entry *x, uint64_t first, uint64_t last)
{
	return x->start <= last && first <= x->end;
}

/* Whether entry i lies under entry anc. */
static bool descends(const struct hvt_iomem *io, size_t i, int anc)
{
	for (int p = io->entries[i].parent; p >= 0; p = io->entries[p].parent)
		if (p == anc)
			return true;
	return false;
}

int hvt_iomem_check_extent(const struct hvt_iomem *io, uint64_t start, uint64_t size, struct hvt_err *e)
{
	uint64_t last = start + size - 1;

	if (size == 0 || start % PAGE || size % PAGE || last < start)
		return hvt_err_set(e, -EINVAL,
				   "extent 0x%" PRIx64 "+0x%" PRIx64 " is empty or not 4 KiB aligned", start,
				   size);
	if (io->hidden)
		return hvt_err_set(
		    e, -EPERM, "%s shows every address as 0: reading it needs CAP_SYS_ADMIN (run as root)",
		    io->source);
	for (size_t i = 0; i < io->n; i++)
		if (is_ram(&io->entries[i]) && overlaps(&io->entries[i], start, last))
			return hvt_err_set(
			    e, -ERANGE,
			    "extent 0x%" PRIx64 "-0x%" PRIx64 " overlaps System RAM %" PRIx64 "-%" PRIx64
			    " in %s: it is not reserved (boot with the memmap= argument from chanmap reserve)",
			    start, last, io->entries[i].start, io->entries[i].end, io->source);
	/* The innermost Reserved entry holding the whole extent. */
	int holder = -1;
	for (size_t i = 0; i < io->n; i++) {
		const struct hvt_iomem_entry *x = &io->entries[i];
		if (!strcmp(x->name, "Reserved") && x->start <= start && last <= x->end &&
		    (holder < 0 || x->depth > io->entries[holder].depth))
			holder = (int)i;
	}
	if (holder < 0) {
		int at = hvt_iomem_find(io, start);
		return hvt_err_set(e, -ERANGE,
				   "extent 0x%" PRIx64 "-0x%" PRIx64
				   " is not inside one Reserved entry of %s (its start is in: %s)",
				   start, last, io->source, at >= 0 ? io->entries[at].name : "nothing");
	}
	for (size_t i = 0; i < io->n; i++)
		if (descends(io, i, holder) && overlaps(&io->entries[i], start, last))
			return hvt_err_set(e, -EBUSY,
					   "extent 0x%" PRIx64 "-0x%" PRIx64 " is claimed: '%s' (%" PRIx64
					   "-%" PRIx64 ") sits inside Reserved %" PRIx64 "-%" PRIx64 " in %s",
					   start, last, io->entries[i].name, io->entries[i].start,
					   io->entries[i].end, io->entries[holder].start,
					   io->entries[holder].end, io->source);
	return 0;
}

int hvt_iomem_user_reserved(const struct hvt_iomem *io, const struct hvt_fwmap *fw, struct hvt_range **out,
			    size_t *n)
{
	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < io->n; i++) {
		const struct hvt_iomem_entry *x = &io->entries[i];
		uint64_t s = (x->start + PAGE - 1) & ~(PAGE - 1), end = (x->end + 1) & ~(PAGE - 1);
		if (x->depth || strcmp(x->name, "Reserved") || x->start < (1ull << 20) || end <= s)
			continue;
		if (hvt_fwmap_check_ram(fw, s, end - s, NULL))
			continue;
		if (hvt_iomem_check_extent(io, s, end - s, NULL))
			continue;
		struct hvt_range *r = realloc(*out, (*n + 1) * sizeof(*r));
		if (!r)
			return -ENOMEM;
		*out = r;
		r[(*n)++] = (struct hvt_range){s, end - s};
	}
	return 0;
}
