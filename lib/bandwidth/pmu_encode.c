// SPDX-License-Identifier: MIT
/*
 * A sysfs number reader and the event encoder: "term=value,…" (a PMU's events/ alias, or the generation
 * table's terms) packed into perf_event_attr config words by the PMU's format/ files, the way perf does it
 * (kernel ABI: Documentation/ABI/testing/sysfs-bus-event_source-devices-format).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/error.h"
#include "hvmtrace/util.h"
#include "pmu_internal.h"

int pmu_read_uint(const char *path, unsigned long long *v, struct hvt_err *err)
{
	char buf[64], *end;
	int rc = hvt_read_text(path, buf, sizeof(buf), err);

	if (rc)
		return rc;
	errno = 0;
	*v = strtoull(buf, &end, 0);
	if (!buf[0] || *end || errno || buf[0] == '-')
		return hvt_err_set(err, -EINVAL, "%s: '%s' is not a number", path, buf);
	return 0;
}

/* The config word a format field names: "config", "config1" or "config2". */
static uint64_t *config_word(struct hvt_pmu_event *ev, const char *name, size_t len)
{
	if (len == 6 && !strncmp(name, "config", 6))
		return &ev->config;
	if (len == 7 && !strncmp(name, "config1", 7))
		return &ev->config1;
	if (len == 7 && !strncmp(name, "config2", 7))
		return &ev->config2;
	return NULL;
}

/* Deposits value into the bit ranges of one format spec ("config:8-15,32-55"), lowest bits first. */
static int deposit(struct hvt_pmu_event *ev, const char *spec, uint64_t value, const char *where,
		   struct hvt_err *err)
{
	const char *colon = strchr(spec, ':');
	uint64_t *word = colon ? config_word(ev, spec, (size_t)(colon - spec)) : NULL;
	const char *p;
	unsigned used = 0;

	if (!word)
		return hvt_err_set(err, -EINVAL, "%s: '%s' is not a config field spec", where, spec);
	for (p = colon + 1; *p;) {
		char *end;
		unsigned long lo = strtoul(p, &end, 10), hi = lo;

		if (end == p)
			return hvt_err_set(err, -EINVAL, "%s: bad bit range in '%s'", where, spec);
		if (*end == '-') {
			p = end + 1;
			hi = strtoul(p, &end, 10);
			if (end == p)
				return hvt_err_set(err, -EINVAL, "%s: bad bit range in '%s'", where, spec);
		}
		if (hi < lo || hi > 63)
			return hvt_err_set(err, -EINVAL, "%s: bit range %lu-%lu in '%s'", where, lo, hi,
					   spec);
		for (unsigned long bit = lo; bit <= hi; bit++, used++)
			if (used < 64 && (value >> used) & 1)
				*word |= 1ull << bit;
		p = end;
		if (*p == ',')
			p++;
		else if (*p)
			return hvt_err_set(err, -EINVAL, "%s: junk after bit range in '%s'", where, spec);
	}
	if (used < 64 && value >> used)
		return hvt_err_set(err, -EINVAL, "%s: value 0x%" PRIx64 " does not fit the %u bits of '%s'",
				   where, value, used, spec);
	return 0;
}

int hvt_pmu_encode_terms(const char *pmu_dir, const char *terms, struct hvt_pmu_event *ev,
			 struct hvt_err *err)
{
	char copy[256], *save = NULL, *term;

	if (strlen(terms) >= sizeof(copy) || strlen(terms) >= sizeof(ev->terms))
		return hvt_err_set(err, -EINVAL, "%s: event terms '%.40s…' too long", pmu_dir, terms);
	snprintf(copy, sizeof(copy), "%s", terms);
	ev->config = ev->config1 = ev->config2 = 0;
	snprintf(ev->terms, sizeof(ev->terms), "%s", terms);
	for (term = strtok_r(copy, ",", &save); term; term = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(term, '='), *end, path[512], spec[128];
		uint64_t value = 1; /* a bare term means 1, as in perf */
		int rc;

		while (*term == ' ' || *term == '\n')
			term++;
		if (eq) {
			*eq = 0;
			errno = 0;
			value = strtoull(eq + 1, &end, 0);
			if (end == eq + 1 || *end || errno)
				return hvt_err_set(err, -EINVAL, "%s: term %s: '%s' is not a number", pmu_dir,
						   term, eq + 1);
		}
		snprintf(path, sizeof(path), "%s/format/%s", pmu_dir, term);
		rc = hvt_read_text(path, spec, sizeof(spec), err);
		if (rc == -ENOENT && config_word(ev, term, strlen(term))) { /* "config=0x…" needs no format */
			*config_word(ev, term, strlen(term)) |= value;
			continue;
		}
		if (rc)
			return hvt_err_prefix(err, rc, "event term '%s' has no format: ", term);
		rc = deposit(ev, spec, value, path, err);
		if (rc)
			return rc;
	}
	return 0;
}
