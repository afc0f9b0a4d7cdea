// SPDX-License-Identifier: MIT
/*
 * A MODEL memory controller for testing the probe (not hardware, and labelled so wherever it shows): an
 * address → channel function built from a layout of channel-sized pieces laid out from address 0 (an MMIO
 * hole splits the piece it falls into; a piece may interleave several channels at a granule), plus the
 * counters' background: a steady rate with Gaussian spread, hardware-prefetch overshoot on reads, directory
 * writes when a socket reads another socket's memory, and occasional bursts of someone else's traffic.
 * The spec file format is in docs/chanmap.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/probe.h"
#include "hvmtrace/error.h"
#include "hvmtrace/util.h"

#define LINE       64u
#define MAX_TARGET 16

struct segment {
	uint64_t start, size, granule; /* granule: interleave unit in bytes (targets > 1) */
	unsigned ntargets;
	unsigned targets[MAX_TARGET];
};

struct model {
	struct segment *seg;
	size_t nseg;
	double read_rate, write_rate; /* background CAS per second per channel */
	double sigma;                 /* spread of the background per window, in CAS */
	double prefetch;              /* reads overshoot by up to this fraction */
	double remote_dir;            /* directory writes per remote line read */
	uint64_t spike_every, spike_cas;
	uint64_t rng;
};

/* ---- random numbers (splitmix64; Box-Muller) ---- */

static uint64_t next_u64(struct model *m)
{
	uint64_t z = (m->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double uniform(struct model *m)
{
	return ((double)(next_u64(m) >> 11) + 0.5) / 9007199254740992.0;
}

static double gaussian(struct model *m)
{
	return sqrt(-2 * log(uniform(m))) * cos(2 * M_PI * uniform(m));
}

/* ---- windows ---- */

static bool inside_touchable(const struct hvt_probe_backend *b, uint64_t a, uint64_t n)
{
	for (size_t i = 0; i < b->ntouchable; i++)
		if (b->touchable[i].start <= a && a + n <= b->touchable[i].start + b->touchable[i].size)
			return true;
	return false;
}

/* Lines of [a, a+n) that land on each channel. */
static void lines_per_channel(const struct model *m, uint64_t a, uint64_t n, double *lines)
{
	uint64_t end = a + n;
	for (size_t i = 0; i < m->nseg; i++) {
		const struct segment *s = &m->seg[i];
		uint64_t lo = a > s->start ? a : s->start,
			 hi = end < s->start + s->size ? end : s->start + s->size;
		if (lo >= hi)
			continue;
		if (s->ntargets == 1) {
			lines[s->targets[0]] += (double)((hi - lo) / LINE);
			continue;
		}
		for (uint64_t x = lo; x < hi;) {
			uint64_t next = (x / s->granule + 1) * s->granule;
			if (next > hi)
				next = hi;
			lines[s->targets[(x / s->granule) % s->ntargets]] += (double)((next - x) / LINE);
			x = next;
		}
	}
}

static uint64_t background(struct model *m, double rate, uint64_t window_ns)
{
	double v = rate * (double)window_ns / 1e9 + m->sigma * gaussian(m);
	return v > 0 ? (uint64_t)llround(v) : 0;
}

static int model_window(struct hvt_probe_backend *b, const struct hvt_probe_touch *t, uint64_t *rd,
			uint64_t *wr, struct hvt_err *e)
{
	struct model *m = b->ctx;
	size_t nch = b->proto.nchannels;
	double lines[HVT_PROBE_MAX_CHANNELS] = {0};

	for (size_t c = 0; c < nch; c++) {
		rd[c] = background(m, m->read_rate, t->window_ns);
		wr[c] = background(m, m->write_rate, t->window_ns);
	}
	if (t->dir != HVT_PROBE_IDLE) {
		if (!inside_touchable(b, t->hpa, t->bytes))
			return hvt_err_set(e, -EFAULT,
					   "MODEL: the probe drove 0x%" PRIx64 "+0x%" PRIx64
					   ", which is not touchable memory",
					   t->hpa, t->bytes);
		lines_per_channel(m, t->hpa, t->bytes, lines);
		for (size_t c = 0; c < nch; c++) {
			double n = lines[c] * t->reps;
			if (t->dir == HVT_PROBE_WRITE) {
				wr[c] += (uint64_t)n;
				continue;
			}
			rd[c] += (uint64_t)(n * (1 + m->prefetch * uniform(m)));
			if (b->proto.channels[c].socket != t->socket)
				wr[c] += (uint64_t)(n * m->remote_dir);
		}
	}
	if (m->spike_every && next_u64(m) % m->spike_every == 0)
		rd[next_u64(m) % nch] += m->spike_cas;
	return 0;
}

static void model_destroy(struct hvt_probe_backend *b)
{
	struct model *m = b->ctx;
	free(m->seg);
	free(m);
}

/* ---- the spec file ---- */

struct spec {
	const char *path;
	struct hvt_err *e;
};

static int spec_bad(struct spec *sp, const char *what)
{
	return hvt_err_set(sp->e, -EINVAL, "model %s: %s", sp->path, what);
}

/* "0x…" hex, or a size with a binary suffix ("4G"). */
static int addr_of(struct json_object *v, uint64_t *out)
{
	const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
	char *end;
	if (!s)
		return -EINVAL;
	if (!strncmp(s, "0x", 2)) {
		errno = 0;
		*out = strtoull(s, &end, 16);
		return *end || errno ? -EINVAL : 0;
	}
	if (!strcmp(s, "0")) {
		*out = 0;
		return 0;
	}
	return hvt_parse_size(s, out);
}

static int get_addr(struct spec *sp, struct json_object *o, const char *key, const char *where, uint64_t *out)
{
	struct json_object *v;
	char what[160];
	if (json_object_object_get_ex(o, key, &v) && !addr_of(v, out))
		return 0;
	snprintf(what, sizeof(what), "%s: \"%s\" is missing or not an address (\"0x…\" or \"4G\")", where,
		 key);
	return spec_bad(sp, what);
}

static double get_num(struct json_object *o, const char *key, double dflt)
{
	struct json_object *v;
	return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : dflt;
}

static int add_channels(struct spec *sp, struct json_object *o, struct hvt_chanmap *p)
{
	unsigned nmc = (unsigned)get_num(o, "controllers", 0),
		 ncc = (unsigned)get_num(o, "channels_per_controller", 0);
	p->sockets = (unsigned)get_num(o, "sockets", 0);
	if (!p->sockets || !nmc || !ncc || p->sockets * nmc * ncc > HVT_PROBE_MAX_CHANNELS)
		return spec_bad(
		    sp, "\"sockets\", \"controllers\" and \"channels_per_controller\" must be set (at "
			"most 128 channels)");
	for (unsigned s = 0; s < p->sockets; s++)
		for (unsigned mc = 0; mc < nmc; mc++)
			for (unsigned ch = 0; ch < ncc; ch++) {
				struct hvt_chanmap_channel c = {.socket = s, .controller = mc, .channel = ch};
				/* Bounded by the 128-channel check above, so the id fits. */
				snprintf(c.id, sizeof(c.id), "s%u.mc%u.ch%u", s & 0xff, mc & 0xff, ch & 0xff);
				snprintf(c.pmu, sizeof(c.pmu), "uncore_imc_%u", mc * ncc + ch);
				int rc = hvt_chanmap_add_channel(p, &c, sp->e);
				if (rc < 0)
					return rc;
			}
	return 0;
}

static int add_segment(struct model *m, const struct segment *s)
{
	struct segment *n = realloc(m->seg, (m->nseg + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	m->seg = n;
	n[m->nseg++] = *s;
	return 0;
}

/* Lays the pieces out from 0, skipping the hole; returns the end of DRAM in *end. */
static int read_layout(struct spec *sp, struct json_object *o, const struct hvt_chanmap *p, struct model *m,
		       uint64_t *end)
{
	struct json_object *layout, *hole, *v;
	uint64_t hs = 0, he = 0, at = 0;
	int rc;

	if (json_object_object_get_ex(o, "hole", &hole) && ((rc = get_addr(sp, hole, "start", "hole", &hs)) ||
							    (rc = get_addr(sp, hole, "end", "hole", &he))))
		return rc;
	if (!json_object_object_get_ex(o, "layout", &layout) || !json_object_is_type(layout, json_type_array))
		return spec_bad(sp, "no \"layout\" array");
	for (size_t i = 0; i < json_object_array_length(layout); i++) {
		struct json_object *it = json_object_array_get_idx(layout, i), *chs;
		struct segment s = {.granule = (uint64_t)get_num(it, "granule", 256)};
		uint64_t left;
		char where[32];

		snprintf(where, sizeof(where), "layout[%zu]", i);
		if ((rc = get_addr(sp, it, "size", where, &left)))
			return rc;
		if (!json_object_object_get_ex(it, "channels", &chs) ||
		    !json_object_is_type(chs, json_type_array) || !json_object_array_length(chs) ||
		    json_object_array_length(chs) > MAX_TARGET || !s.granule || s.granule % LINE)
			return spec_bad(
			    sp, "a layout piece needs \"channels\" (1-16 ids) and a granule that is a "
				"multiple of 64");
		for (size_t j = 0; j < json_object_array_length(chs); j++) {
			v = json_object_array_get_idx(chs, j);
			int ci = hvt_chanmap_find(p, json_object_get_string(v));
			if (ci < 0)
				return spec_bad(sp, "a layout piece names a channel the model does not have");
			s.targets[s.ntargets++] = (unsigned)ci;
		}
		while (left) {
			if (at >= hs && at < he)
				at = he;
			s.start = at;
			s.size = at < hs && at + left > hs ? hs - at : left;
			if (add_segment(m, &s))
				return hvt_err_set(sp->e, -ENOMEM, "out of memory");
			at += s.size;
			left -= s.size;
		}
	}
	*end = at;
	return 0;
}

static bool is_dram(const struct model *m, uint64_t a, uint64_t n)
{
	for (uint64_t x = a; x < a + n;) {
		size_t i;
		for (i = 0; i < m->nseg; i++)
			if (m->seg[i].start <= x && x < m->seg[i].start + m->seg[i].size)
				break;
		if (i == m->nseg)
			return false;
		x = m->seg[i].start + m->seg[i].size;
	}
	return true;
}

static int read_touchable(struct spec *sp, struct json_object *o, struct hvt_probe_backend *b, uint64_t end)
{
	struct json_object *t;
	if (!json_object_object_get_ex(o, "touchable", &t) || !json_object_is_type(t, json_type_array))
		return spec_bad(sp, "no \"touchable\" array (the memory the probe may drive)");
	b->ntouchable = json_object_array_length(t);
	b->touchable = calloc(b->ntouchable ? b->ntouchable : 1, sizeof(*b->touchable));
	if (!b->touchable)
		return hvt_err_set(sp->e, -ENOMEM, "out of memory");
	for (size_t i = 0; i < b->ntouchable; i++) {
		struct json_object *it = json_object_array_get_idx(t, i), *v;
		struct hvt_range *r = &b->touchable[i];
		int rc = get_addr(sp, it, "start", "touchable", &r->start);
		if (rc)
			return rc;
		if (json_object_object_get_ex(it, "size", &v) && !strcmp(json_object_get_string(v), "rest"))
			r->size = end > r->start ? end - r->start : 0;
		else if ((rc = get_addr(sp, it, "size", "touchable", &r->size)))
			return rc;
		if (!r->size || r->start % 4096 || r->size % 4096 ||
		    (i && r->start < r[-1].start + r[-1].size) || !is_dram(b->ctx, r->start, r->size))
			return spec_bad(sp,
					"touchable ranges must be page aligned, sorted, not overlapping and "
					"DRAM of the model (not the hole, not past the end)");
	}
	return 0;
}

/* The background: absent members are 0 (no noise of that kind); the seed defaults to 1. */
static void read_noise(struct model *m, struct json_object *noise)
{
	m->read_rate = get_num(noise, "read_mbps", 0) * 1e6 / LINE;
	m->write_rate = get_num(noise, "write_mbps", 0) * 1e6 / LINE;
	m->sigma = get_num(noise, "sigma_cas", 0);
	m->prefetch = get_num(noise, "prefetch", 0);
	m->remote_dir = get_num(noise, "remote_dir_writes", 0);
	m->spike_every = (uint64_t)get_num(noise, "spike_every", 0);
	m->spike_cas = (uint64_t)get_num(noise, "spike_cas", 0);
	m->rng = (uint64_t)get_num(noise, "seed", 1);
}

static int load(struct spec *sp, struct json_object *o, struct hvt_probe_backend *b)
{
	struct model *m = b->ctx;
	struct json_object *cpu, *noise, *v;
	uint64_t end = 0;
	int rc;

	if (!json_object_is_type(o, json_type_object))
		return spec_bad(sp, "is not a JSON object");
	hvt_chanmap_init(&b->proto);
	snprintf(b->proto.source, sizeof(b->proto.source), "MODEL memory controller (not hardware): %s",
		 sp->path);
	snprintf(b->proto.host.hostname, sizeof(b->proto.host.hostname), "%s",
		 json_object_object_get_ex(o, "model", &v) ? json_object_get_string(v) : "model");
	snprintf(b->proto.host.kernel, sizeof(b->proto.host.kernel), "none (model)");
	snprintf(b->proto.probe.memory, sizeof(b->proto.probe.memory), "model");
	if (json_object_object_get_ex(o, "cpu", &cpu)) {
		struct json_object *x;
#define STR(k)                                                                                               \
	if (json_object_object_get_ex(cpu, #k, &x))                                                          \
	snprintf(b->proto.cpu.k, sizeof(b->proto.cpu.k), "%s", json_object_get_string(x))
		STR(vendor);
		STR(name);
		STR(generation);
#undef STR
		b->proto.cpu.family = (unsigned)get_num(cpu, "family", 0);
		b->proto.cpu.model = (unsigned)get_num(cpu, "model", 0);
	}
	if ((rc = add_channels(sp, o, &b->proto)) || (rc = read_layout(sp, o, &b->proto, m, &end)) ||
	    (rc = read_touchable(sp, o, b, end)))
		return rc;
	noise = json_object_object_get_ex(o, "noise", &v) ? v : NULL;
	read_noise(m, noise);
	return 0;
}

int hvt_probe_model_open(const char *path, struct hvt_probe_backend **out, struct hvt_err *e)
{
	struct spec sp = {path, e};
	struct json_object *o = NULL;
	struct hvt_probe_backend *b;
	enum json_tokener_error jerr = json_tokener_success;
	char *text;
	int rc;

	*out = NULL;
	if (hvt_read_file(path, "model", HVT_PROBE_MODEL_MAX_BYTES, &text, NULL, e))
		return -EINVAL;
	o = json_tokener_parse_verbose(text, &jerr);
	free(text);
	if (!(b = hvt_probe_backend_new(sizeof(struct model), model_window, model_destroy, e))) {
		json_object_put(o);
		return -ENOMEM;
	}
	if (!o)
		rc = hvt_err_set(e, -EINVAL, "model %s: cannot read it as JSON: %s", path,
				 json_tokener_error_desc(jerr));
	else
		rc = load(&sp, o, b);
	json_object_put(o);
	if (rc) {
		hvt_probe_backend_destroy(b);
		return rc;
	}
	*out = b;
	return 0;
}

int hvt_probe_model_expected(const struct hvt_probe_backend *b, struct hvt_chanmap *out, struct hvt_err *e)
{
	const struct model *m = b->ctx;
	int rc = 0;

	if (b->window != model_window)
		return hvt_err_set(e, -EINVAL, "only a model knows the right answer");
	hvt_chanmap_init(out);
	out->sockets = b->proto.sockets;
	for (size_t i = 0; i < b->proto.nchannels && rc >= 0; i++)
		rc = hvt_chanmap_add_channel(out, &b->proto.channels[i], e);
	/* Segments are in address order, touchable too: intersect them in order. */
	for (size_t t = 0; t < b->ntouchable && rc >= 0; t++)
		for (size_t i = 0; i < m->nseg && rc >= 0; i++) {
			const struct segment *s = &m->seg[i];
			const struct hvt_range *r = &b->touchable[t];
			uint64_t lo = r->start > s->start ? r->start : s->start;
			uint64_t hi =
			    r->start + r->size < s->start + s->size ? r->start + r->size : s->start + s->size;
			if (lo >= hi)
				continue;
			if (s->ntargets == 1) {
				rc = hvt_chanmap_add_range(out, s->targets[0], lo, hi - lo);
				continue;
			}
			unsigned sorted[MAX_TARGET], n = 0;
			for (size_t c = 0; c < b->proto.nchannels; c++)
				for (unsigned k = 0; k < s->ntargets; k++)
					if (s->targets[k] == c) {
						sorted[n++] = (unsigned)c;
						break;
					}
			rc = hvt_chanmap_add_interleave(out, lo, hi - lo, sorted, n);
		}
	if (rc < 0) {
		hvt_chanmap_free(out);
		return hvt_err_set(e, rc, "out of memory");
	}
	return 0;
}

int hvt_probe_model_set_noise(struct hvt_probe_backend *b, const char *noise_json, uint64_t seed,
			      struct hvt_err *e)
{
	struct json_object *o;

	if (b->window != model_window)
		return hvt_err_set(e, -EINVAL, "only a model has a noise level to set");
	if (!(o = json_tokener_parse(noise_json)) || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return hvt_err_set(e, -EINVAL, "model noise: not a JSON object: %s", noise_json);
	}
	read_noise(b->ctx, o);
	((struct model *)b->ctx)->rng = seed;
	json_object_put(o);
	return 0;
}
