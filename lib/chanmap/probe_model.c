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
#include "hvmtrace/json_read.h"
#include "hvmtrace/util.h"

#define LINE       64u
#define MAX_TARGET 16

/*
 * A piece of the layout. Interleaved (targets > 1): consecutive granules go to consecutive groups of
 * `group` targets, and within a group consecutive inner granules go to consecutive targets (nested
 * interleave, e.g. controllers at 4 KiB and their channels at 256 B); group 1 is a plain interleave.
 */
struct segment {
	uint64_t start, size, granule, inner_granule;
	unsigned ntargets, group;
	unsigned targets[MAX_TARGET];
};

/* Someone else's traffic on one counter: a burst of cas per window for `left` more windows. */
struct burst {
	uint64_t cas;
	unsigned left;
};

#define MAX_HOLES 8

struct model {
	struct segment *seg;
	size_t nseg;
	/* background CAS per second, and its spread per window in CAS, per channel */
	double read_rate[HVT_PROBE_MAX_CHANNELS], write_rate[HVT_PROBE_MAX_CHANNELS];
	double sigma[HVT_PROBE_MAX_CHANNELS];
	double prefetch;   /* reads overshoot by up to this fraction */
	double remote_dir; /* directory writes per remote line read */
	uint64_t spike_every, spike_cas, write_spike_every, write_spike_cas;
	unsigned burst_windows; /* a burst lasts 1 to this many windows */
	struct burst rd_burst[HVT_PROBE_MAX_CHANNELS], wr_burst[HVT_PROBE_MAX_CHANNELS];
	uint64_t rng;
};

/* ---- random numbers (splitmix64; Box-Muller) ---- */

static uint64_t next_u64(struct model *m)
{
	return hvt_splitmix64(&m->rng);
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
		/* The fast path: whole periods of the interleave spread evenly over its targets. */
		uint64_t period = s->granule * (s->ntargets / s->group);
		if (lo % period == 0 && (hi - lo) % period == 0 &&
		    (s->group == 1 || s->granule % (s->inner_granule * s->group) == 0)) {
			for (unsigned k = 0; k < s->ntargets; k++)
				lines[s->targets[k]] += (double)((hi - lo) / s->ntargets / LINE);
			continue;
		}
		uint64_t step = s->group > 1 && s->inner_granule < s->granule ? s->inner_granule : s->granule;
		for (uint64_t x = lo; x < hi;) {
			uint64_t next = (x / step + 1) * step;
			if (next > hi)
				next = hi;
			unsigned g = (unsigned)((x / s->granule) % (s->ntargets / s->group)),
				 k = (unsigned)((x / s->inner_granule) % s->group);
			lines[s->targets[g * s->group + k]] += (double)((next - x) / LINE);
			x = next;
		}
	}
}

static uint64_t background(struct model *m, double rate, double sigma, uint64_t window_ns)
{
	double v = rate * (double)window_ns / 1e9 + sigma * gaussian(m);
	return v > 0 ? (uint64_t)llround(v) : 0;
}

/* Other traffic: running bursts go on; one window in `every` starts a burst of cas on a random channel,
 * lasting 1 to burst_windows windows. */
static void bursts(struct model *m, struct burst *b, uint64_t *count, size_t nch, uint64_t every,
		   uint64_t cas)
{
	for (size_t c = 0; c < nch; c++)
		if (b[c].left) {
			count[c] += b[c].cas;
			b[c].left--;
		}
	if (every && next_u64(m) % every == 0) {
		size_t c = next_u64(m) % nch;
		unsigned len = m->burst_windows > 1 ? 1 + (unsigned)(next_u64(m) % m->burst_windows) : 1;
		count[c] += cas;
		b[c] = (struct burst){cas, len - 1};
	}
}

static int model_window(struct hvt_probe_backend *b, const struct hvt_probe_touch *t, uint64_t *rd,
			uint64_t *wr, struct hvt_err *e)
{
	struct model *m = b->ctx;
	size_t nch = b->proto.nchannels;
	double lines[HVT_PROBE_MAX_CHANNELS] = {0};

	for (size_t c = 0; c < nch; c++) {
		rd[c] = background(m, m->read_rate[c], m->sigma[c], t->window_ns);
		wr[c] = background(m, m->write_rate[c], m->sigma[c], t->window_ns);
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
	bursts(m, m->rd_burst, rd, nch, m->spike_every, m->spike_cas);
	bursts(m, m->wr_burst, wr, nch, m->write_spike_every, m->write_spike_cas);
	return 0;
}

static void model_destroy(struct hvt_probe_backend *b)
{
	struct model *m = b->ctx;
	free(m->seg);
	free(m);
}

/* ---- the spec file ---- */

/* A refusal of the spec that no one member explains, naming the object (in's where) and the rule. */
static int spec_bad(const struct hvt_json_in *in, const char *what)
{
	return hvt_err_set(in->err, -EINVAL, "%s: %s", in->where, what);
}

static int add_channels(const struct hvt_json_in *in, struct hvt_chanmap *p)
{
	unsigned nmc = 0, ncc = 0;
	int rc;

	p->sockets = 0;
	if ((rc = HVT_JSON_OPT(hvt_json_u32, in, "sockets", 0, HVT_PROBE_MAX_CHANNELS, &p->sockets)) ||
	    (rc = HVT_JSON_OPT(hvt_json_u32, in, "controllers", 0, HVT_PROBE_MAX_CHANNELS, &nmc)) ||
	    (rc = HVT_JSON_OPT(hvt_json_u32, in, "channels_per_controller", 0, HVT_PROBE_MAX_CHANNELS, &ncc)))
		return rc;
	if (!p->sockets || !nmc || !ncc || p->sockets * nmc * ncc > HVT_PROBE_MAX_CHANNELS)
		return spec_bad(
		    in,
		    "\"sockets\", \"controllers\" and \"channels_per_controller\" must be set (at most 128 channels)");
	for (unsigned s = 0; s < p->sockets; s++)
		for (unsigned mc = 0; mc < nmc; mc++)
			for (unsigned ch = 0; ch < ncc; ch++) {
				struct hvt_chanmap_channel c = {.socket = s, .controller = mc, .channel = ch};
				/* Bounded by the 128-channel check above, so the id fits. */
				snprintf(c.id, sizeof(c.id), "s%u.mc%u.ch%u", s & 0xff, mc & 0xff, ch & 0xff);
				snprintf(c.pmu, sizeof(c.pmu), "uncore_imc_%u", mc * ncc + ch);
				rc = hvt_chanmap_add_channel(p, &c, in->err);
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

static int read_hole(const struct hvt_json_in *hole, uint64_t *hs, uint64_t *he)
{
	int rc = hvt_json_size(hole, "start", hs);

	return rc ? rc : hvt_json_size(hole, "end", he);
}

/* "hole" (one) and/or "holes" (several): MMIO holes, sorted; at most MAX_HOLES. */
static int read_holes(const struct hvt_json_in *in, uint64_t *hs, uint64_t *he, size_t *n)
{
	struct hvt_json_in one, many;
	size_t nmany = 0;
	int rc;

	*n = 0;
	if (hvt_json_has(in, "hole")) {
		if ((rc = hvt_json_object(in, "hole", &one)) || (rc = read_hole(&one, &hs[0], &he[0])))
			return rc;
		(*n)++;
	}
	if (hvt_json_has(in, "holes") && (rc = hvt_json_array(in, "holes", MAX_HOLES - *n, &many, &nmany)))
		return rc;
	for (size_t i = 0; i < nmany; i++, (*n)++) {
		struct hvt_json_in h;

		if ((rc = hvt_json_item_object(&many, i, &h)) || (rc = read_hole(&h, &hs[*n], &he[*n])))
			return rc;
	}
	for (size_t i = 0; i < *n; i++)
		if (he[i] <= hs[i] || (i && hs[i] < he[i - 1]))
			return spec_bad(in,
					"holes must be sorted, not overlapping, each ending after it starts");
	return 0;
}

/* The next address at or after at that is not in a hole, and where the next hole starts (or UINT64_MAX). */
static uint64_t skip_holes(const uint64_t *hs, const uint64_t *he, size_t n, uint64_t at, uint64_t *next_hole)
{
	for (size_t i = 0; i < n; i++)
		if (at >= hs[i] && at < he[i])
			at = he[i];
	*next_hole = UINT64_MAX;
	for (size_t i = 0; i < n; i++)
		if (hs[i] >= at) {
			*next_hole = hs[i];
			break;
		}
	return at;
}

/* A piece's channels: "channels" (a list: one channel, or a plain interleave) or "groups" (a list of lists
 * of equal length: nested interleave, "granule" between groups, "inner_granule" within one). */
static int read_targets(const struct hvt_json_in *it, const struct hvt_chanmap *p, struct segment *s)
{
	struct hvt_json_in groups, chs;
	bool nested = hvt_json_has(it, "groups");
	size_t ng = 1, n;
	int rc;

	if (nested && (rc = hvt_json_array(it, "groups", MAX_TARGET, &groups, &ng)))
		return rc;
	if (nested && !ng)
		return spec_bad(it, "\"groups\" must be a list of channel lists");
	for (size_t g = 0; g < ng; g++) {
		rc = nested ? hvt_json_item_array(&groups, g, MAX_TARGET, &chs, &n)
			    : hvt_json_array(it, "channels", MAX_TARGET, &chs, &n);
		if (rc)
			return rc;
		if (!n || s->ntargets + n > MAX_TARGET)
			return spec_bad(it,
					"a layout piece needs \"channels\" or \"groups\" (1-16 ids in all)");
		if (g && n != s->ntargets / g)
			return spec_bad(it, "the \"groups\" of a layout piece must be of equal size");
		for (size_t j = 0; j < n; j++) {
			const char *id;
			int ci;

			if ((rc = hvt_json_item_str(&chs, j, SIZE_MAX, &id)))
				return rc;
			if ((ci = hvt_chanmap_find(p, id)) < 0)
				return spec_bad(it, "a layout piece names a channel the model does not have");
			s->targets[s->ntargets++] = (unsigned)ci;
		}
	}
	s->group = nested ? s->ntargets / (unsigned)ng : 1;
	return 0;
}

/* Lays the pieces out from 0, skipping the holes; returns the end of DRAM in *end. */
static int read_layout(const struct hvt_json_in *in, const struct hvt_chanmap *p, struct model *m,
		       uint64_t *end)
{
	struct hvt_json_in layout;
	uint64_t hs[MAX_HOLES], he[MAX_HOLES], at = 0;
	size_t nholes, n;
	int rc;

	if ((rc = read_holes(in, hs, he, &nholes)) ||
	    (rc = hvt_json_array(in, "layout", SIZE_MAX, &layout, &n)))
		return rc;
	for (size_t i = 0; i < n; i++) {
		struct hvt_json_in it;
		struct segment s = {.granule = 256, .inner_granule = 256};
		uint64_t left, next_hole;

		if ((rc = hvt_json_item_object(&layout, i, &it)) ||
		    (rc = HVT_JSON_OPT(hvt_json_uint, &it, "granule", 0, UINT64_MAX, &s.granule)) ||
		    (rc = HVT_JSON_OPT(hvt_json_uint, &it, "inner_granule", 0, UINT64_MAX,
				       &s.inner_granule)) ||
		    (rc = hvt_json_size(&it, "size", &left)) || (rc = read_targets(&it, p, &s)))
			return rc;
		if (!s.granule || s.granule % LINE || !s.inner_granule || s.inner_granule % LINE)
			return spec_bad(&it, "a layout piece's granules must be multiples of 64");
		while (left) {
			at = skip_holes(hs, he, nholes, at, &next_hole);
			s.start = at;
			s.size = at + left > next_hole ? next_hole - at : left;
			if (add_segment(m, &s))
				return hvt_err_set(in->err, -ENOMEM, "out of memory");
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

/* A touchable range's "size": a size, or "rest" (up to the end of DRAM). */
static int read_touchable_size(const struct hvt_json_in *it, uint64_t end, struct hvt_range *r)
{
	struct hvt_json_in quiet = *it;
	const char *rest;

	quiet.err = NULL; /* not "rest": read as a size, with that one's message */
	if (!hvt_json_str(&quiet, "size", 4, &rest) && !strcmp(rest, "rest")) {
		r->size = end > r->start ? end - r->start : 0;
		return 0;
	}
	return hvt_json_size(it, "size", &r->size);
}

static int read_touchable(const struct hvt_json_in *in, struct hvt_probe_backend *b, uint64_t end)
{
	struct hvt_json_in t;
	size_t n;
	int rc = hvt_json_array(in, "touchable", SIZE_MAX, &t, &n);

	if (rc)
		return rc;
	b->ntouchable = n;
	b->touchable = calloc(b->ntouchable ? b->ntouchable : 1, sizeof(*b->touchable));
	if (!b->touchable)
		return hvt_err_set(in->err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < b->ntouchable; i++) {
		struct hvt_json_in it;
		struct hvt_range *r = &b->touchable[i];

		if ((rc = hvt_json_item_object(&t, i, &it)) ||
		    (rc = hvt_json_size(&it, "start", &r->start)) || (rc = read_touchable_size(&it, end, r)))
			return rc;
		if (!r->size || r->start % 4096 || r->size % 4096 ||
		    (i && r->start < r[-1].start + r[-1].size) || !is_dram(b->ctx, r->start, r->size))
			return spec_bad(
			    &it,
			    "touchable ranges must be page aligned, sorted, not overlapping and DRAM of the model (not the hole, not past the end)");
	}
	return 0;
}

#define REAL(in, key, out)  HVT_JSON_OPT(hvt_json_double, in, key, -HUGE_VAL, HUGE_VAL, out)
#define COUNT(in, key, out) HVT_JSON_OPT(hvt_json_uint, in, key, 0, UINT64_MAX, out)

/* A channel's rates and spread: its own under "channels", else the noise's scaled by its factor f. */
static int read_channel_noise(struct model *m, size_t c, const struct hvt_json_in *noise, const char *id,
			      double f)
{
	struct hvt_json_in per, own;
	double rd = 0, wr = 0, sigma = 0;
	int rc;

	if ((rc = REAL(noise, "read_mbps", &rd)) || (rc = REAL(noise, "write_mbps", &wr)) ||
	    (rc = REAL(noise, "sigma_cas", &sigma)))
		return rc;
	rd *= f;
	wr *= f;
	sigma *= f;
	if (hvt_json_has(noise, "channels")) {
		if ((rc = hvt_json_object(noise, "channels", &per)))
			return rc;
		if (hvt_json_has(&per, id) &&
		    ((rc = hvt_json_object(&per, id, &own)) || (rc = REAL(&own, "read_mbps", &rd)) ||
		     (rc = REAL(&own, "write_mbps", &wr)) || (rc = REAL(&own, "sigma_cas", &sigma))))
			return rc;
	}
	m->read_rate[c] = rd * 1e6 / LINE;
	m->write_rate[c] = wr * 1e6 / LINE;
	m->sigma[c] = sigma;
	return 0;
}

/*
 * The background: absent members are 0 (no noise of that kind); the seed defaults to 1. Per channel:
 * "channel_spread" s scales every channel's rates and spread by its own factor drawn from [1-s, 1+s], and
 * "channels": {"<id>": {"read_mbps", "write_mbps", "sigma_cas"}} sets a channel's outright.
 */
static int read_noise(struct model *m, const struct hvt_chanmap *p, const struct hvt_json_in *noise)
{
	double spread = 0;
	uint64_t burst_windows = 1;
	int rc;

	m->prefetch = m->remote_dir = 0;
	m->spike_every = m->spike_cas = m->write_spike_every = m->write_spike_cas = 0;
	m->rng = 1;
	if ((rc = REAL(noise, "channel_spread", &spread)) || (rc = REAL(noise, "prefetch", &m->prefetch)) ||
	    (rc = REAL(noise, "remote_dir_writes", &m->remote_dir)) ||
	    (rc = COUNT(noise, "spike_every", &m->spike_every)) ||
	    (rc = COUNT(noise, "spike_cas", &m->spike_cas)) ||
	    (rc = COUNT(noise, "write_spike_every", &m->write_spike_every)) ||
	    (rc = COUNT(noise, "write_spike_cas", &m->write_spike_cas)) ||
	    (rc = HVT_JSON_OPT(hvt_json_uint, noise, "burst_windows", 0, UINT32_MAX, &burst_windows)) ||
	    (rc = COUNT(noise, "seed", &m->rng)))
		return rc;
	spread = fmin(fmax(spread, 0), 0.9);
	m->burst_windows = burst_windows > 1 ? (unsigned)burst_windows : 1;
	memset(m->rd_burst, 0, sizeof(m->rd_burst));
	memset(m->wr_burst, 0, sizeof(m->wr_burst));
	for (size_t c = 0; c < p->nchannels; c++) {
		double f = spread ? 1 + spread * (2 * uniform(m) - 1) : 1;

		if ((rc = read_channel_noise(m, c, noise, p->channels[c].id, f)))
			return rc;
	}
	return 0;
}

#undef REAL
#undef COUNT

static int load(const char *path, const struct hvt_json_in *in, struct hvt_probe_backend *b)
{
	struct model *m = b->ctx;
	struct hvt_json_in cpu, noise;
	uint64_t end = 0;
	int rc;

	if (!json_object_is_type(in->o, json_type_object))
		return spec_bad(in, "is not a JSON object");
	hvt_chanmap_init(&b->proto);
	snprintf(b->proto.source, sizeof(b->proto.source), "MODEL memory controller (not hardware): %s",
		 path);
	snprintf(b->proto.host.hostname, sizeof(b->proto.host.hostname), "model");
	snprintf(b->proto.host.kernel, sizeof(b->proto.host.kernel), "none (model)");
	snprintf(b->proto.probe.memory, sizeof(b->proto.probe.memory), "model");
	if ((rc = HVT_JSON_OPT(hvt_json_strbuf, in, "model", b->proto.host.hostname,
			       sizeof(b->proto.host.hostname), true)))
		return rc;
	if (hvt_json_has(in, "cpu") &&
	    ((rc = hvt_json_object(in, "cpu", &cpu)) ||
	     (rc = HVT_JSON_OPT(hvt_json_strbuf, &cpu, "vendor", b->proto.cpu.vendor,
				sizeof(b->proto.cpu.vendor), true)) ||
	     (rc = HVT_JSON_OPT(hvt_json_strbuf, &cpu, "name", b->proto.cpu.name, sizeof(b->proto.cpu.name),
				true)) ||
	     (rc = HVT_JSON_OPT(hvt_json_strbuf, &cpu, "generation", b->proto.cpu.generation,
				sizeof(b->proto.cpu.generation), true)) ||
	     (rc = HVT_JSON_OPT(hvt_json_u32, &cpu, "family", 0, UINT32_MAX, &b->proto.cpu.family)) ||
	     (rc = HVT_JSON_OPT(hvt_json_u32, &cpu, "model", 0, UINT32_MAX, &b->proto.cpu.model))))
		return rc;
	if ((rc = add_channels(in, &b->proto)) || (rc = read_layout(in, &b->proto, m, &end)) ||
	    (rc = read_touchable(in, b, end)))
		return rc;
	hvt_json_in_init(&noise, NULL, in->code, in->err, "%s: noise", in->where);
	if (hvt_json_has(in, "noise") && (rc = hvt_json_object(in, "noise", &noise)))
		return rc;
	return read_noise(m, &b->proto, &noise);
}

int hvt_probe_model_open(const char *path, struct hvt_probe_backend **out, struct hvt_err *e)
{
	struct hvt_json_in in;
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
	hvt_json_in_init(&in, o, -EINVAL, e, "model %s", path);
	if (!o)
		rc = hvt_err_set(e, -EINVAL, "model %s: cannot read it as JSON: %s", path,
				 json_tokener_error_desc(jerr));
	else
		rc = load(path, &in, b);
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
	struct hvt_json_in in;
	struct json_object *o;
	int rc;

	if (b->window != model_window)
		return hvt_err_set(e, -EINVAL, "only a model has a noise level to set");
	if (!(o = json_tokener_parse(noise_json)) || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return hvt_err_set(e, -EINVAL, "model noise: not a JSON object: %s", noise_json);
	}
	((struct model *)b->ctx)->rng = seed; /* the per-channel spread is drawn from the seed too */
	json_object_object_del(o, "seed");
	json_object_object_add(o, "seed", json_object_new_uint64(seed));
	hvt_json_in_init(&in, o, -EINVAL, e, "model noise");
	rc = read_noise(b->ctx, &b->proto, &in);
	json_object_put(o);
	return rc;
}
