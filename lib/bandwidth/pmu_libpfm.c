// SPDX-License-Identifier: MIT
/*
 * libpfm4's view of the CAS events, used as an independent cross-check of the generation table: libpfm4
 * compiles in its own event tables (docs/hardware-notes.md §1.3). With PFM_OS_NONE it returns the raw code
 * without touching sysfs; for a PMU absent from this machine it does so only when LIBPFM_ENCODE_INACTIVE is
 * set in the environment before the first call and the event names the PMU ("skx_unc_imc3::…").
 */
#include <errno.h>
#include <perfmon/pfmlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmu_internal.h"

int hvt_pmu_libpfm_code(enum hvt_pmu_gen gen, int box, bool write, unsigned sub, uint64_t *code,
			char *pfm_name, size_t len)
{
	const struct pmu_gen_info *g = pmu_gen_info(gen);
	char name[128];
	uint64_t *codes = NULL;
	pfm_pmu_encode_arg_t arg;
	int rc;

	if (!g || !g->libpfm_prefix || sub > 0)
		return -ENOENT;
	if (pfm_initialize() != PFM_SUCCESS)
		return -ENOENT;
	snprintf(name, sizeof(name), "%s%d::%s:%s", g->libpfm_prefix, box, g->libpfm_event,
		 write ? "WR" : "RD");
	if (pfm_name)
		snprintf(pfm_name, len, "%s", name);
	memset(&arg, 0, sizeof(arg));
	arg.size = sizeof(arg);
	arg.codes = NULL; /* libpfm4 allocates */
	rc = pfm_get_os_event_encoding(name, PFM_PLM0 | PFM_PLM3, PFM_OS_NONE, &arg);
	codes = arg.codes;
	if (rc != PFM_SUCCESS || arg.count < 1) {
		free(codes);
		return -ENOENT;
	}
	*code = codes[0];
	free(codes);
	return 0;
}
