// SPDX-License-Identifier: MIT
/* The bandwidth self-test's runner and arithmetic (selftest.h; docs/doctor.md "The bandwidth self-test"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "doctor/selftest.h"
#include "hvmtrace/util.h"

/* Traffic elsewhere above this share of the bytes moved means the traffic did not go where it was sent. */
#define OFF_TARGET_SHARE 0.25
/* A background above this share of the bytes moved leaves nothing to judge. */
#define NOISY_SHARE 0.5
/* Channels that saw at least this share are listed as having seen the traffic. */
#define SAW_SHARE 0.05

const char *st_dir_name(enum st_dir d)
{
	return d == ST_READ ? "read" : "write";
}

static void size_text(double bytes, char *buf, size_t len)
{
	if (bytes >= (double)(1ull << 30))
		snprintf(buf, len, "%.2f GiB", bytes / (double)(1ull << 30));
	else
		snprintf(buf, len, "%.1f MiB", bytes / (double)(1ull << 20));
}

/* The channel's bytes in the window, less its background scaled to the window's length. */
static double net_bytes(const struct st_window *t, const struct st_window *idle, unsigned k, unsigned di)
{
	double bg = 0;

	if (idle->ns && idle->c[k].counted)
		bg = (double)idle->c[k].bytes[di] * (double)t->ns / (double)idle->ns;
	return (double)t->c[k].bytes[di] - bg;
}

static bool in_target(const struct st_target *tg, unsigned k)
{
	for (unsigned i = 0; i < tg->nin; i++)
		if (tg->in[i] == k)
			return true;
	return false;
}

static void who(const struct st_source *s, const struct st_target *tg, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < tg->nin && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? "+" : "", s->ids[tg->in[i]]);
}

static int idle_window(struct st_source *s, uint64_t idle_ns, struct st_window *w, struct hvt_err *e)
{
	uint64_t t0 = hvt_now_ns();
	struct timespec ts = {(time_t)(idle_ns / HVT_NSEC_PER_SEC), (long)(idle_ns % HVT_NSEC_PER_SEC)};
	int rc;

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	rc = s->sample(s, w->c, e);
	w->ns = hvt_now_ns() - t0;
	return rc;
}

/* Per channel and direction the quieter (or the busier) of two idle windows, as a window of a's length:
 * the target is judged against the quieter, so a burst of someone else's traffic in one idle window is not
 * taken for its background; other channels against the busier, so such a burst is not taken for traffic
 * that went astray. */
static void pick(const struct st_source *s, const struct st_window *a, const struct st_window *b,
		 bool quieter, struct st_window *out)
{
	out->ns = a->ns;
	for (unsigned k = 0; k < s->n; k++) {
		out->c[k].counted = a->c[k].counted || b->c[k].counted;
		for (int d = 0; d < 2; d++) {
			double ra = a->c[k].counted ? (double)a->c[k].bytes[d] / (double)a->ns : -1;
			double rb = b->c[k].counted && b->ns ? (double)b->c[k].bytes[d] / (double)b->ns : -1;
			double r = ra < 0   ? rb
				   : rb < 0 ? ra
					    : (quieter ? (ra <= rb ? ra : rb) : (ra >= rb ? ra : rb));

			out->c[k].bytes[d] = r < 0 ? 0 : (uint64_t)(r * (double)a->ns + 0.5);
		}
	}
}

int st_run(struct st_source *s, struct st_target *tg, uint64_t idle_ns, const struct st_band *band,
	   struct st_result res[2], struct hvt_err *e)
{
	static struct st_window before, after, lo, hi, win;
	uint64_t t0, moved;
	int rc;

	if (s->n > ST_MAX_CHANNELS || tg->nin == 0 || tg->nin > ST_MAX_TARGET)
		return hvt_err_set(e, -EINVAL, "self-test: %u channels, %u in the target", s->n, tg->nin);
	if ((rc = s->sample(s, before.c, e)) || (rc = idle_window(s, idle_ns, &before, e)))
		return rc;
	/* idle, write, idle, read, idle: each traffic window is judged against the idle windows around it. A
	 * window that fails is taken again, up to ST_ATTEMPTS in all: someone else's burst passes, while a
	 * counter that counts wrong fails every time. */
	for (int i = 0; i < 2; i++) {
		enum st_dir d = i == 0 ? ST_WRITE : ST_READ;

		for (unsigned a = 1; a <= ST_ATTEMPTS; a++) {
			t0 = hvt_now_ns();
			if ((rc = tg->drive(tg, d, &moved, e)) || (rc = s->sample(s, win.c, e)))
				return rc;
			win.ns = hvt_now_ns() - t0;
			if ((rc = idle_window(s, idle_ns, &after, e)))
				return rc;
			pick(s, &before, &after, true, &lo);
			pick(s, &before, &after, false, &hi);
			st_judge(s, tg, d, moved, &win, &lo, &hi, band, &res[d]);
			res[d].attempts = a;
			before = after;
			if (res[d].outcome == ST_PASS)
				break;
		}
	}
	return 0;
}

/* Lists the channels that saw the traffic, with their share of the bytes moved (the target's channels net of
 * the quieter background, the others of the busier, as they are judged). */
static void saw(const struct st_source *s, const struct st_target *tg, const struct st_window *t,
		const struct st_window *idle, const struct st_window *busy, unsigned di, uint64_t moved,
		char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (unsigned k = 0; k < s->n && at < len; k++) {
		double share = net_bytes(t, in_target(tg, k) ? idle : busy, k, di) / (double)moved;

		if (share >= SAW_SHARE)
			at += (size_t)snprintf(buf + at, len - at, "%s%s %.2f", at ? ", " : "", s->ids[k],
					       share);
	}
	if (!at)
		snprintf(buf, len, "none");
}

/* The target's own counters: NOT_COUNTED or NEVER_MOVED, or ST_PASS and the net bytes. */
static enum st_outcome target_counts(const struct st_target *tg, const struct st_window *t,
				     const struct st_window *idle, unsigned di, double *net, double *bg,
				     int *bad)
{
	uint64_t raw = 0, idle_raw = 0;

	*net = *bg = 0;
	for (unsigned i = 0; i < tg->nin; i++) {
		unsigned k = tg->in[i];

		if (!t->c[k].counted) {
			*bad = (int)k;
			return ST_NOT_COUNTED;
		}
		raw += t->c[k].bytes[di];
		idle_raw += idle->c[k].counted ? idle->c[k].bytes[di] : 0;
		*net += net_bytes(t, idle, k, di);
	}
	*bg = (double)raw - *net;
	if (raw == 0 && idle_raw == 0) {
		*bad = tg->nin == 1 ? (int)tg->in[0] : -1;
		return ST_NEVER_MOVED;
	}
	return ST_PASS;
}

void st_judge(const struct st_source *s, const struct st_target *tg, enum st_dir d, uint64_t moved,
	      const struct st_window *t, const struct st_window *idle, const struct st_window *busy,
	      const struct st_band *band, struct st_result *r)
{
	unsigned di = s->split ? d : ST_READ;
	const char *dn = d == ST_READ ? (s->split ? "read" : "read (as total bytes)")
				      : (s->split ? "written" : "written (as total bytes)");
	char name[256], mv[32], ct[32], seen[256];
	double bg;

	*r = (struct st_result){.dir = d, .moved = moved, .channel = -1};
	who(s, tg, name, sizeof(name));
	size_text((double)moved, mv, sizeof(mv));
	r->outcome = target_counts(tg, t, idle, di, &r->counted, &bg, &r->channel);
	r->ratio = moved ? r->counted / (double)moved : 0;
	r->channel_ratio = r->ratio;
	saw(s, tg, t, idle, busy, di, moved ? moved : 1, seen, sizeof(seen));
	size_text(r->counted, ct, sizeof(ct));
	if (r->outcome == ST_NOT_COUNTED) {
		snprintf(
		    r->msg, sizeof(r->msg),
		    "%s: the counter did not run while %s were %s (multiplexed out or stopped): nothing measured",
		    s->ids[r->channel], mv, dn);
		return;
	}
	if (r->outcome == ST_NEVER_MOVED) {
		snprintf(r->msg, sizeof(r->msg),
			 "%s: the %s counter never moved: 0 bytes in the idle window and while %s were %s",
			 name, s->split ? st_dir_name(d) : "total", mv, dn);
		return;
	}
	for (unsigned k = 0; tg->exclusive && k < s->n; k++) {
		double other = net_bytes(t, busy, k, di);

		if (!in_target(tg, k) && moved && other > OFF_TARGET_SHARE * (double)moved) {
			r->outcome = ST_OFF_TARGET;
			r->channel = (int)k;
			r->channel_ratio = other / (double)moved;
			snprintf(
			    r->msg, sizeof(r->msg),
			    "%s counted %.2f × the bytes %s on %s's memory (%s counted %.2f ×): the channel map does not match this host",
			    s->ids[k], r->channel_ratio, dn, name, name, r->ratio);
			return;
		}
	}
	if (moved && bg > NOISY_SHARE * (double)moved) {
		r->outcome = ST_NOISY;
		snprintf(
		    r->msg, sizeof(r->msg),
		    "%s: the background (%.0f bytes) is above half the %s %s: too busy to judge; run again on a quieter host",
		    name, bg, mv, dn);
		return;
	}
	if (tg->nin == 1)
		r->channel = (int)tg->in[0];
	r->outcome = r->ratio < band->lo ? ST_LOW : r->ratio > band->hi ? ST_HIGH : ST_PASS;
	snprintf(r->msg, sizeof(r->msg),
		 "%s counted %.2f × the bytes %s (%s of %s; band %.2f–%.2f)%s; saw it: %s", name, r->ratio,
		 dn, ct, mv, band->lo, band->hi,
		 r->outcome == ST_LOW    ? ": too few"
		 : r->outcome == ST_HIGH ? ": too many"
					 : "",
		 seen);
}
