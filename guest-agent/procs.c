// SPDX-License-Identifier: MIT
/* Every process's present pages: its mappings from /proc/PID/maps, their PFNs from /proc/PID/pagemap (bit 63
 * present, bits 0-54 the PFN, which reads as 0 without CAP_SYS_ADMIN), its name and cgroup. A process that
 * exits while it is read is left out. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "hvmtrace/owners_format.h"

#define PM_PRESENT (1ull << 63)
#define PM_PFN     ((1ull << 55) - 1)

struct pfns {
	uint64_t *v;
	size_t n, cap;
	uint64_t present_hidden; /* present pages whose PFN read as 0 */
};

/* The first line of a small file, without its newline; -1 if it cannot be read. */
static int read_small(const char *path, char *out, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, out, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	out[n] = 0;
	return 0;
}

/* The cgroup v2 path ("0::PATH"), or with only v1 hierarchies the first line's path. */
static void cgroup_of(const char *dir, char *out, size_t len)
{
	char path[PATH_MAX], buf[8192], *line, *save = NULL;

	snprintf(path, sizeof(path), "%s/cgroup", dir);
	out[0] = 0;
	if (read_small(path, buf, sizeof(buf)))
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = strchr(line, ':');

		p = p ? strchr(p + 1, ':') : NULL;
		if (!p)
			continue;
		if (!strncmp(line, "0::", 3) || !out[0])
			snprintf(out, len, "%s", p + 1);
		if (!strncmp(line, "0::", 3))
			return;
	}
}

static int pfns_add(struct pfns *s, uint64_t pfn)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4096;
		uint64_t *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = pfn;
	return 0;
}

/* The PFNs of [start, end) into s; -1 when memory runs out (a vanished process reads as no pages). */
static int scan_range(int pm, uint64_t start, uint64_t end, uint32_t page_size, const struct ram_map *ram,
		      struct pfns *s)
{
	static uint64_t e[4096];

	for (uint64_t va = start; va < end;) {
		uint64_t n = (end - va) / page_size;
		ssize_t got;

		n = n > 4096 ? 4096 : n;
		got = pread(pm, e, n * 8, (off_t)(va / page_size * 8));
		if (got <= 0)
			return 0;
		for (size_t i = 0; i < (size_t)got / 8; i++) {
			uint64_t pfn = e[i] & PM_PFN;

			if (!(e[i] & PM_PRESENT))
				continue;
			if (!pfn)
				s->present_hidden++;
			else if (pfn < HVT_OWN_MAX_PFN_END && ram_has(ram, pfn) && pfns_add(s, pfn))
				return -1;
		}
		va += (uint64_t)got / 8 * page_size;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The process's PFNs (sorted) and whether a mapping was too large to scan; -1 when memory runs out. */
static int scan_one(const char *dir, const struct agent_opts *o, uint32_t page_size, struct pfns *s,
		    bool *partial)
{
	char path[PATH_MAX], line[4096];
	FILE *maps;
	int pm, rc = 0;

	snprintf(path, sizeof(path), "%s/maps", dir);
	maps = fopen(path, "re");
	if (!maps)
		return 0;
	snprintf(path, sizeof(path), "%s/pagemap", dir);
	pm = open(path, O_RDONLY | O_CLOEXEC);
	if (pm < 0) {
		fclose(maps);
		return 0;
	}
	while (!rc && fgets(line, sizeof(line), maps)) {
		uint64_t start, end;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &start, &end) != 2 || end <= start)
			continue;
		if (!strchr(line, '\n')) { /* a path longer than the line: skip its rest */
			int c;

			while ((c = fgetc(maps)) != EOF && c != '\n')
				;
		}
		if (end - start > o->max_vma_bytes) {
			*partial = true;
			continue;
		}
		rc = scan_range(pm, start, end, page_size, &o->ram,
				s); /* a device's memory mapped: left out */
	}
	close(pm);
	fclose(maps);
	if (!rc && s->n)
		qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
	return rc;
}

int scan_processes(struct obuf *b, const char *proc, const struct agent_opts *o, uint32_t page_size,
		   uint32_t *nowners, uint64_t *runs_total, uint16_t *flags, struct agent_stats *st)
{
	DIR *d = opendir(proc);
	struct dirent *de;
	struct pfns s = {0};
	struct pfn_runs runs = {0};
	uint64_t hidden = 0;
	int rc = -1;

	if (strlen(proc) > 200 || !d) {
		fprintf(stderr, "hvmtrace-guest: %s: %s\n", proc, d ? "path too long" : strerror(errno));
		if (d)
			closedir(d);
		return -1;
	}
	while ((de = readdir(d))) {
		char dir[512], path[PATH_MAX], comm[64], cgroup[HVT_OWN_MAX_CGROUP + 1];
		bool partial = false;
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (!isdigit((unsigned char)de->d_name[0]) || *end || pid > UINT32_MAX)
			continue;
		snprintf(dir, sizeof(dir), "%.200s/%.200s", proc, de->d_name);
		snprintf(path, sizeof(path), "%s/comm", dir);
		if (read_small(path, comm, sizeof(comm))) {
			st->procs_gone++;
			continue;
		}
		comm[strcspn(comm, "\n")] = 0;
		cgroup_of(dir, cgroup, sizeof(cgroup));
		s.n = 0;
		s.present_hidden = 0;
		if (scan_one(dir, o, page_size, &s, &partial))
			goto nomem;
		hidden += s.present_hidden;
		runs.n = 0;
		for (size_t i = 0; i < s.n; i++)
			if (pfn_runs_add(&runs, s.v[i]))
				goto nomem;
		if (!runs.n)
			continue; /* a kernel thread, or gone */
		/* a run takes at most 20 bytes (two varints of 10) */
		if (*nowners >= HVT_OWN_MAX_OWNERS || *runs_total + runs.n > HVT_OWN_MAX_RUNS ||
		    b->n + HVT_OWN_OWNER_BYTES + strlen(comm) + strlen(cgroup) + runs.n * 20 >
			HVT_OWN_HEADER_BYTES + (size_t)HVT_OWN_MAX_BODY) {
			*flags |= HVT_OWN_TRUNCATED;
			continue;
		}
		snapshot_owner(b, HVT_OWN_PROCESS, 0, partial ? HVT_OWN_PARTIAL : 0, (uint32_t)pid, comm,
			       cgroup, &runs);
		(*nowners)++;
		*runs_total += runs.n;
		st->procs++;
		st->procs_partial += partial;
		st->process_runs += runs.n;
		if (o->verbose)
			fprintf(stderr, "hvmtrace-guest: %lu %s: %zu pages in %zu runs%s\n", pid, comm, s.n,
				runs.n, partial ? " (partial)" : "");
	}
	if (!st->procs && hidden) {
		fprintf(stderr,
			"hvmtrace-guest: %s/PID/pagemap hides PFNs (needs CAP_SYS_ADMIN: run as root)\n",
			proc);
		goto out;
	}
	rc = 0;
	goto out;
nomem:
	fprintf(stderr, "hvmtrace-guest: out of memory\n");
out:
	free(s.v);
	pfn_runs_free(&runs);
	closedir(d);
	return rc;
}
