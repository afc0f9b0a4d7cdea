// SPDX-License-Identifier: MIT
/*
 * hvmtrace top: a live view of running recorders, from their metrics endpoints (record --metrics), found in
 * the registry (metrics_registry.h) or named on the command line. Like pcm-memory or top: one row per VM,
 * one per memory channel under it, refreshed every interval; keys sort and quit.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "commands.h"
#include "hvmtrace/options.h"
#include "hvmtrace/util.h"
#include "live/metrics_registry.h"
#include "live/top_scrape.h"

#define MAX_VMS 32

enum sort_key { SORT_WRITTEN, SORT_ACCESSED, SORT_WSS, SORT_CPU, SORT_MISSED, SORT_NAME };
static const char *const sort_names[] = {"written/s", "accessed/s", "WSS", "CPU %", "missed", "VM"};

struct vm_row {
	char url[256];
	pid_t pid;
	bool ok;
	char why[128];
	struct top_figures now, before; /* the last two scrapes that brought new intervals */
	bool rated;                     /* there were two: the rates below hold (else shown as -) */
	/* rates between them, over the guest time their intervals cover */
	double written_s, accessed_s, cpu_pct, rd_mbs[TOP_MAX_CHANNELS], wr_mbs[TOP_MAX_CHANNELS];
};

struct top {
	struct vm_row vms[MAX_VMS];
	unsigned n;
	const char *given[4];
	enum sort_key sort;
};

static struct vm_row *row_for(struct top *t, const char *url, pid_t pid)
{
	for (unsigned i = 0; i < t->n; i++)
		if (!strcmp(t->vms[i].url, url))
			return &t->vms[i];
	if (t->n == MAX_VMS)
		return NULL;
	struct vm_row *r = &t->vms[t->n++];
	memset(r, 0, sizeof(*r));
	snprintf(r->url, sizeof(r->url), "%s", url);
	r->pid = pid;
	return r;
}

static void found(void *ctx, pid_t pid, const char *url)
{
	row_for(ctx, url, pid);
}

static void rates(struct vm_row *r)
{
	double dt = r->now.covered_s - r->before.covered_s;

	if (!r->before.intervals || dt <= 0)
		return;
	r->rated = true;
	r->written_s = (r->now.written - r->before.written) / dt;
	r->accessed_s = (r->now.accessed - r->before.accessed) / dt;
	r->cpu_pct = 100 * (r->now.cpu_s - r->before.cpu_s) / dt;
	for (unsigned c = 0; c < r->now.nch && c < r->before.nch; c++) {
		r->rd_mbs[c] = (r->now.ch[c].rd - r->before.ch[c].rd) / dt / 1e6;
		r->wr_mbs[c] = (r->now.ch[c].wr - r->before.ch[c].wr) / dt / 1e6;
	}
}

/* Scrapes every endpoint; drops recorders that went away (registry) and finds new ones. */
static void refresh(struct top *t)
{
	if (!t->given[0]) {
		struct top keep = *t;

		t->n = 0;
		metrics_registry_each(found, t);
		for (unsigned i = 0; i < t->n; i++)
			for (unsigned k = 0; k < keep.n; k++)
				if (!strcmp(keep.vms[k].url, t->vms[i].url))
					t->vms[i] = keep.vms[k];
	}
	for (unsigned i = 0; i < t->n; i++) {
		struct vm_row *r = &t->vms[i];
		struct top_figures f;

		r->ok = !top_scrape(r->url, 1000, &f, r->why, sizeof(r->why));
		if (!r->ok || (r->now.vm[0] && f.intervals == r->now.intervals))
			continue; /* a recorder with a longer interval than the refresh: nothing new yet */
		r->before = r->now;
		r->now = f;
		rates(r);
	}
}

static double key_of(const struct vm_row *r, enum sort_key k)
{
	switch (k) {
	case SORT_WRITTEN:
		return r->written_s;
	case SORT_ACCESSED:
		return r->accessed_s;
	case SORT_WSS:
		return r->now.accessed_available ? r->now.accessed_wss : r->now.written_wss;
	case SORT_CPU:
		return r->cpu_pct;
	case SORT_MISSED:
		return r->now.missed;
	case SORT_NAME:
		return 0;
	}
	return 0;
}

static enum sort_key sorting;
static int by_key(const void *a, const void *b)
{
	const struct vm_row *x = a, *y = b;

	if (sorting == SORT_NAME)
		return strcmp(x->now.vm, y->now.vm);
	double kx = key_of(x, sorting), ky = key_of(y, sorting);
	return (kx < ky) - (kx > ky);
}

/* A rate in a column of width w: "-" until there are two samples to take it from. */
static void rate(int w, double v, bool rated)
{
	if (rated)
		printf("%*.1f", w, v);
	else
		printf("%*s", w, "-");
}

static void draw(struct top *t, bool tty)
{
	char wss[32];

	sorting = t->sort;
	qsort(t->vms, t->n, sizeof(t->vms[0]), by_key);
	if (tty)
		fputs("\033[H\033[2J", stdout);
	printf(
	    "hvmtrace top: %u recorder%s; sorted by %s; keys: w written, a accessed, s WSS, c CPU, m missed, "
	    "n VM, q quit\n\n",
	    t->n, t->n == 1 ? "" : "s", sort_names[t->sort]);
	printf("%-20s %-9s %8s %12s %12s %11s %10s %10s %6s %7s\n", "VM", "mode", "interval", "written/s",
	       "accessed/s", "WSS", "read MB/s", "write MB/s", "CPU %", "missed");
	for (unsigned i = 0; i < t->n; i++) {
		const struct vm_row *r = &t->vms[i];
		double rd = 0, wr = 0;

		if (!r->ok) {
			printf("%-20.20s %s: %s\n", r->now.vm[0] ? r->now.vm : r->url, r->url, r->why);
			continue;
		}
		for (unsigned c = 0; c < r->now.nch; c++) {
			rd += r->rd_mbs[c];
			wr += r->wr_mbs[c];
		}
		hvt_format_size(
		    (uint64_t)(r->now.accessed_available ? r->now.accessed_wss : r->now.written_wss), wss,
		    sizeof(wss));
		printf("%-20.20s %-9s %7.3fs ", r->now.vm, r->now.mode, r->now.interval_s);
		rate(12, r->written_s, r->rated);
		putchar(' ');
		if (r->now.accessed_available)
			rate(12, r->accessed_s, r->rated);
		else
			printf("%12s", "n/a");
		printf(" %11s ", wss);
		if (r->now.nch) {
			rate(10, rd, r->rated);
			putchar(' ');
			rate(10, wr, r->rated);
		} else {
			printf("%10s %10s", "n/a", "n/a");
		}
		putchar(' ');
		rate(6, r->cpu_pct, r->rated);
		printf(" %7.0f\n", r->now.missed);
		for (unsigned c = 0; c < r->now.nch; c++) {
			printf("  %-75s ", r->now.ch[c].id);
			rate(10, r->rd_mbs[c], r->rated);
			putchar(' ');
			rate(10, r->wr_mbs[c], r->rated);
			putchar('\n');
		}
	}
	if (!t->n)
		puts("(no recorder found: start one with record --metrics PORT, or name its endpoint)");
	fflush(stdout);
}

/* The refresh period: the shortest interval among the recorders, at least 100 ms. */
static uint64_t period_ns(const struct top *t, uint64_t given)
{
	uint64_t p = 0;

	if (given)
		return given;
	for (unsigned i = 0; i < t->n; i++)
		if (t->vms[i].ok && t->vms[i].now.interval_s > 0) {
			uint64_t ns = (uint64_t)(t->vms[i].now.interval_s * 1e9);
			p = !p || ns < p ? ns : p;
		}
	return p < 100000000 ? (p ? 100000000 : HVT_NSEC_PER_SEC) : p;
}

static struct termios saved;
static bool raw_mode;

static void restore_tty(void)
{
	if (raw_mode)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
}

int cmd_top(int argc, char **argv)
{
	static const struct hvt_exit_status exits[] = {
	    {0, "quit (q), or the iterations asked for were shown"},
	    {2, "bad arguments"},
	    {0, NULL},
	};
	struct top *t = calloc(1, sizeof(*t));
	uint64_t delay = 0;
	int64_t iterations = 0;
	char dir[256];

	if (!t)
		return 1;
	metrics_registry_dir(dir, sizeof(dir));
	const struct hvt_option opts[] = {
	    HVT_OPT_DURATION('d', "delay", &delay, 10000000, "DUR",
			     "refresh period (default: the shortest interval among the recorders)"),
	    HVT_OPT_INT('n', "iterations", &iterations, 0, INT64_MAX, "N",
			"stop after N refreshes (default: until q)"),
	    HVT_OPT_OPERAND(&t->given[0], "ENDPOINT",
			    "a recorder's metrics endpoint (http://ADDR:PORT/metrics); up to four"),
	    HVT_OPT_OPERAND(&t->given[1], "ENDPOINT", NULL),
	    HVT_OPT_OPERAND(&t->given[2], "ENDPOINT", NULL),
	    HVT_OPT_OPERAND(&t->given[3], "ENDPOINT", NULL),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "hvmtrace top",
	    .synopsis = "[options] [ENDPOINT...]",
	    .about = "Live view of running recorders (hvmtrace record --metrics): per VM written and\n"
		     "accessed pages/s, working-set size, DRAM MB/s per channel, the tracer's CPU %\n"
		     "and missed deadlines. Without ENDPOINTs, every recorder announced in the\n"
		     "registry ($HVMTRACE_RUN_DIR, /run/hvmtrace for root, else /tmp/hvmtrace-UID).",
	    .options = opts,
	    .exits = exits,
	    .usage_status = 2,
	};
	int rc = hvt_opts_parse(&cmd, argc, argv);

	if (rc != HVT_OPTS_RUN) {
		free(t);
		return rc;
	}
	for (unsigned i = 0; i < 4 && t->given[i]; i++)
		row_for(t, t->given[i], 0);
	bool tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	if (tty && !tcgetattr(STDIN_FILENO, &saved)) {
		struct termios raw = saved;

		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		raw_mode = !tcsetattr(STDIN_FILENO, TCSANOW, &raw);
		atexit(restore_tty);
	}
	signal(SIGPIPE, SIG_IGN);
	bool keys_gone = false;
	for (int64_t shown = 0; !iterations || shown < iterations; shown++) {
		uint64_t next = hvt_now_ns();

		refresh(t);
		draw(t, tty);
		next += period_ns(t, delay);
		/* keys until the next refresh */
		for (uint64_t now = hvt_now_ns(); now < next; now = hvt_now_ns()) {
			struct pollfd p = {.fd = keys_gone ? -1 : STDIN_FILENO, .events = POLLIN};
			char c;

			if (poll(&p, 1, (int)((next - now) / 1000000) + 1) != 1)
				continue;
			if (read(STDIN_FILENO, &c, 1) != 1) {
				keys_gone =
				    true; /* end of input (not a terminal): refresh on, without keys */
				continue;
			}
			const char *keys = "wascmn";
			const char *k = strchr(keys, c);
			if (c == 'q')
				goto out;
			if (k && c) {
				t->sort = (enum sort_key)(k - keys);
				draw(t, tty);
			}
		}
	}
out:
	restore_tty();
	free(t);
	return 0;
}
