// SPDX-License-Identifier: MIT
/*
 * The probe on real hardware — the thin part only a host with a memory-controller PMU reaches: counters
 * through lib/pmu, touchable memory from memmap= reservations mapped through /dev/mem (cached: no O_SYNC,
 * docs/hardware-notes.md §7.3) and/or hugetlb pages located through /proc/self/pagemap.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "hvmtrace/probe.h"
#include "hvmtrace/error.h"
#include "hvmtrace/iomem.h"
#include "hvmtrace/pagemap.h"
#include "hvmtrace/pmu.h"
#include "hvmtrace/util.h"

struct mapping {
	uint64_t hpa, size;
	char *va;
	bool devmem; /* our own mmap of /dev/mem (hugetlb runs share one mapping) */
};

struct hw {
	struct hvt_pmu_host host;
	struct hvt_pmu_sampler *sampler;
	unsigned *order; /* sampler index → proto channel index */
	struct hvt_pmu_counts *counts;
	struct mapping *maps;
	size_t nmaps;
	void *huge;
	size_t huge_len;
	int mem_fd;
	const char *sysfs_root;
	int pinned_socket;
};

static void host_identity(struct hvt_chanmap *p)
{
	struct utsname u;
	if (!uname(&u)) {
		snprintf(p->host.hostname, sizeof(p->host.hostname), "%s", u.nodename);
		snprintf(p->host.kernel, sizeof(p->host.kernel), "%s", u.release);
	}
	FILE *f = fopen("/etc/machine-id", "re");
	if (f) {
		if (fscanf(f, "%63s", p->host.machine_id) != 1)
			p->host.machine_id[0] = '\0';
		fclose(f);
	}
}

static int add_map(struct hw *h, uint64_t hpa, uint64_t size, char *va, bool devmem)
{
	struct mapping *n = realloc(h->maps, (h->nmaps + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	h->maps = n;
	n[h->nmaps++] = (struct mapping){hpa, size, va, devmem};
	return 0;
}

static int map_devmem(struct hw *h, const struct hvt_probe_hw_options *o, struct hvt_err *e)
{
	struct hvt_iomem io;
	struct hvt_fwmap fw;
	struct hvt_range *r;
	size_t n;
	const char *mem = o->mem_path ? o->mem_path : "/dev/mem";
	int rc;

	if ((rc = hvt_iomem_read(o->iomem, &io, e)))
		return rc;
	if (io.hidden) {
		hvt_iomem_free(&io);
		return hvt_err_set(e, -EPERM, "%s hides addresses: chanmap probe must run as root",
				   io.source);
	}
	if ((rc = hvt_fwmap_read(o->fwmap, &fw, e))) {
		hvt_iomem_free(&io);
		return rc;
	}
	rc = hvt_iomem_user_reserved(&io, &fw, &r, &n);
	hvt_iomem_free(&io);
	hvt_fwmap_free(&fw);
	if (rc)
		return hvt_err_set(e, rc, "out of memory");
	if (n == 0) {
		free(r);
		return 0;
	}
	h->mem_fd = open(mem, O_RDWR | O_CLOEXEC); /* no O_SYNC: a cached mapping, flushed line by line */
	if (h->mem_fd < 0) {
		rc = -errno;
		free(r);
		return hvt_err_set(
		    e, rc,
		    "cannot open %s: %s; it needs root (CAP_SYS_RAWIO) and a kernel that is not locked down (Secure Boot locks /dev/mem)",
		    mem, strerror(-rc));
	}
	for (size_t i = 0; i < n && !rc; i++) {
		void *va =
		    mmap(NULL, r[i].size, PROT_READ | PROT_WRITE, MAP_SHARED, h->mem_fd, (off_t)r[i].start);
		if (va == MAP_FAILED)
			rc = hvt_err_set(e, -errno,
					 "cannot map reserved 0x%" PRIx64 "+0x%" PRIx64 " of %s: %s",
					 r[i].start, r[i].size, mem, strerror(errno));
		else if (add_map(h, r[i].start, r[i].size, va, true))
			rc = hvt_err_set(e, -ENOMEM, "out of memory");
	}
	free(r);
	return rc;
}

static int map_hugetlb(struct hw *h, const struct hvt_probe_hw_options *o, struct hvt_err *e)
{
	struct hvt_pagemap pm;
	struct hvt_pagemap_run *runs;
	size_t n;
	int flag = o->hugetlb_page >= (1ull << 30) ? MAP_HUGE_1GB : MAP_HUGE_2MB;
	int rc;

	h->huge_len = o->hugetlb_bytes;
	h->huge = mmap(NULL, h->huge_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | flag | MAP_POPULATE, -1, 0);
	if (h->huge == MAP_FAILED) {
		h->huge = NULL;
		return hvt_err_set(
		    e, -errno,
		    "cannot get %" PRIu64 " MiB of %" PRIu64
		    " KiB hugetlb pages (%s): reserve them first, e.g. echo N > /sys/kernel/mm/hugepages/hugepages-%" PRIu64
		    "kB/nr_hugepages",
		    o->hugetlb_bytes >> 20, o->hugetlb_page >> 10, strerror(errno), o->hugetlb_page >> 10);
	}
	if (mlock(h->huge, h->huge_len))
		return hvt_err_set(e, -errno, "cannot lock the hugetlb pages: %s", strerror(errno));
	if ((rc = hvt_pagemap_open(&pm, NULL, e)))
		return rc;
	rc = hvt_pagemap_runs(&pm, h->huge, h->huge_len, &runs, &n, e);
	hvt_pagemap_close(&pm);
	for (size_t i = 0; i < n && !rc; i++)
		if (add_map(h, runs[i].phys, runs[i].size, (char *)runs[i].va, false))
			rc = hvt_err_set(e, -ENOMEM, "out of memory");
	free(runs);
	return rc;
}

static int cmp_map(const void *a, const void *b)
{
	const struct mapping *x = a, *y = b;
	return x->hpa < y->hpa ? -1 : x->hpa > y->hpa;
}

static char *va_of(struct hw *h, uint64_t hpa, uint64_t bytes)
{
	for (size_t i = 0; i < h->nmaps; i++)
		if (h->maps[i].hpa <= hpa && hpa + bytes <= h->maps[i].hpa + h->maps[i].size)
			return h->maps[i].va + (hpa - h->maps[i].hpa);
	return NULL;
}

static int hw_window(struct hvt_probe_backend *b, const struct hvt_probe_touch *t, uint64_t *rd, uint64_t *wr,
		     struct hvt_err *e)
{
	struct hw *h = b->ctx;
	char *va = NULL;
	int cpu, rc;

	if (t->dir != HVT_PROBE_IDLE && !(va = va_of(h, t->hpa, t->bytes)))
		return hvt_err_set(e, -EFAULT, "0x%" PRIx64 "+0x%" PRIx64 " is not mapped", t->hpa, t->bytes);
	if ((int)t->socket != h->pinned_socket) {
		if ((rc = hvt_pin_to_socket(h->sysfs_root, t->socket, &cpu, e)))
			return rc;
		h->pinned_socket = (int)t->socket;
	}
	if ((rc = hvt_pmu_read(h->sampler, h->counts, e))) /* the window starts here */
		return rc;
	uint64_t until = hvt_now_ns() + t->window_ns;
	if (t->dir == HVT_PROBE_READ)
		(void)hvt_touch_read(va, t->bytes, t->reps);
	else if (t->dir == HVT_PROBE_WRITE)
		hvt_touch_write(va, t->bytes, t->reps, 0x5a5a5a5a5a5a5a5aull);
	for (uint64_t now = hvt_now_ns(); now < until; now = hvt_now_ns()) {
		struct timespec ts = {(time_t)((until - now) / HVT_NSEC_PER_SEC),
				      (long)((until - now) % HVT_NSEC_PER_SEC)};
		nanosleep(&ts, NULL);
	}
	if ((rc = hvt_pmu_read(h->sampler, h->counts, e)))
		return rc;
	for (unsigned i = 0; i < hvt_pmu_nchannels(h->sampler); i++) {
		rd[h->order[i]] = h->counts[i].read_cas;
		wr[h->order[i]] = h->counts[i].write_cas;
	}
	return 0;
}

static void hw_destroy(struct hvt_probe_backend *b)
{
	struct hw *h = b->ctx;
	if (h->sampler)
		hvt_pmu_close(h->sampler);
	hvt_pmu_host_fini(&h->host);
	for (size_t i = 0; i < h->nmaps; i++)
		if (h->maps[i].devmem)
			munmap(h->maps[i].va, h->maps[i].size);
	if (h->huge)
		munmap(h->huge, h->huge_len);
	if (h->mem_fd >= 0)
		close(h->mem_fd);
	free(h->maps);
	free(h->order);
	free(h->counts);
	free(h);
}

static int build_proto(struct hw *h, struct hvt_probe_backend *b, struct hvt_err *e)
{
	struct hvt_chanmap *p = &b->proto;

	snprintf(p->source, sizeof(p->source), "hardware");
	host_identity(p);
	snprintf(p->cpu.vendor, sizeof(p->cpu.vendor), "%s", h->host.vendor);
	snprintf(p->cpu.name, sizeof(p->cpu.name), "%s", h->host.model_name);
	snprintf(p->cpu.generation, sizeof(p->cpu.generation), "%s", hvt_pmu_gen_name(h->host.gen));
	p->cpu.family = h->host.family;
	p->cpu.model = h->host.model;
	p->sockets = h->host.nsockets;
	for (unsigned i = 0; i < h->host.nchannels; i++) {
		const struct hvt_pmu_channel *pc = &h->host.channels[i];
		struct hvt_chanmap_channel c = {.socket = (unsigned)pc->socket,
						.controller = (unsigned)pc->controller,
						.channel = (unsigned)pc->channel,
						.inferred = pc->inferred};
		snprintf(c.id, sizeof(c.id), "%s", pc->id);
		snprintf(c.pmu, sizeof(c.pmu), "%s", pc->pmu);
		int rc = hvt_chanmap_add_channel(p, &c, e);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int hvt_probe_hw_open(const struct hvt_probe_hw_options *o, struct hvt_probe_backend **out, struct hvt_err *e)
{
	struct hvt_probe_backend *b = hvt_probe_backend_new(sizeof(struct hw), hw_window, hw_destroy, e);
	struct hvt_pmu_source src = {.sysfs_root = o->sysfs_root};
	struct hw *h;
	int rc;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	h = b->ctx;
	h->mem_fd = -1;
	h->pinned_socket = -1;
	h->sysfs_root = o->sysfs_root;
	if ((rc = hvt_pmu_discover(&h->host, &src, e)) || (rc = build_proto(h, b, e)))
		goto fail;
	if (o->devmem && (rc = map_devmem(h, o, e)))
		goto fail;
	if (o->hugetlb_bytes && (rc = map_hugetlb(h, o, e)))
		goto fail;
	snprintf(b->proto.probe.memory, sizeof(b->proto.probe.memory), "%s%s%s",
		 h->mem_fd >= 0 ? "devmem" : "", h->mem_fd >= 0 && h->huge ? "+" : "",
		 h->huge ? "hugetlb" : "");
	if (h->nmaps == 0) {
		rc = hvt_err_set(
		    e, -ENOENT,
		    "no memory to probe: boot with a memmap=SIZE$START reservation of RAM (see docs/chanmap.md) or pass --hugetlb SIZE");
		goto fail;
	}
	qsort(h->maps, h->nmaps, sizeof(*h->maps), cmp_map);
	b->touchable = calloc(h->nmaps, sizeof(*b->touchable));
	if (!b->touchable) {
		rc = hvt_err_set(e, -ENOMEM, "out of memory");
		goto fail;
	}
	for (size_t i = 0; i < h->nmaps; i++)
		b->touchable[b->ntouchable++] = (struct hvt_range){h->maps[i].hpa, h->maps[i].size};
	if ((rc = hvt_pmu_open(&h->sampler, &h->host, NULL, 0, e)))
		goto fail;
	unsigned n = hvt_pmu_nchannels(h->sampler);
	h->order = calloc(n, sizeof(*h->order));
	h->counts = calloc(n, sizeof(*h->counts));
	if (!h->order || !h->counts) {
		rc = hvt_err_set(e, -ENOMEM, "out of memory");
		goto fail;
	}
	for (unsigned i = 0; i < n; i++)
		h->order[i] = (unsigned)hvt_chanmap_find(&b->proto, hvt_pmu_channel_at(h->sampler, i)->id);
	*out = b;
	return 0;
fail:
	hvt_probe_backend_destroy(b);
	return rc;
}
