// SPDX-License-Identifier: MIT
/* A VM's bandwidth per interval: its channels' CAS counters, or resctrl's total bytes (vm_bandwidth.h). */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "hvmtrace/pmu.h"
#include "hvmtrace/resctrl.h"
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

const char *hvt_vm_bw_source(const struct hvt_vm_bw *b)
{
	return !b ? NULL : b->rdt ? "resctrl-total" : b->host.stand_in ? "pmu-stand-in" : "pmu";
}

static struct json_object *pmu_channel_json(const struct hvt_pmu_channel *c, enum hvt_pmu_gen gen)
{
	struct json_object *o = json_object_new_object();

	hvt_channel_json_add(o, c->id, c->socket, c->controller, c->channel, c->pmu);
	json_object_object_add(o, "source",
			       json_object_new_string(c->stand_in ? "stand-in (software events, not DRAM)"
								  : hvt_pmu_gen_name(gen)));
	json_object_object_add(o, "cpu", json_object_new_int(c->cpu));
	json_object_object_add(o, "inferred", json_object_new_boolean(c->inferred));
	json_object_object_add(o, "reads_writes_split", json_object_new_boolean(1));
	return o;
}

static struct json_object *rdt_domain_json(const struct hvt_resctrl_group *g, unsigned i)
{
	struct json_object *o = json_object_new_object();
	char id[64];

	snprintf(id, sizeof(id), "resctrl.%s", g->domains[i]);
	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "source", json_object_new_string("resctrl mbm_total_bytes"));
	json_object_object_add(o, "group", json_object_new_string(g->dir));
	json_object_object_add(o, "reads_writes_split", json_object_new_boolean(0));
	json_object_object_add(o, "note",
			       json_object_new_string("TOTAL bytes (reads + writes) of the VMM's threads "
						      "in this L3 domain: intervals carry total_bytes "
						      "(flag BW_TOTAL), read_bytes and write_bytes are "
						      "null (not measured)"));
	return o;
}

struct json_object *hvt_vm_bw_channels_json(const struct hvt_vm_bw *b)
{
	struct json_object *a = json_object_new_array();

	for (unsigned i = 0; b && i < b->n; i++)
		json_object_array_add(a, b->rdt
					     ? rdt_domain_json(b->rdt, i)
					     : pmu_channel_json(hvt_pmu_channel_at(b->pmu, i), b->host.gen));
	return a;
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
