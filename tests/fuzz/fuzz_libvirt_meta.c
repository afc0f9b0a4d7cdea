// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: a libvirt domain's XML as the libvirt hook (as root), `virt-xml` and `record --domain`
 * read it (hvmtrace/libvirt/domain_xml.c, docs/libvirt.md §1). Input: the domain XML, then, after a NUL
 * byte, a libvirt cpuset. What parses must be what docs/libvirt-trace.rng allows: a domain name usable as one
 * path component, an interval of 1 ms or more, a tracer CPU in range, absolute directories, a known
 * mode, and RAM that is either channels of a chanmap or extents that neither are empty nor wrap.
 */
#include "fuzz_common.h"
#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "../../hvmtrace/libvirt/libvirt_domain.h"

static void check_request(const struct hvt_lv_domain *d)
{
	const struct hvt_lv_trace *t = &d->t;
	struct hvt_range *x;
	struct hvt_err err = {{0}};
	size_t n;

	if (t->interval_ns < 1000000 || t->cpu < 0 || t->cpu >= CPU_SETSIZE)
		abort();
	if (!t->output || t->output[0] != '/' || !t->run_dir || t->run_dir[0] != '/')
		abort();
	if (strcmp(t->mode, "auto") && strcmp(t->mode, "ad") && strcmp(t->mode, "dirty-log"))
		abort();
	switch (t->ram) {
	case HVT_LV_RAM_NONE:
		if (t->nchannels || t->nextents)
			abort();
		break;
	case HVT_LV_RAM_CHANMAP:
		if (!t->chanmap || !t->nchannels || t->nextents || !t->mem_path || !t->iomem)
			abort();
		for (size_t i = 0; i < t->nchannels; i++)
			if (!t->channels[i])
				abort();
		break;
	case HVT_LV_RAM_EXTENTS:
		if (t->chanmap || t->nchannels || !t->nextents || !t->mem_path || !t->iomem)
			abort();
		for (size_t i = 0; i < t->nextents; i++)
			if (!t->extents[i].size ||
			    t->extents[i].start + t->extents[i].size < t->extents[i].start)
				abort();
		/* extents that do not add up to <memory> are refused, never cut or padded */
		if (hvt_lv_extents(d, &x, &n, &err) == 0) {
			uint64_t total = 0;

			for (size_t i = 0; i < n; i++)
				total += x[i].size;
			if (total != d->memory)
				abort();
			free(x);
		}
		break;
	default:
		abort();
	}
}

/* A cpuset that parses, written back as a plain list, parses to the same set. */
static void cpuset_round_trip(const cpu_set_t *set)
{
	static char list[CPU_SETSIZE * 6];
	size_t len = 0;
	cpu_set_t back;

	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, set))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d", len ? "," : "", c);
	if (!len)
		return; /* an empty list ("^0") has no plain form */
	if (hvt_lv_parse_cpuset(list, &back) || !CPU_EQUAL(set, &back))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_fields ff;
	struct hvt_lv_domain d;
	struct hvt_err err = {{0}};
	char path[PATH_MAX];
	cpu_set_t set;

	fuzz_split(&ff, data, size);
	if (hvt_lv_parse(ff.f[0], strlen(ff.f[0]), &d, &err) == 0) {
		if (!d.name || !d.name[0] || strchr(d.name, '/') || !strcmp(d.name, ".") ||
		    !strcmp(d.name, ".."))
			abort(); /* the hook makes RUN_DIR/NAME as root */
		if (d.traced) {
			check_request(&d);
			hvt_lv_path(&d, "claim", path, sizeof(path));
		}
		hvt_lv_free(&d);
	} else if (!err.msg[0]) {
		abort(); /* a refusal names what is wrong */
	}
	if (ff.n > 1 && hvt_lv_parse_cpuset(ff.f[1], &set) == 0)
		cpuset_round_trip(&set);
	fuzz_fields_free(&ff);
	return 0;
}
