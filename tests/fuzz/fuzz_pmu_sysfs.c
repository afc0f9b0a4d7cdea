// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: PMU discovery over a sysfs tree (lib/bandwidth/pmu_discover.c,
 * lib/bandwidth/pmu_encode.c): the PMU's name, type, cpumask, format/ and events/ files, the CPUs' package
 * ids and /proc/cpuinfo.
 *
 * Input, cut at NUL bytes, one field per file (a missing field: the file is absent):
 *   0 the PMU's name in bus/event_source/devices ("uncore_imc_0", "amd_umc_3", …)
 *   1 proc/cpuinfo          2 type          3 cpumask
 *   4 format/event          5 format/umask  6 format/rdwrmask
 *   7 events/cas_count_read 8 events/cas_count_write
 *   9, 10 physical_package_id of CPUs 0 and 1
 *  11 event terms, encoded directly by hvt_pmu_encode_terms against the PMU's format/ files
 */
#include "fuzz_common.h"
#include "hvmtrace/error.h"
#include "hvmtrace/pmu.h"

static const char *const files[] = {
    NULL,
    "proc/cpuinfo",
    "sys/devices/pmu/type",
    "sys/devices/pmu/cpumask",
    "sys/devices/pmu/format/event",
    "sys/devices/pmu/format/umask",
    "sys/devices/pmu/format/rdwrmask",
    "sys/devices/pmu/events/cas_count_read",
    "sys/devices/pmu/events/cas_count_write",
    "sys/devices/system/cpu/cpu0/topology/physical_package_id",
    "sys/devices/system/cpu/cpu1/topology/physical_package_id",
};
#define NFILES (sizeof(files) / sizeof(files[0]))

static bool good_name(const char *s)
{
	size_t n = strlen(s);

	return n && n < 64 && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char root[PATH_MAX], link[PATH_MAX];
	char path[PATH_MAX], sys[PATH_MAX], cpuinfo[PATH_MAX];
	struct hvt_err err = {{0}};
	struct fuzz_fields ff;
	struct hvt_pmu_host h;

	if (!root[0]) {
		snprintf(root, sizeof(root), "%s", fuzz_tmpdir());
		for (const char *d =
			 "sys/devices/pmu/format\0sys/devices/pmu/events\0sys/bus/event_source/devices\0"
			 "sys/devices/system/cpu/cpu0/topology\0sys/devices/system/cpu/cpu1/topology\0"
			 "proc\0";
		     *d; d += strlen(d) + 1) {
			snprintf(path, sizeof(path), "%s/%s", root, d);
			fuzz_mkdirs(path);
		}
	}
	fuzz_split(&ff, data, size);
	for (size_t i = 1; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%s/%s", root, files[i]);
		fuzz_put_file(path, i < ff.n ? ff.f[i] : NULL);
	}
	if (link[0])
		unlink(link);
	link[0] = 0;
	if (good_name(ff.f[0])) {
		snprintf(link, sizeof(link), "%s/sys/bus/event_source/devices/%s", root, ff.f[0]);
		if (symlink("../../../devices/pmu", link))
			abort();
	}
	snprintf(sys, sizeof(sys), "%s/sys", root);
	snprintf(cpuinfo, sizeof(cpuinfo), "%s/proc/cpuinfo", root);
	if (!hvt_pmu_discover(&h, &(struct hvt_pmu_source){.sysfs_root = sys, .cpuinfo = cpuinfo}, &err)) {
		for (unsigned i = 0; i < h.nchannels; i++)
			if (hvt_pmu_find_channel(&h, h.channels[i].id) != &h.channels[i])
				abort(); /* channel ids are unique */
		hvt_pmu_host_fini(&h);
	}
	if (ff.n > 11) {
		struct hvt_pmu_event ev = {0};

		snprintf(path, sizeof(path), "%s/sys/devices/pmu", root);
		hvt_pmu_encode_terms(path, ff.f[11], &ev, &err);
	}
	fuzz_fields_free(&ff);
	return 0;
}
