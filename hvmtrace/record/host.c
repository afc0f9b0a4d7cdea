// SPDX-License-Identifier: MIT
#include <cap-ng.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "host.h"
#include "hvmtrace/util.h"

int vcpu_allowed_cpus(pid_t pid, const int32_t *tids, unsigned ntids, cpu_set_t *set, struct hvt_err *err)
{
	CPU_ZERO(set);
	for (unsigned i = 0; i < ntids; i++) {
		char path[64], line[4096];
		cpu_set_t one;
		FILE *f;
		bool found = false;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tids[i]);
		f = fopen(path, "re");
		if (!f)
			return hvt_err_set(err, -errno, "%s: %s (is vCPU thread %d of VMM pid %d gone?)",
					   path, strerror(errno), (int)tids[i], (int)pid);
		while (fgets(line, sizeof(line), f)) {
			if (strncmp(line, "Cpus_allowed_list:", 18))
				continue;
			const char *v = line + 18;
			while (isspace((unsigned char)*v))
				v++;
			found = hvt_parse_cpulist(v, &one) >= 0;
			break;
		}
		fclose(f);
		if (!found)
			return hvt_err_set(err, -EINVAL, "%s: no readable Cpus_allowed_list", path);
		CPU_OR(set, set, &one);
	}
	return 0;
}

int pick_tracer_cpu(const cpu_set_t *avoid)
{
	cpu_set_t mine;

	if (sched_getaffinity(0, sizeof(mine), &mine))
		return -1;
	for (int c = CPU_SETSIZE - 1; c >= 0; c--)
		if (CPU_ISSET(c, &mine) && !CPU_ISSET(c, avoid))
			return c;
	return -1;
}

int pin_to_cpu(int cpu, struct hvt_err *err)
{
	cpu_set_t set;
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);

	if (cpu < 0 || cpu >= CPU_SETSIZE || cpu >= ncpus)
		return hvt_err_set(err, -EINVAL, "--cpu %d: no such CPU (this host has CPUs 0-%ld)", cpu,
				   ncpus - 1);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return hvt_err_set(err, -errno, "--cpu %d: cannot run there: %s", cpu, strerror(errno));
	return 0;
}

int drop_all_capabilities(struct hvt_err *err)
{
	capng_get_caps_process();
	capng_clear(CAPNG_SELECT_ALL);
	/* Clearing the bounding set needs CAP_SETPCAP; without it (not root) the sets we hold are dropped. */
	if (capng_apply(CAPNG_SELECT_ALL) && capng_apply(CAPNG_SELECT_BOTH))
		return hvt_err_set(err, -EPERM, "cannot drop capabilities (libcap-ng capng_apply failed)");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return hvt_err_set(err, -errno, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
	return 0;
}
