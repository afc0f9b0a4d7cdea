// SPDX-License-Identifier: MIT
/* The channel map in memory: building, invariants and lookups (the JSON side is chanmap_json.c). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"

#define PAGE 4096ull

void hvt_chanmap_init(struct hvt_chanmap *m)
{
	memset(m, 0, sizeof(*m));
}

void hvt_chanmap_free(struct hvt_chanmap *m)
{
	for (size_t i = 0; i < m->nchannels; i++) {
		free(m->channels[i].ranges);
		free(m->channels[i].confidence);
	}
	for (size_t i = 0; i < m->ninterleaved; i++)
		free(m->interleaved[i].channels);
	free(m->channels);
	free(m->interleaved);
	hvt_chanmap_init(m);
}

bool hvt_chanmap_parse_id(const char *id, unsigned *socket, unsigned *controller, unsigned *channel)
{
	unsigned s, c, h;
	int n = -1;

	if (sscanf(id, "s%u.mc%u.ch%u%n", &s, &c, &h, &n) != 3 || n < 0 || id[n] != '\0')
		return false;
	/* Canonical spelling only (no "s01"), so ids compare as strings. */
	char again[HVT_CHANNEL_MAX];
	snprintf(again, sizeof(again), "s%u.mc%u.ch%u", s, c, h);
	if (strcmp(again, id))
		return false;
	*socket = s, *controller = c, *channel = h;
	return true;
}

int hvt_chanmap_find(const struct hvt_chanmap *m, const char *id)
{
	for (size_t i = 0; i < m->nchannels; i++)
		if (!strcmp(m->channels[i].id, id))
			return (int)i;
	return -1;
}

int hvt_chanmap_add_channel(struct hvt_chanmap *m, const struct hvt_chanmap_channel *c, struct hvt_err *e)
{
	unsigned s, mc, ch;

	if (!hvt_chanmap_parse_id(c->id, &s, &mc, &ch) || s != c->socket || mc != c->controller ||
	    ch != c->channel)
		return hvt_err_set(
		    e, -EINVAL,
		    "channel id '%s' does not read s<socket>.mc<controller>.ch<channel> for socket %u, controller %u, channel %u",
		    c->id, c->socket, c->controller, c->channel);
	if (hvt_chanmap_find(m, c->id) >= 0)
		return hvt_err_set(e, -EINVAL, "channel '%s' is listed twice", c->id);
	struct hvt_chanmap_channel *n = realloc(m->channels, (m->nchannels + 1) * sizeof(*n));
	if (!n)
		return hvt_err_set(e, -ENOMEM, "out of memory");
	m->channels = n;
	n[m->nchannels] = *c;
	n[m->nchannels].ranges = NULL;
	n[m->nchannels].nranges = 0;
	n[m->nchannels].confidence = NULL;
	return (int)m->nchannels++;
}

int hvt_chanmap_add_range(struct hvt_chanmap *m, size_t ci, uint64_t start, uint64_t size)
{
	struct hvt_chanmap_channel *c = &m->channels[ci];

	if (c->nranges && c->ranges[c->nranges - 1].start + c->ranges[c->nranges - 1].size == start) {
		c->ranges[c->nranges - 1].size += size;
		return 0;
	}
	struct hvt_range *r = realloc(c->ranges, (c->nranges + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	c->ranges = r;
	if (c->confidence) {
		double *x = realloc(c->confidence, (c->nranges + 1) * sizeof(*x));
		if (!x)
			return -ENOMEM;
		c->confidence = x;
		x[c->nranges] = -1;
	}
	r[c->nranges++] = (struct hvt_range){start, size};
	return 0;
}

int hvt_chanmap_set_confidence(struct hvt_chanmap *m, size_t ci, size_t ri, double confidence)
{
	struct hvt_chanmap_channel *c = &m->channels[ci];

	if (!c->confidence) {
		if (!(c->confidence = malloc((c->nranges ? c->nranges : 1) * sizeof(double))))
			return -ENOMEM;
		for (size_t i = 0; i < c->nranges; i++)
			c->confidence[i] = -1;
	}
	c->confidence[ri] = confidence;
	return 0;
}

double hvt_chanmap_confidence(const struct hvt_chanmap_channel *c, size_t ri)
{
	return c->confidence ? c->confidence[ri] : -1;
}

static bool same_channels(const struct hvt_chanmap_interleave *il, const unsigned *ch, size_t n)
{
	return il->nchannels == n && !memcmp(il->channels, ch, n * sizeof(*ch));
}

int hvt_chanmap_add_interleave(struct hvt_chanmap *m, uint64_t start, uint64_t size, const unsigned *channels,
			       size_t nchannels)
{
	if (m->ninterleaved) {
		struct hvt_chanmap_interleave *last = &m->interleaved[m->ninterleaved - 1];
		if (last->range.start + last->range.size == start &&
		    same_channels(last, channels, nchannels)) {
			last->range.size += size;
			return 0;
		}
	}
	struct hvt_chanmap_interleave *n = realloc(m->interleaved, (m->ninterleaved + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	m->interleaved = n;
	unsigned *ch = malloc(nchannels * sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	memcpy(ch, channels, nchannels * sizeof(*ch));
	n[m->ninterleaved++] = (struct hvt_chanmap_interleave){{start, size}, nchannels, ch, -1};
	return 0;
}

/* Every range of the map, tagged with its owner, for the overlap check. */
struct owned_range {
	struct hvt_range r;
	long owner; /* channel index, or -(interleave index + 1) */
};

static int cmp_owned(const void *a, const void *b)
{
	const struct owned_range *x = a, *y = b;
	return x->r.start < y->r.start ? -1 : x->r.start > y->r.start;
}

static void owner_name(const struct hvt_chanmap *m, long owner, char *buf, size_t len)
{
	if (owner >= 0)
		snprintf(buf, len, "channel %s", m->channels[owner].id);
	else
		snprintf(buf, len, "interleaved region %ld", -owner - 1);
}

static int check_range(const struct hvt_range *r, const char *what, struct hvt_err *e)
{
	if (r->size == 0 || r->start % PAGE || r->size % PAGE)
		return hvt_err_set(e, -EINVAL,
				   "%s: range 0x%" PRIx64 "+0x%" PRIx64 " is empty or not 4 KiB aligned",
				   what, r->start, r->size);
	if (r->start + r->size < r->start)
		return hvt_err_set(e, -EINVAL, "%s: range 0x%" PRIx64 "+0x%" PRIx64 " overflows", what,
				   r->start, r->size);
	return 0;
}

static int validate_channels(const struct hvt_chanmap *m, size_t *nall, struct hvt_err *e)
{
	for (size_t i = 0; i < m->nchannels; i++) {
		const struct hvt_chanmap_channel *c = &m->channels[i];
		unsigned s, mc, ch;

		if (!hvt_chanmap_parse_id(c->id, &s, &mc, &ch) || s != c->socket || mc != c->controller ||
		    ch != c->channel)
			return hvt_err_set(
			    e, -EINVAL,
			    "channel '%s': the id does not match socket %u, controller %u, channel %u (ids read s<socket>.mc<controller>.ch<channel>)",
			    c->id, c->socket, c->controller, c->channel);
		if (c->socket >= m->sockets)
			return hvt_err_set(e, -EINVAL,
					   "channel '%s' is on socket %u but the map has %u sockets", c->id,
					   c->socket, m->sockets);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(m->channels[j].id, c->id))
				return hvt_err_set(e, -EINVAL, "channel '%s' is listed twice", c->id);
		for (size_t r = 0; r < c->nranges; r++) {
			int rc = check_range(&c->ranges[r], c->id, e);
			if (rc)
				return rc;
		}
		*nall += c->nranges;
	}
	return 0;
}

int hvt_chanmap_validate(const struct hvt_chanmap *m, struct hvt_err *e)
{
	size_t nall = 0, k = 0;
	int rc = validate_channels(m, &nall, e);

	if (rc)
		return rc;
	for (size_t i = 0; i < m->ninterleaved; i++) {
		const struct hvt_chanmap_interleave *il = &m->interleaved[i];
		char what[48];

		snprintf(what, sizeof(what), "interleaved region %zu", i);
		if ((rc = check_range(&il->range, what, e)))
			return rc;
		if (il->nchannels < 2)
			return hvt_err_set(e, -EINVAL,
					   "%s names %zu channel(s); an interleave needs at least 2", what,
					   il->nchannels);
		for (size_t j = 0; j < il->nchannels; j++)
			if (il->channels[j] >= m->nchannels)
				return hvt_err_set(e, -EINVAL, "%s names a channel that is not in the map",
						   what);
		nall++;
	}
	struct owned_range *all = calloc(nall ? nall : 1, sizeof(*all));
	if (!all)
		return hvt_err_set(e, -ENOMEM, "out of memory");
	for (size_t i = 0; i < m->nchannels; i++)
		for (size_t r = 0; r < m->channels[i].nranges; r++)
			all[k++] = (struct owned_range){m->channels[i].ranges[r], (long)i};
	for (size_t i = 0; i < m->ninterleaved; i++)
		all[k++] = (struct owned_range){m->interleaved[i].range, -(long)i - 1};
	qsort(all, nall, sizeof(*all), cmp_owned);
	for (size_t i = 1; i < nall && !rc; i++) {
		if (all[i - 1].r.start + all[i - 1].r.size > all[i].r.start) {
			char a[64], b[64];
			owner_name(m, all[i - 1].owner, a, sizeof(a));
			owner_name(m, all[i].owner, b, sizeof(b));
			rc = hvt_err_set(
			    e, -EINVAL,
			    "%s range 0x%" PRIx64 "+0x%" PRIx64 " overlaps %s range 0x%" PRIx64 "+0x%" PRIx64,
			    a, all[i - 1].r.start, all[i - 1].r.size, b, all[i].r.start, all[i].r.size);
		}
	}
	free(all);
	return rc;
}

static bool overlaps(const struct hvt_range *r, uint64_t start, uint64_t end)
{
	return r->start < end && start < r->start + r->size;
}

int hvt_chanmap_channel_of(const struct hvt_chanmap *m, uint64_t start, uint64_t size, struct hvt_err *e)
{
	uint64_t end = start + size;

	for (size_t i = 0; i < m->nchannels; i++) {
		const struct hvt_chanmap_channel *c = &m->channels[i];
		for (size_t r = 0; r < c->nranges; r++) {
			const struct hvt_range *x = &c->ranges[r];
			if (!overlaps(x, start, end))
				continue;
			if (x->start <= start && end <= x->start + x->size)
				return (int)i;
			return hvt_err_set(e, -ERANGE,
					   "extent 0x%" PRIx64 "+0x%" PRIx64
					   " is only partly in channel %s (its range 0x%" PRIx64 "+0x%" PRIx64
					   "): it would cross channels",
					   start, size, c->id, x->start, x->size);
		}
	}
	for (size_t i = 0; i < m->ninterleaved; i++)
		if (overlaps(&m->interleaved[i].range, start, end))
			return hvt_err_set(
			    e, -ERANGE,
			    "extent 0x%" PRIx64 "+0x%" PRIx64 " overlaps an interleaved region (0x%" PRIx64
			    "+0x%" PRIx64 "): its bandwidth cannot be told apart per channel",
			    start, size, m->interleaved[i].range.start, m->interleaved[i].range.size);
	return hvt_err_set(e, -ENOENT, "extent 0x%" PRIx64 "+0x%" PRIx64 " is in no channel of the map",
			   start, size);
}

static bool ranges_equal(const struct hvt_range *a, size_t na, const struct hvt_range *b, size_t nb)
{
	return na == nb && (!na || !memcmp(a, b, na * sizeof(*a)));
}

int hvt_chanmap_compare(const struct hvt_chanmap *want, const struct hvt_chanmap *got, char *diff, size_t len)
{
	int n = 0;

	diff[0] = '\0';
	for (size_t i = 0; i < want->nchannels; i++) {
		const struct hvt_chanmap_channel *w = &want->channels[i];
		int gi = hvt_chanmap_find(got, w->id);
		const struct hvt_chanmap_channel *g = gi >= 0 ? &got->channels[gi] : NULL;
		if (g && ranges_equal(w->ranges, w->nranges, g->ranges, g->nranges))
			continue;
		if (!n++)
			snprintf(diff, len,
				 "channel %s: expected %zu range(s) (first 0x%" PRIx64 "+0x%" PRIx64
				 "), got %zu (first 0x%" PRIx64 "+0x%" PRIx64 ")",
				 w->id, w->nranges, w->nranges ? w->ranges[0].start : 0,
				 w->nranges ? w->ranges[0].size : 0, g ? g->nranges : 0,
				 g && g->nranges ? g->ranges[0].start : 0,
				 g && g->nranges ? g->ranges[0].size : 0);
	}
	bool il_same = want->ninterleaved == got->ninterleaved;
	for (size_t i = 0; il_same && i < want->ninterleaved; i++)
		il_same = want->interleaved[i].range.start == got->interleaved[i].range.start &&
			  want->interleaved[i].range.size == got->interleaved[i].range.size &&
			  want->interleaved[i].nchannels == got->interleaved[i].nchannels &&
			  !memcmp(want->interleaved[i].channels, got->interleaved[i].channels,
				  want->interleaved[i].nchannels * sizeof(unsigned));
	if (!il_same && !n++)
		snprintf(diff, len, "interleaved regions: expected %zu, got %zu (or they differ)",
			 want->ninterleaved, got->ninterleaved);
	return n;
}
