// SPDX-License-Identifier: MIT
/* The phase log: what the guest did and when, for the checker that compares it with the trace. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "phaselog.h"
#include "script.h"
#include "vm.h"

int phaselog_open(struct phaselog *pl, const char *path, struct hvt_err *err)
{
	pl->f = NULL;
	if (!path)
		return 0;
	pl->f = fopen(path, "we");
	if (!pl->f)
		return hvt_err_set(err, -errno, "--phase-log %s: %s", path, strerror(errno));
	return 0;
}

void phaselog_close(struct phaselog *pl)
{
	if (pl->f)
		fclose(pl->f);
	pl->f = NULL;
}

/* Each line is flushed at once: a checker may read the log while the VMM still runs. */
static void end_line(struct phaselog *pl)
{
	fputs("}\n", pl->f);
	fflush(pl->f);
}

static void put_ranges(FILE *f, const struct range_list *l)
{
	fputc('[', f);
	for (size_t i = 0; i < l->n; i++)
		fprintf(f, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", i ? "," : "", l->v[i].first_gfn,
			l->v[i].count, l->v[i].stride);
	fputc(']', f);
}

void phaselog_script(struct phaselog *pl, const struct script *s, uint64_t hold_ns,
		     const struct system_pages *sys, const struct vm_slot *slots, uint32_t nslots)
{
	FILE *f = pl->f;

	if (!f)
		return;
	fprintf(f, "{\"type\":\"script\",\"page_size\":4096,\"payload\":\"%s\",\"phases\":[", s->name);
	for (unsigned i = 0; i < s->nphases; i++) {
		fprintf(f, "%s{\"index\":%u,\"name\":\"%s\",\"hold_ns\":%" PRIu64 ",\"write\":", i ? "," : "",
			i, s->phases[i].name, hold_ns);
		put_ranges(f, &s->phases[i].write);
		fputs(",\"read\":", f);
		put_ranges(f, &s->phases[i].read);
		fputc('}', f);
	}
	fputs("],\"system_pages\":", f);
	put_ranges(f, &sys->all);
	fputs(",\"untouched_pages\":", f);
	put_ranges(f, &sys->untouched);
	fputs(",\"table_pages\":", f);
	put_ranges(f, &sys->tables);
	fputs(",\"slots\":[", f);
	for (uint32_t i = 0; i < nslots; i++)
		fprintf(f, "%s{\"slot\":%u,\"gpa\":%" PRIu64 ",\"size\":%" PRIu64 "}", i ? "," : "",
			slots[i].id, slots[i].gpa, slots[i].size);
	fputc(']', f);
	end_line(pl);
}

void system_pages_free(struct system_pages *sys)
{
	free(sys->all.v);
	free(sys->untouched.v);
	free(sys->tables.v);
	memset(sys, 0, sizeof(*sys));
}

static void put_bounds(FILE *f, uint64_t t_earliest_ns, uint64_t t_ns)
{
	fprintf(f, ",\"t_ns\":%" PRIu64, t_ns);
	if (t_earliest_ns < t_ns)
		fprintf(f, ",\"t_earliest_ns\":%" PRIu64, t_earliest_ns);
}

void phaselog_phase(struct phaselog *pl, unsigned index, uint64_t round, uint64_t t_earliest_ns,
		    uint64_t t_ns)
{
	if (!pl->f)
		return;
	fprintf(pl->f, "{\"type\":\"phase\",\"index\":%u,\"round\":%" PRIu64, index, round);
	put_bounds(pl->f, t_earliest_ns, t_ns);
	end_line(pl);
}

void phaselog_pass(struct phaselog *pl, unsigned phase, uint64_t round, uint64_t pass, uint64_t t_start_ns,
		   uint64_t t_end_ns)
{
	if (!pl->f)
		return;
	fprintf(pl->f,
		"{\"type\":\"pass\",\"phase\":%u,\"round\":%" PRIu64 ",\"pass\":%" PRIu64
		",\"t_start_ns\":%" PRIu64 ",\"t_end_ns\":%" PRIu64,
		phase, round, pass, t_start_ns, t_end_ns);
	end_line(pl);
}

void phaselog_done(struct phaselog *pl, uint64_t t_earliest_ns, uint64_t t_ns, const char *reason)
{
	if (!pl->f)
		return;
	fputs("{\"type\":\"done\"", pl->f);
	put_bounds(pl->f, t_earliest_ns, t_ns);
	fprintf(pl->f, ",\"reason\":\"%s\"", reason);
	end_line(pl);
}
