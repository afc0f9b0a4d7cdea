// SPDX-License-Identifier: MIT
/* What the domain's tracing request implies, whichever way it was read: its RAM's extents, its run
 * directory's paths; and its release. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "libvirt_domain.h"

void hvt_lv_free(struct hvt_lv_domain *d)
{
	struct hvt_lv_trace *t = &d->t;

	free(d->name);
	free(d->qemu_socket);
	free(d->qemu_helper);
	free(d->owners_port);
	free(t->interval);
	free(t->output);
	free(t->mode);
	free(t->chanmap);
	for (size_t i = 0; i < t->nchannels; i++)
		free(t->channels[i]);
	free(t->channels);
	free(t->extents);
	free(t->mem_path);
	free(t->iomem);
	free(t->run_dir);
	memset(d, 0, sizeof(*d));
}

int hvt_lv_extents(const struct hvt_lv_domain *d, struct hvt_range **out, size_t *n, struct hvt_err *e)
{
	const struct hvt_lv_trace *t = &d->t;
	struct hvt_chanmap m;
	uint64_t need = d->memory, total = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (t->ram == HVT_LV_RAM_NONE)
		return 0;
	if (t->ram == HVT_LV_RAM_EXTENTS) {
		for (size_t i = 0; i < t->nextents; i++)
			total += t->extents[i].size;
		if (total != d->memory)
			return hvt_err_set(e, -EINVAL,
					   "the extents hold %llu bytes, the domain's <memory> is %llu bytes",
					   (unsigned long long)total, (unsigned long long)d->memory);
		if (!(*out = malloc(t->nextents * sizeof(**out))))
			return -ENOMEM;
		memcpy(*out, t->extents, t->nextents * sizeof(**out));
		*n = t->nextents;
		return 0;
	}
	hvt_chanmap_init(&m);
	rc = hvt_chanmap_read(t->chanmap, &m, e);
	if (rc)
		return rc;
	for (size_t i = 0; i < t->nchannels && need; i++) {
		int ci = hvt_chanmap_find(&m, t->channels[i]);

		if (ci < 0) {
			rc = hvt_err_set(e, -ENOENT, "channel %s is not in the channel map %s",
					 t->channels[i], t->chanmap);
			goto out;
		}
		for (size_t r = 0; r < m.channels[ci].nranges && need; r++) {
			struct hvt_range x = m.channels[ci].ranges[r],
					 *v = realloc(*out, (*n + 1) * sizeof(*v));

			if (!v) {
				rc = -ENOMEM;
				goto out;
			}
			*out = v;
			if (x.size > need)
				x.size = need;
			(*out)[(*n)++] = x;
			need -= x.size;
		}
	}
	if (need)
		rc = hvt_err_set(e, -ENOSPC,
				 "channels %s%s hold %llu bytes, the domain's <memory> is %llu bytes",
				 t->channels[0], t->nchannels > 1 ? ",…" : "",
				 (unsigned long long)(d->memory - need), (unsigned long long)d->memory);
out:
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	hvt_chanmap_free(&m);
	return rc;
}

void hvt_lv_path(const struct hvt_lv_domain *d, const char *leaf, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s%s%s", d->t.run_dir, d->name, leaf ? "/" : "", leaf ? leaf : "");
}
