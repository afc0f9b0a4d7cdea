// SPDX-License-Identifier: MIT
/* The self-test's counter sources on a host: the memory-controller PMU's sampler and resctrl MBM. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/selftest_sources.h"

static int pmu_sample(struct st_source *s, struct st_counts *out, struct hvt_err *e)
{
	struct st_pmu_source *p = s->ctx;
	int rc = hvt_pmu_read(p->sampler, p->counts, e);

	for (unsigned i = 0; !rc && i < s->n; i++)
		out[i] = (struct st_counts){{p->counts[i].read_bytes, p->counts[i].write_bytes},
					    p->counts[i].counted};
	return rc;
}

int st_pmu_source_open(struct st_pmu_source *p, const struct hvt_pmu_host *h, struct hvt_err *e)
{
	int rc;

	memset(p, 0, sizeof(*p));
	if (h->nchannels > ST_MAX_CHANNELS)
		return hvt_err_set(e, -E2BIG, "%u channels: the self-test counts at most %u", h->nchannels,
				   ST_MAX_CHANNELS);
	if ((rc = hvt_pmu_open(&p->sampler, h, NULL, 0, e)))
		return rc;
	p->counts = calloc(h->nchannels ? h->nchannels : 1, sizeof(*p->counts));
	if (!p->counts) {
		hvt_pmu_close(p->sampler);
		return hvt_err_set(e, -ENOMEM, "out of memory");
	}
	p->src = (struct st_source){.name = h->stand_in ? "stand-in pmu" : "pmu",
				    .n = h->nchannels,
				    .split = true,
				    .sample = pmu_sample,
				    .ctx = p};
	for (unsigned i = 0; i < h->nchannels; i++)
		p->src.ids[i] = hvt_pmu_channel_at(p->sampler, i)->id;
	return 0;
}

void st_pmu_source_close(struct st_pmu_source *p)
{
	hvt_pmu_close(p->sampler);
	free(p->counts);
	p->sampler = NULL;
	p->counts = NULL;
}

static int resctrl_sample(struct st_source *s, struct st_counts *out, struct hvt_err *e)
{
	struct st_resctrl_source *p = s->ctx;
	uint64_t bytes[HVT_RESCTRL_MAX_DOMAINS];
	bool avail[HVT_RESCTRL_MAX_DOMAINS];
	int rc = hvt_resctrl_read(&p->group, bytes, avail, e);

	for (unsigned i = 0; !rc && i < s->n; i++)
		out[i] = (struct st_counts){{bytes[i], 0}, avail[i]};
	return rc;
}

int st_resctrl_source_open(struct st_resctrl_source *p, const char *root, struct hvt_err *e)
{
	char name[64];
	int rc;

	memset(p, 0, sizeof(*p));
	snprintf(name, sizeof(name), "hvmtrace-doctor-%d", (int)getpid());
	if ((rc = hvt_resctrl_open(&p->group, root, name, getpid(), e)))
		return rc;
	p->src =
	    (struct st_source){.name = "resctrl", .n = p->group.ndomains, .sample = resctrl_sample, .ctx = p};
	for (unsigned i = 0; i < p->group.ndomains; i++) {
		char domain[sizeof(p->group.domains[i])];

		memcpy(domain, p->group.domains[i], sizeof(domain));
		snprintf(p->ids[i], sizeof(p->ids[i]), "resctrl.%s", domain);
		p->src.ids[i] = p->ids[i];
	}
	return 0;
}

void st_resctrl_source_close(struct st_resctrl_source *p)
{
	hvt_resctrl_close(&p->group);
}
