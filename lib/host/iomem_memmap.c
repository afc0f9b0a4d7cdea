// SPDX-License-Identifier: MIT
/* The firmware memory map (/sys/firmware/memmap) and the memmap=nn$ss kernel argument. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/iomem.h"
#include "hvmtrace/util.h"

/* ---- /sys/firmware/memmap ---- */

static int cmp_fw(const void *a, const void *b)
{
	const struct hvt_fwmap_entry *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

int hvt_fwmap_read(const char *dir, struct hvt_fwmap *fw, struct hvt_err *e)
{
	if (!dir)
		dir = HVT_FWMAP_PATH;
	memset(fw, 0, sizeof(*fw));
	DIR *d = opendir(dir);
	if (!d)
		return hvt_err_set(e, -errno, "cannot read the firmware memory map %s: %s", dir,
				   strerror(errno));
	struct dirent *de;
	int rc = 0;
	while (!rc && (de = readdir(d))) {
		char path[4096], s[64], en[64];
		struct hvt_fwmap_entry x = {0};
		char *end1, *end2;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (fw->n == HVT_FWMAP_MAX_ENTRIES) {
			rc = hvt_err_set(e, -EFBIG,
					 "the firmware memory map %s has more than %d entries, the most read",
					 dir, HVT_FWMAP_MAX_ENTRIES);
			break;
		}
		snprintf(path, sizeof(path), "%s/%s/start", dir, de->d_name);
		rc = hvt_read_text(path, s, sizeof(s), NULL);
		snprintf(path, sizeof(path), "%s/%s/end", dir, de->d_name);
		rc = rc ? rc : hvt_read_text(path, en, sizeof(en), NULL);
		snprintf(path, sizeof(path), "%s/%s/type", dir, de->d_name);
		rc = rc ? rc : hvt_read_text(path, x.type, sizeof(x.type), NULL);
		if (rc) {
			hvt_err_set(e, rc, "%s/%s: cannot read start, end or type: %s", dir, de->d_name,
				    strerror(-rc));
			break;
		}
		x.start = strtoull(s, &end1, 0);
		x.end = strtoull(en, &end2, 0);
		if (*end1 || *end2 || x.end < x.start) {
			rc = hvt_err_set(e, -EINVAL, "%s/%s: start '%s' / end '%s' are not addresses", dir,
					 de->d_name, s, en);
			break;
		}
		struct hvt_fwmap_entry *n = realloc(fw->entries, (fw->n + 1) * sizeof(*n));
		if (!n) {
			rc = hvt_err_set(e, -ENOMEM, "out of memory");
			break;
		}
		fw->entries = n;
		n[fw->n++] = x;
	}
	closedir(d);
	if (!rc && fw->n == 0)
		rc = hvt_err_set(e, -ENOENT, "the firmware memory map %s has no entries", dir);
	if (rc) {
		hvt_fwmap_free(fw);
		return rc;
	}
	qsort(fw->entries, fw->n, sizeof(*fw->entries), cmp_fw);
	return 0;
}

void hvt_fwmap_free(struct hvt_fwmap *fw)
{
	free(fw->entries);
	fw->entries = NULL;
	fw->n = 0;
}

int hvt_fwmap_check_ram(const struct hvt_fwmap *fw, uint64_t start, uint64_t size, struct hvt_err *e)
{
	uint64_t at = start, last = start + size - 1;

	/* Walk the sorted entries, requiring System RAM to cover every byte without a gap. */
	for (size_t i = 0; i < fw->n && at <= last; i++) {
		const struct hvt_fwmap_entry *x = &fw->entries[i];
		if (x->end < at)
			continue;
		if (x->start > at)
			break; /* a gap in front of x */
		if (strcmp(x->type, "System RAM"))
			return hvt_err_set(e, -ERANGE,
					   "0x%" PRIx64 "-0x%" PRIx64
					   " is not all RAM: the firmware map has '%s' at %" PRIx64
					   "-%" PRIx64,
					   start, last, x->type, x->start, x->end);
		if (x->end >= last)
			return 0;
		at = x->end + 1;
	}
	return hvt_err_set(e, -ERANGE,
			   "0x%" PRIx64 "-0x%" PRIx64
			   " is not all RAM: the firmware map has a hole (no memory) at 0x%" PRIx64,
			   start, last, at);
}

/* ---- memmap= ---- */

void hvt_memmap_format(uint64_t start, uint64_t size, char *buf, size_t len)
{
	static const struct {
		char suffix;
		unsigned shift;
	} units[] = {{'T', 40}, {'G', 30}, {'M', 20}, {'K', 10}};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (size && size % (1ull << units[i].shift) == 0) {
			snprintf(buf, len, "%" PRIu64 "%c$0x%" PRIx64, size >> units[i].shift,
				 units[i].suffix, start);
			return;
		}
	snprintf(buf, len, "0x%" PRIx64 "$0x%" PRIx64, size, start);
}

/* The kernel's memparse(): a C number (0x hex, leading 0 octal) and an optional K/M/G/T/P/E suffix. */
static int memparse(const char *s, const char **end, uint64_t *out)
{
	char *e;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &e, 0);
	if (errno)
		return -EINVAL;
	static const char sfx[] = "KMGTPE";
	const char *p = *e ? strchr(sfx, toupper((unsigned char)*e)) : NULL;
	if (p) {
		unsigned shift = 10 * (unsigned)(p - sfx + 1);
		if (v > (UINT64_MAX >> shift))
			return -EINVAL;
		v <<= shift;
		e++;
	}
	*out = v;
	*end = e;
	return 0;
}

static int parse_one(const char *item, struct hvt_range **out, size_t *n, struct hvt_err *e)
{
	const char *p;
	uint64_t size, start;

	if (!strcmp(item, "exactmap"))
		return 0;
	if (memparse(item, &p, &size))
		return hvt_err_set(e, -EINVAL, "memmap=%s: '%s' does not start with a size", item, item);
	if (*p != '$')
		return 0; /* @ (RAM), # (ACPI), ! (pmem), % (retype): not a reservation */
	if (memparse(p + 1, &p, &start) || *p)
		return hvt_err_set(e, -EINVAL, "memmap=%s: the start after '$' is not an address", item);
	struct hvt_range *r = realloc(*out, (*n + 1) * sizeof(*r));
	if (!r)
		return hvt_err_set(e, -ENOMEM, "out of memory");
	*out = r;
	r[(*n)++] = (struct hvt_range){start, size};
	return 0;
}

int hvt_memmap_parse_cmdline(const char *cmdline, struct hvt_range **out, size_t *n, struct hvt_err *e)
{
	*out = NULL;
	*n = 0;
	for (const char *p = cmdline; *p;) {
		while (*p && isspace((unsigned char)*p))
			p++;
		const char *w = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		if (p - w <= 7 || strncmp(w, "memmap=", 7))
			continue;
		char arg[512];
		size_t len = (size_t)(p - w - 7) < sizeof(arg) - 1 ? (size_t)(p - w - 7) : sizeof(arg) - 1;
		memcpy(arg, w + 7, len);
		arg[len] = '\0';
		for (char *item = arg, *next; item; item = next) {
			next = strchr(item, ',');
			if (next)
				*next++ = '\0';
			int rc = parse_one(item, out, n, e);
			if (rc) {
				free(*out);
				*out = NULL;
				*n = 0;
				return rc;
			}
		}
	}
	return 0;
}
