// SPDX-License-Identifier: MIT
/* A VM's bandwidth per interval: its channels' CAS counters, or resctrl's total bytes (vm_bandwidth.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "hvmtrace/pmu.h"
#include "hvmtrace/resctrl.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/util.h"
#include "hvmtrace/vm_bandwidth.h"

struct hvt_vm_bw {
	struct hvt_pmu_host host;
	struct hvt_pmu_sampler *pmu; /* or: */
	struct hvt_resctrl_group *rdt;
	unsigned n;
	struct hvt_pmu_counts *counts;
};

/* The distinct channel ids of the layout's extents, in order of first appearance. */
static unsigned layout_channels(const struct hvt_layout *l, const char ***ids)
{
	unsigned n = 0, cap = 0;

	*ids = NULL;
	for (uint32_t s = 0; s < l->nslots; s++)
		for (uint32_t e = 0; e < l->slots[s].nextents; e++) {
			const char *id = l->slots[s].extents[e].channel;
			bool seen = !id[0];

			for (unsigned k = 0; k < n && !seen; k++)
				seen = !strcmp((*ids)[k], id);
			if (seen)
				continue;
			if (n == cap) {
				const char **m = realloc(*ids, (cap = cap ? cap * 2 : 8) * sizeof(*m));

				if (!m)
					return n;
				*ids = m;
			}
			(*ids)[n++] = id;
		}
	return n;
}

static int open_pmu(struct hvt_vm_bw *b, const char **ids, unsigned n, const struct hvt_vm_bw_opts *o,
		    struct hvt_err *err)
{
	struct hvt_pmu_source src = {.sysfs_root = o->sysfs_root};
	int rc = hvt_pmu_discover(&b->host, &src, err);

	if (!rc)
		rc = hvt_pmu_open(&b->pmu, &b->host, ids, n, err);
	b->n = n;
	return rc;
}

int hvt_vm_bw_open(struct hvt_vm_bw **bwp, const struct hvt_layout *l, const struct hvt_vm_bw_opts *o,
		   struct hvt_err *err)
{
	struct hvt_vm_bw *b;
	const char **ids;
	unsigned n = layout_channels(l, &ids);
	int rc;

	*bwp = NULL;
	if (!n && !o->resctrl_fallback) {
		free(ids);
		return 0;
	}
	if (!(b = calloc(1, sizeof(*b)))) {
		free(ids);
		return hvt_err_set(err, -ENOMEM, "out of memory");
	}
	if (n) {
		rc = open_pmu(b, ids, n, o, err);
	} else if (!(b->rdt = calloc(1, sizeof(*b->rdt)))) {
		rc = hvt_err_set(err, -ENOMEM, "out of memory");
	} else {
		rc = hvt_resctrl_open(b->rdt, o->resctrl_root, o->group_name, o->vmm_pid, err);
		if (rc)
			free(b->rdt);
		b->rdt = rc ? NULL : b->rdt;
		b->n = rc ? 0 : b->rdt->ndomains;
	}
	free(ids);
	if (!rc && !(b->counts = calloc(b->n, sizeof(*b->counts))))
		rc = hvt_err_set(err, -ENOMEM, "out of memory");
	if (rc) {
		hvt_vm_bw_close(b);
		return rc;
	}
	*bwp = b;
	return 0;
}

enum hvt_bw_source hvt_vm_bw_source(const struct hvt_vm_bw *b)
{
	return !b                 ? HVT_BW_SOURCE_NONE
	       : b->rdt           ? HVT_BW_SOURCE_RESCTRL_TOTAL
	       : b->host.stand_in ? HVT_BW_SOURCE_PMU_STAND_IN
				  : HVT_BW_SOURCE_PMU;
}

#define HAS(item) (1ull << (item))

static int pmu_channel_describe(struct hvt_meta_channel *o, const struct hvt_pmu_channel *c,
				enum hvt_pmu_gen gen)
{
	o->present = HAS(HVT_MCH_SOCKET) | HAS(HVT_MCH_CONTROLLER) | HAS(HVT_MCH_CHANNEL) | HAS(HVT_MCH_PMU) |
		     HAS(HVT_MCH_CPU) | HAS(HVT_MCH_INFERRED);
	o->socket = c->socket;
	o->controller = c->controller;
	o->channel = c->channel;
	o->cpu = c->cpu;
	o->inferred = c->inferred;
	o->reads_writes_split = true;
	if (hvt_meta_set_str(&o->id, c->id) ||
	    hvt_meta_set_str(&o->source,
			     c->stand_in ? "stand-in (software events, not DRAM)" : hvt_pmu_gen_name(gen)) ||
	    hvt_meta_set_str(&o->pmu, c->pmu))
		return -ENOMEM;
	return 0;
}

static int rdt_domain_describe(struct hvt_meta_channel *o, const struct hvt_resctrl_group *g, unsigned i)
{
	char id[64];

	snprintf(id, sizeof(id), "resctrl.%s", g->domains[i]);
	o->present = HAS(HVT_MCH_GROUP) | HAS(HVT_MCH_NOTE);
	o->reads_writes_split = false;
	if (hvt_meta_set_str(&o->id, id) || hvt_meta_set_str(&o->source, "resctrl mbm_total_bytes") ||
	    hvt_meta_set_str(&o->group, g->dir) ||
	    hvt_meta_set_str(
		&o->note,
		"TOTAL bytes (reads + writes) of the VMM's threads in this L3 domain: intervals carry total_bytes (flag BW_TOTAL), read_bytes and write_bytes are null (not measured)"))
		return -ENOMEM;
	return 0;
}

int hvt_vm_bw_describe(const struct hvt_vm_bw *b, struct hvt_trace_meta *m)
{
	m->bandwidth_available = b != NULL;
	m->bandwidth_source = hvt_vm_bw_source(b);
	if (b)
		hvt_trace_meta_set_present(m, HVT_META_BANDWIDTH_SOURCE);
	if (!b || !b->n)
		return 0;
	m->channels.v = calloc(b->n, sizeof(*m->channels.v));
	if (!m->channels.v)
		return -ENOMEM;
	m->channels.n = b->n;
	for (unsigned i = 0; i < b->n; i++) {
		int rc = b->rdt ? rdt_domain_describe(&m->channels.v[i], b->rdt, i)
				: pmu_channel_describe(&m->channels.v[i], hvt_pmu_channel_at(b->pmu, i),
						       b->host.gen);

		if (rc)
			return rc;
	}
	return 0;
}

int hvt_vm_bw_fill(struct hvt_vm_bw *b, struct hvt_interval *iv, struct hvt_err *err)
{
	uint64_t bytes[HVT_RESCTRL_MAX_DOMAINS];
	bool avail[HVT_RESCTRL_MAX_DOMAINS], all = true;
	int rc;

	if (!b)
		return 0;
	if (b->rdt)
		rc = hvt_resctrl_read(b->rdt, bytes, avail, err);
	else
		rc = hvt_pmu_read(b->pmu, b->counts, err);
	if (rc)
		return rc;
	for (unsigned i = 0; i < b->n; i++)
		all &= b->rdt ? avail[i] : b->counts[i].counted;
	if (!all) /* a window some counter did not measure is reported as not measured, never as 0 */
		return 0;
	free(iv->channels);
	iv->channels = calloc(b->n, sizeof(*iv->channels));
	if (!iv->channels)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	for (unsigned i = 0; i < b->n; i++) {
		iv->channels[i].channel = i;
		iv->channels[i].read_bytes = b->rdt ? bytes[i] : b->counts[i].read_bytes;
		iv->channels[i].write_bytes = b->rdt ? 0 : b->counts[i].write_bytes;
	}
	iv->nchannels = b->n;
	iv->flags |= HVT_IV_BANDWIDTH | (b->rdt ? HVT_IV_BW_TOTAL : 0);
	return 0;
}

void hvt_vm_bw_close(struct hvt_vm_bw *b)
{
	if (!b)
		return;
	hvt_pmu_close(b->pmu);
	hvt_pmu_host_fini(&b->host);
	if (b->rdt) {
		hvt_resctrl_close(b->rdt);
		free(b->rdt);
	}
	free(b->counts);
	free(b);
}
