// SPDX-License-Identifier: MIT
/*
 * record --metrics: the figures (one copy, under a mutex) and their exposition text. Names follow the
 * Prometheus conventions (base units, _total for counters, _bytes, _seconds); docs/metrics.md lists them.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/trace_meta.h"
#include "hvmtrace/util.h"
#include "hvmtrace/version.h"
#include "metrics.h"
#include "metrics_http.h"

/* Harvest durations, seconds: from 100 µs (a small dirty-log guest) to 10 s (a TiB guest in the lab). */
static const double buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
				 0.05,   0.1,     0.25,   0.5,   1,      2.5,   10};
#define NBUCKETS     (sizeof(buckets) / sizeof(buckets[0]))
#define MAX_CHANNELS 64

struct channel {
	char id[64];
	int socket; /* -1: not a memory channel (resctrl domain) */
	bool split; /* reads and writes apart; else totals in rd */
	uint64_t rd, wr;
};

/* What a scrape shows; copied out under the lock. */
struct figures {
	uint64_t intervals, missed, busy, refused;
	uint64_t written_total, accessed_total, last_written, last_accessed;
	uint64_t cpu_ns, harvest_ns, trace_bytes, covered_ns;
	uint64_t hist[NBUCKETS + 1]; /* the last: +Inf */
	uint32_t nch;
	struct channel ch[MAX_CHANNELS];
};

struct metrics {
	pthread_mutex_t lock;
	struct figures f;
	/* fixed for the run */
	char vm[256], vmm[128], mode[32];
	uint64_t interval_ns;
	uint32_t page_size;
	bool accessed_available;
	uint64_t scrapes; /* answered, this one included; under lock */
	bool final;       /* metrics_finish was called; under lock */
	int delivered_fd; /* eventfd: an answer with the final figures was sent whole */
	struct metrics_http *http;
};

static metrics_render_fn render_text; /* the server's callbacks, below */
static metrics_delivered_fn delivered;

/* A label value, escaped as the exposition formats want (backslash, double quote, newline). */
static void escape(char *dst, size_t len, const char *src)
{
	size_t o = 0;

	for (; src && *src && o + 3 < len; src++) {
		if (*src == '\\' || *src == '"') {
			dst[o++] = '\\';
			dst[o++] = *src;
		} else if (*src == '\n') {
			dst[o++] = '\\';
			dst[o++] = 'n';
		} else {
			dst[o++] = *src;
		}
	}
	dst[o] = 0;
}

struct metrics *metrics_start(const char *spec, const struct metrics_run *run, char *url, size_t urllen,
			      struct hvt_err *err)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (!m) {
		hvt_err_set(err, -ENOMEM, "out of memory");
		return NULL;
	}
	m->delivered_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->delivered_fd < 0) {
		hvt_err_set(err, -errno, "--metrics: eventfd: %s", strerror(errno));
		free(m);
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	escape(m->vm, sizeof(m->vm), run->vm);
	escape(m->vmm, sizeof(m->vmm), run->vmm);
	escape(m->mode, sizeof(m->mode), run->mode);
	m->interval_ns = run->interval_ns;
	m->page_size = run->page_size;
	m->accessed_available = run->accessed_available;
	for (uint32_t i = 0; run->channels && i < run->channels->n && i < MAX_CHANNELS; i++) {
		const struct hvt_meta_channel *c = &run->channels->v[i];
		struct channel *d = &m->f.ch[m->f.nch++];

		escape(d->id, sizeof(d->id), c->id);
		d->socket = (c->present & (1ull << HVT_MCH_SOCKET)) ? c->socket : -1;
		d->split = c->reads_writes_split;
	}
	m->http = metrics_http_start(spec, render_text, delivered, m, url, urllen, err);
	if (!m->http) {
		pthread_mutex_destroy(&m->lock);
		close(m->delivered_fd);
		free(m);
		return NULL;
	}
	return m;
}

int metrics_check_spec(const char *spec, struct hvt_err *err)
{
	struct sockaddr_storage ss;
	socklen_t len;

	return metrics_parse_spec(spec, &ss, &len, err);
}

void metrics_add(struct metrics *m, const struct hvt_interval *iv, const struct hvt_layout *l,
		 uint64_t trace_bytes)
{
	/* counted outside the lock: the scan of a large guest's bitmaps is the costly part */
	uint64_t w = (iv->flags & HVT_IV_WRITTEN) ? hvt_interval_count_pages(iv->written, iv->nslots) : 0;
	uint64_t a = (iv->flags & HVT_IV_ACCESSED) ? hvt_interval_count_pages(iv->accessed, iv->nslots) : 0;
	double secs = iv->harvest_ns / 1e9;
	unsigned b = 0;

	(void)l;
	while (b < NBUCKETS && secs > buckets[b])
		b++;
	pthread_mutex_lock(&m->lock);
	struct figures *f = &m->f;
	f->intervals++;
	f->missed += iv->missed_deadlines;
	f->busy += !!(iv->flags & HVT_IV_TRACER_BUSY);
	f->refused += !!(iv->flags & HVT_IV_LAYOUT_REFUSED);
	f->written_total += w;
	f->accessed_total += a;
	f->last_written = w;
	f->last_accessed = a;
	f->cpu_ns += (iv->flags & HVT_IV_TRACER_CPU) ? iv->tracer_cpu_ns : 0;
	f->harvest_ns += iv->harvest_ns;
	f->covered_ns += iv->t_end_ns - iv->t_start_ns;
	f->trace_bytes = trace_bytes;
	f->hist[b]++;
	for (uint32_t i = 0; (iv->flags & HVT_IV_BANDWIDTH) && i < iv->nchannels; i++) {
		uint32_t c = iv->channels[i].channel;

		if (c < f->nch) {
			f->ch[c].rd += iv->channels[i].read_bytes;
			f->ch[c].wr += iv->channels[i].write_bytes;
		}
	}
	pthread_mutex_unlock(&m->lock);
}

void metrics_finish(struct metrics *m)
{
	pthread_mutex_lock(&m->lock);
	m->final = true;
	pthread_mutex_unlock(&m->lock);
}

static void delivered(void *ctx)
{
	struct metrics *m = ctx;
	uint64_t one = 1;
	/* it can fail only with the counter near 2^64: set, so the wait is over either way */
	ssize_t n = write(m->delivered_fd, &one, sizeof(one));

	(void)n;
}

enum metrics_linger_end metrics_linger(struct metrics *m, uint64_t linger_ns, int stop_fd)
{
	uint64_t deadline = hvt_now_ns() + linger_ns;

	for (uint64_t now = hvt_now_ns(); now < deadline; now = hvt_now_ns()) {
		struct pollfd p[2] = {{.fd = m->delivered_fd, .events = POLLIN},
				      {.fd = stop_fd, .events = POLLIN}};
		uint64_t ms = (deadline - now + 999999) / 1000000;

		if (poll(p, 2, ms > 60000 ? 60000 : (int)ms) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN)
			return METRICS_SCRAPED;
		if (p[1].revents & POLLIN)
			return METRICS_STOPPED;
	}
	return METRICS_LINGERED;
}

void metrics_stop(struct metrics *m)
{
	if (!m)
		return;
	metrics_http_stop(m->http);
	pthread_mutex_destroy(&m->lock);
	close(m->delivered_fd);
	free(m);
}

/* ---- exposition ---- */

struct out {
	char *p;
	size_t len, cap;
	bool failed;
	bool om; /* OpenMetrics */
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->failed)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->failed = true;
			return;
		}
		if ((size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = (o->cap + (size_t)n) * 2;
		char *p = realloc(o->p, cap);
		if (!p) {
			o->failed = true;
			return;
		}
		o->p = p;
		o->cap = cap;
	}
}

/* HELP and TYPE of a family. A counter's family is named without _total in OpenMetrics, with it in the
 * Prometheus text format; `name` is the sample name. */
static void family(struct out *o, const char *name, const char *type, const char *help)
{
	size_t n = strlen(name);

	if (o->om && !strcmp(type, "counter") && n > 6 && !strcmp(name + n - 6, "_total"))
		n -= 6;
	put(o, "# TYPE %.*s %s\n# HELP %.*s %s\n", (int)n, name, type, (int)n, name, help);
}

/* A family of one sample, labelled with the VM only. */
static void one_sample(struct out *o, const char *name, const char *type, const char *help, const char *vm,
		       uint64_t value)
{
	family(o, name, type, help);
	put(o, "%s{vm=\"%s\"} %llu\n", name, vm, (unsigned long long)value);
}

static void render(struct out *o, const struct metrics *m, const struct figures *f, uint64_t scrapes)
{
	const char *vm = m->vm;

	family(o, "hvmtrace_info", "gauge",
	       "The recording: VM, VMM, harvest mode and hvmtrace version (always 1).");
	put(o, "hvmtrace_info{vm=\"%s\",vmm=\"%s\",mode=\"%s\",version=\"%s\"} 1\n", vm, m->vmm, m->mode,
	    HVT_VERSION);
	family(o, "hvmtrace_interval_seconds", "gauge", "The harvest interval asked for.");
	put(o, "hvmtrace_interval_seconds{vm=\"%s\"} %.9g\n", vm, m->interval_ns / 1e9);
	one_sample(o, "hvmtrace_intervals_total", "counter", "Intervals recorded.", vm, f->intervals);
	family(o, "hvmtrace_recorded_seconds_total", "counter",
	       "Guest time the recorded intervals cover (rates: a counter's increase over this one's).");
	put(o, "hvmtrace_recorded_seconds_total{vm=\"%s\"} %.9f\n", vm, f->covered_ns / 1e9);
	one_sample(o, "hvmtrace_missed_deadlines_total", "counter",
		   "Interval deadlines that passed without a harvest (their time is in the next interval).",
		   vm, f->missed);
	one_sample(o, "hvmtrace_written_pages_total", "counter",
		   "Guest pages written, summed over the intervals.", vm, f->written_total);
	one_sample(o, "hvmtrace_last_interval_written_pages", "gauge",
		   "Guest pages written in the last interval.", vm, f->last_written);
	one_sample(
	    o, "hvmtrace_written_working_set_bytes", "gauge",
	    "Bytes of the pages written in the last interval (the written working set at the interval).", vm,
	    f->last_written * m->page_size);
	if (m->accessed_available) {
		one_sample(o, "hvmtrace_accessed_pages_total", "counter",
			   "Guest pages accessed, summed over the intervals.", vm, f->accessed_total);
		one_sample(o, "hvmtrace_last_interval_accessed_pages", "gauge",
			   "Guest pages accessed in the last interval.", vm, f->last_accessed);
		one_sample(
		    o, "hvmtrace_accessed_working_set_bytes", "gauge",
		    "Bytes of the pages accessed in the last interval (the working set at the interval).", vm,
		    f->last_accessed * m->page_size);
	}
	bool split = false, total = false;
	for (uint32_t i = 0; i < f->nch; i++)
		*(f->ch[i].split ? &split : &total) = true;
	/* reads, then writes: one family each, a sample per channel that splits them */
	static const struct {
		const char *name, *help;
		bool write;
	} dir[] = {{"hvmtrace_dram_read_bytes_total", "DRAM bytes read by the VM, per channel.", false},
		   {"hvmtrace_dram_write_bytes_total", "DRAM bytes written by the VM, per channel.", true}};
	for (unsigned d = 0; split && d < 2; d++) {
		family(o, dir[d].name, "counter", dir[d].help);
		for (uint32_t i = 0; i < f->nch; i++)
			if (f->ch[i].split)
				put(o, "%s{vm=\"%s\",socket=\"%d\",channel=\"%s\"} %llu\n", dir[d].name, vm,
				    f->ch[i].socket, f->ch[i].id,
				    (unsigned long long)(dir[d].write ? f->ch[i].wr : f->ch[i].rd));
	}
	if (total) {
		family(
		    o, "hvmtrace_dram_bytes_total", "counter",
		    "DRAM bytes read and written together (sources that do not split them, e.g. resctrl).");
		for (uint32_t i = 0; i < f->nch; i++)
			if (!f->ch[i].split)
				put(o, "hvmtrace_dram_bytes_total{vm=\"%s\",domain=\"%s\"} %llu\n", vm,
				    f->ch[i].id, (unsigned long long)f->ch[i].rd);
	}
	family(o, "hvmtrace_harvest_duration_seconds", "histogram", "Time each harvest took.");
	uint64_t cum = 0;
	for (unsigned b = 0; b <= NBUCKETS; b++) {
		cum += f->hist[b];
		if (b < NBUCKETS)
			put(o, "hvmtrace_harvest_duration_seconds_bucket{vm=\"%s\",le=\"%g\"} %llu\n", vm,
			    buckets[b], (unsigned long long)cum);
		else
			put(o, "hvmtrace_harvest_duration_seconds_bucket{vm=\"%s\",le=\"+Inf\"} %llu\n", vm,
			    (unsigned long long)cum);
	}
	put(o, "hvmtrace_harvest_duration_seconds_sum{vm=\"%s\"} %.9f\n", vm, f->harvest_ns / 1e9);
	put(o, "hvmtrace_harvest_duration_seconds_count{vm=\"%s\"} %llu\n", vm, (unsigned long long)cum);
	family(o, "hvmtrace_tracer_cpu_seconds_total", "counter",
	       "CPU time of the tracer process (all threads).");
	put(o, "hvmtrace_tracer_cpu_seconds_total{vm=\"%s\"} %.9f\n", vm, f->cpu_ns / 1e9);
	one_sample(o, "hvmtrace_tracer_busy_intervals_total", "counter",
		   "Intervals in which the tracer needed more than half its CPU.", vm, f->busy);
	one_sample(o, "hvmtrace_trace_written_bytes_total", "counter",
		   "Bytes of the trace file written so far.", vm, f->trace_bytes);
	one_sample(o, "hvmtrace_metrics_scrapes_total", "counter",
		   "Scrapes of this endpoint answered, this one included.", vm, scrapes);
	if (o->om)
		put(o, "# EOF\n");
}

/* A scrape, counted: the exposition text of a copy of the figures. */
static char *render_text(void *ctx, bool openmetrics, size_t *len, bool *final)
{
	struct metrics *m = ctx;
	struct figures *f = malloc(sizeof(*f));
	struct out o = {.om = openmetrics};

	if (!f)
		return NULL;
	pthread_mutex_lock(&m->lock);
	*f = m->f;
	uint64_t scrapes = ++m->scrapes;
	*final = m->final;
	pthread_mutex_unlock(&m->lock);
	render(&o, m, f, scrapes);
	free(f);
	if (o.failed) {
		free(o.p);
		return NULL;
	}
	*len = o.len;
	return o.p;
}
