// SPDX-License-Identifier: MIT
/*
 * Discovery of memory-controller PMUs under a sysfs root (docs/hardware-notes.md §1.1-1.6, §2.1): which PMUs,
 * which CPU generation, which socket each PMU's cpumask CPUs belong to, and each channel's encoded events.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "hvmtrace/util.h"
#include "pmu_internal.h"

#define MAX_PMUS      256
#define MAX_MASK_CPUS 64

struct found_pmu {
	char name[HVT_PMU_NAME_MAX];
	int box;
};

/* True when name is prefix followed by digits only: "uncore_imc_3" but not "uncore_imc_free_running_0". */
static bool match_box(const char *name, const char *prefix, int *box)
{
	size_t n = strlen(prefix);
	const char *p = name + n;

	if (strncmp(name, prefix, n) || !*p)
		return false;
	for (const char *q = p; *q; q++)
		if (!isdigit((unsigned char)*q))
			return false;
	if (strlen(p) > 6)
		return false;
	*box = atoi(p);
	return true;
}

static int cmp_found(const void *a, const void *b)
{
	const struct found_pmu *x = a, *y = b;

	return (x->box > y->box) - (x->box < y->box);
}

/* Lists the PMUs in devdir matching either prefix; *what gets every PMU name seen, for error messages. */
static int list_pmus(const char *devdir, struct found_pmu *out, int *n, bool *amd, char *what, size_t wlen,
		     struct hvt_err *err)
{
	DIR *d = opendir(devdir);
	struct dirent *de;
	size_t wused = 0;
	int box;

	*n = 0;
	what[0] = 0;
	if (!d)
		return hvt_err_set(err, -ENODEV, "%s: %s: this is not a sysfs tree with perf PMUs", devdir,
				   strerror(errno));
	while ((de = readdir(d))) {
		bool is_amd = false;

		if (de->d_name[0] == '.')
			continue;
		if (wused + strlen(de->d_name) + 3 < wlen)
			wused += (size_t)snprintf(what + wused, wlen - wused, "%s%s", wused ? ", " : "",
						  de->d_name);
		if (!match_box(de->d_name, "uncore_imc_", &box) &&
		    !(is_amd = match_box(de->d_name, "amd_umc_", &box)))
			continue;
		if (*n == MAX_PMUS) {
			closedir(d);
			return hvt_err_set(err, -E2BIG, "%s: more than %d memory-controller PMUs", devdir,
					   MAX_PMUS);
		}
		if (*n && is_amd != *amd) {
			closedir(d);
			return hvt_err_set(err, -EINVAL,
					   "%s: both uncore_imc and amd_umc PMUs: not a real host tree",
					   devdir);
		}
		*amd = is_amd;
		snprintf(out[*n].name, sizeof(out[*n].name), "%.63s", de->d_name);
		out[*n].box = box;
		(*n)++;
	}
	closedir(d);
	qsort(out, (size_t)*n, sizeof(*out), cmp_found);
	return 0;
}

/* vendor_id, cpu family, model and model name of the first processor in a /proc/cpuinfo-format file. */
static int read_cpuinfo(const char *path, struct hvt_pmu_host *h, struct hvt_err *err)
{
	FILE *f = fopen(path, "re");
	char line[512];
	bool fam = false, mod = false;

	if (!f)
		return hvt_err_set(err, -ENOENT,
				   "%s: %s (the CPU model is needed to know the PMU generation)", path,
				   strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':'), *v;

		if (line[0] == '\n' && h->vendor[0])
			break; /* end of the first processor */
		if (!colon)
			continue;
		v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = 0;
		if (!strncmp(line, "vendor_id", 9))
			snprintf(h->vendor, sizeof(h->vendor), "%s", v);
		else if (!strncmp(line, "cpu family", 10))
			fam = sscanf(v, "%u", &h->family) == 1;
		else if (!strncmp(line, "model name", 10))
			snprintf(h->model_name, sizeof(h->model_name), "%s", v);
		else if (!strncmp(line, "model", 5) && (line[5] == ' ' || line[5] == '\t'))
			mod = sscanf(v, "%u", &h->model) == 1;
	}
	fclose(f);
	if (!h->vendor[0] || !fam || !mod)
		return hvt_err_set(err, -EINVAL,
				   "%s: no vendor_id, cpu family and model lines: not a cpuinfo file", path);
	return 0;
}

static int cpu_socket(const char *root, int cpu, int *socket, struct hvt_err *err)
{
	char path[512];
	unsigned long long v;
	int rc;

	snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/physical_package_id", root, cpu);
	rc = pmu_read_uint(path, &v, err);
	if (rc)
		return hvt_err_prefix(err, rc, "socket of CPU %d: ", cpu);
	*socket = (int)v;
	return 0;
}

/* Encodes one counter: from the first sysfs alias that exists, else from the table's terms. */
static int encode_event(const char *pmu_dir, const struct pmu_gen_event *ge, struct hvt_pmu_event *ev,
			char *note, size_t nlen, struct hvt_err *err)
{
	char path[512], terms[128];
	int rc;

	for (int i = 0; i < PMU_MAX_ALIASES && ge->aliases[i]; i++) {
		snprintf(path, sizeof(path), "%s/events/%s", pmu_dir, ge->aliases[i]);
		rc = hvt_read_text(path, terms, sizeof(terms), err);
		if (rc == -ENOENT)
			continue;
		if (rc)
			return rc;
		rc = hvt_pmu_encode_terms(pmu_dir, terms, ev, err);
		if (rc)
			return rc;
		snprintf(ev->alias, sizeof(ev->alias), "%s", ge->aliases[i]);
		if (ev->config != ge->config && !note[0])
			snprintf(note, nlen,
				 "events/%s of %.60s says config 0x%" PRIx64
				 " where hvmtrace's table has 0x%" PRIx64 "; using the kernel's",
				 ge->aliases[i], strrchr(pmu_dir, '/') ? strrchr(pmu_dir, '/') + 1 : pmu_dir,
				 ev->config, ge->config);
		return 0;
	}
	rc = hvt_pmu_encode_terms(pmu_dir, ge->terms, ev, err);
	ev->alias[0] = 0;
	return rc;
}

static int cmp_channel(const void *a, const void *b)
{
	const struct hvt_pmu_channel *x = a, *y = b;

	if (x->socket != y->socket)
		return (x->socket > y->socket) - (x->socket < y->socket);
	if (x->controller != y->controller)
		return (x->controller > y->controller) - (x->controller < y->controller);
	return (x->channel > y->channel) - (x->channel < y->channel);
}

/* AMD: amd_umc_N is a global running index over populated UMCs, so a UMC is ranked within its socket. */
static void rank_per_socket(struct hvt_pmu_host *h)
{
	for (unsigned i = 0; i < h->nchannels; i++) {
		struct hvt_pmu_channel *c = &h->channels[i];
		int rank = 0;

		for (unsigned k = 0; k < h->nchannels; k++)
			if (h->channels[k].socket == c->socket && h->channels[k].box < c->box)
				rank++;
		c->controller = rank;
		c->channel = 0;
	}
}

static int add_pmu(struct hvt_pmu_host *h, const struct pmu_gen_info *g, const char *root, const char *devdir,
		   const struct found_pmu *p, unsigned *cap, struct hvt_err *err)
{
	char dir[400], path[512], mask[512];
	unsigned long long type;
	int cpus[MAX_MASK_CPUS], ncpus = 0, rc, sockets[MAX_MASK_CPUS];
	cpu_set_t set;

	snprintf(dir, sizeof(dir), "%.300s/%.63s", devdir, p->name);
	snprintf(path, sizeof(path), "%s/type", dir);
	if ((rc = pmu_read_uint(path, &type, err)))
		return rc;
	snprintf(path, sizeof(path), "%s/cpumask", dir);
	if ((rc = hvt_read_text(path, mask, sizeof(mask), err)))
		return rc;
	rc = hvt_parse_cpulist(mask, &set);
	for (int cpu = 0; rc > 0 && rc <= MAX_MASK_CPUS && cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set))
			cpus[ncpus++] = cpu;
	if (ncpus <= 0)
		return hvt_err_set(err, -EINVAL, "%s: '%s' is not a non-empty CPU list", path, mask);
	for (int i = 0; i < ncpus; i++) {
		if ((rc = cpu_socket(root, cpus[i], &sockets[i], err)))
			return rc;
		for (int k = 0; k < i; k++)
			if (sockets[k] == sockets[i])
				return hvt_err_set(
				    err, -EINVAL,
				    "%s: CPUs %d and %d are both in socket %d: a multi-die package, which hvmtrace does not map to channels yet",
				    path, cpus[k], cpus[i], sockets[i]);
	}
	for (int i = 0; i < ncpus; i++) {
		struct hvt_pmu_channel *c;

		if (h->nchannels == *cap) {
			struct hvt_pmu_channel *n = realloc(h->channels, (*cap ? *cap * 2 : 16) * sizeof(*n));

			if (!n)
				return hvt_err_set(err, -ENOMEM, "out of memory");
			h->channels = n;
			*cap = *cap ? *cap * 2 : 16;
		}
		c = &h->channels[h->nchannels];
		*c = (struct hvt_pmu_channel){.socket = sockets[i],
					      .box = p->box,
					      .cpu = cpus[i],
					      .type = (uint32_t)type,
					      .nsub = g->nsub,
					      .inferred = g->inferred,
					      .stand_in = type < PERF_TYPE_MAX};
		snprintf(c->pmu, sizeof(c->pmu), "%s", p->name);
		if (g->boxes_per_mc) {
			c->controller = p->box / (int)g->boxes_per_mc;
			c->channel = p->box % (int)g->boxes_per_mc;
		}
		for (unsigned s = 0; s < g->nsub; s++) {
			if ((rc = encode_event(dir, &g->read[s], &c->read[s], h->note, sizeof(h->note),
					       err)) ||
			    (rc = encode_event(dir, &g->write[s], &c->write[s], h->note, sizeof(h->note),
					       err)))
				return hvt_err_prefix(err, rc, "%s: ", p->name);
		}
		h->stand_in |= c->stand_in;
		h->nchannels++;
	}
	return 0;
}

static int discover_found(struct hvt_pmu_host *h, const char *root, const char *cpuinfo,
			  struct found_pmu *found, struct hvt_err *err)
{
	char devdir[400], seen[256];
	const struct pmu_gen_info *g;
	unsigned cap = 0;
	bool amd = false;
	int n, rc;

	snprintf(devdir, sizeof(devdir), "%s/bus/event_source/devices", root);
	if ((rc = list_pmus(devdir, found, &n, &amd, seen, sizeof(seen), err)))
		return rc;
	if (!n)
		return hvt_err_set(
		    err, -ENODEV,
		    "no memory-controller PMU in %s (it has: %s): this host exposes no uncore_imc_N or amd_umc_N counters, as in a VM or on a client CPU; on a bare-metal server run `modprobe intel_uncore` (Intel) or use Linux 6.7 or later (AMD Zen 4)",
		    devdir, seen[0] ? seen : "nothing");
	if ((rc = read_cpuinfo(cpuinfo, h, err)))
		return rc;
	g = pmu_gen_lookup(h->vendor, h->family, h->model);
	if (!g || strcmp(g->pmu_prefix, amd ? "amd_umc_" : "uncore_imc_"))
		return hvt_err_set(
		    err, -EINVAL,
		    "%s: CPU %s family %u model 0x%x (%s) is not in hvmtrace's table of memory-controller PMU generations, so the %s PMUs in %s cannot be mapped to channels",
		    cpuinfo, h->vendor, h->family, h->model, h->model_name, found[0].name, devdir);
	h->gen = g->gen;
	for (int i = 0; i < n; i++)
		if ((rc = add_pmu(h, g, root, devdir, &found[i], &cap, err)))
			return rc;
	if (!g->boxes_per_mc)
		rank_per_socket(h);
	for (unsigned i = 0; i < h->nchannels; i++) {
		struct hvt_pmu_channel *c = &h->channels[i];

		snprintf(c->id, sizeof(c->id), "s%d.mc%d.ch%d", c->socket, c->controller, c->channel);
		h->nsockets += 1;
		for (unsigned k = 0; k < i; k++)
			if (h->channels[k].socket == c->socket) {
				h->nsockets -= 1;
				break;
			}
	}
	qsort(h->channels, h->nchannels, sizeof(*h->channels), cmp_channel);
	for (unsigned i = 1; i < h->nchannels; i++)
		if (!strcmp(h->channels[i].id, h->channels[i - 1].id))
			return hvt_err_set(err, -EINVAL, "%s and %s both map to channel %s",
					   h->channels[i - 1].pmu, h->channels[i].pmu, h->channels[i].id);
	if (!h->note[0] && g->note)
		snprintf(h->note, sizeof(h->note), "%s", g->note);
	return 0;
}

static int discover(struct hvt_pmu_host *h, const char *root, const char *cpuinfo, struct hvt_err *err)
{
	struct found_pmu *found = calloc(MAX_PMUS, sizeof(*found));
	int rc;

	if (!found)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	rc = discover_found(h, root, cpuinfo, found, err);
	free(found);
	return rc;
}

int hvt_pmu_discover(struct hvt_pmu_host *h, const struct hvt_pmu_source *src, struct hvt_err *err)
{
	const char *root = src && src->sysfs_root ? src->sysfs_root : "/sys";
	char cpuinfo[512];
	int rc;

	*h = (struct hvt_pmu_host){0};
	if (src && src->cpuinfo)
		snprintf(cpuinfo, sizeof(cpuinfo), "%s", src->cpuinfo);
	else if (!strcmp(root, "/sys") || !strcmp(root, "/sys/"))
		snprintf(cpuinfo, sizeof(cpuinfo), "/proc/cpuinfo");
	else
		snprintf(cpuinfo, sizeof(cpuinfo), "%s/../proc/cpuinfo", root);
	snprintf(h->sysfs_root, sizeof(h->sysfs_root), "%s", root);
	rc = discover(h, root, cpuinfo, err);
	if (rc)
		hvt_pmu_host_fini(h);
	return rc;
}

void hvt_pmu_host_fini(struct hvt_pmu_host *h)
{
	free(h->channels);
	h->channels = NULL;
	h->nchannels = 0;
}

const struct hvt_pmu_channel *hvt_pmu_find_channel(const struct hvt_pmu_host *h, const char *id)
{
	for (unsigned i = 0; i < h->nchannels; i++)
		if (!strcmp(h->channels[i].id, id))
			return &h->channels[i];
	return NULL;
}
