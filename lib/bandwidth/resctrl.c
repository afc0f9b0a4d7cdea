// SPDX-License-Identifier: MIT
/* resctrl MBM monitoring groups (kernel Documentation/arch/x86/resctrl.rst, "Monitoring"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/resctrl.h"
#include "hvmtrace/util.h"

static int check_mbm(const char *root, struct hvt_err *err)
{
	char path[512], feats[512] = "";
	struct stat st;

	snprintf(path, sizeof(path), "%s/info", root);
	if (stat(path, &st))
		return hvt_err_set(
		    err, -ENODEV,
		    "resctrl is not mounted at %s: mount it with `mount -t resctrl resctrl %s` (the kernel needs CONFIG_X86_CPU_RESCTRL and a CPU with RDT/PQoS monitoring)",
		    root, root);
	snprintf(path, sizeof(path), "%s/info/L3_MON/mon_features", root);
	int rc = hvt_read_text(path, feats, sizeof(feats), NULL);
	if (rc)
		return hvt_err_set(err, -ENODEV, "%s: %s: this CPU has no L3 monitoring (no MBM)", path,
				   strerror(-rc));
	if (!strstr(feats, "mbm_total_bytes"))
		return hvt_err_set(
		    err, -ENODEV,
		    "%s lists no mbm_total_bytes: this CPU cannot monitor memory bandwidth per group", path);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int list_domains(struct hvt_resctrl_group *g, struct hvt_err *err)
{
	char path[512];
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "%s/mon_data", g->dir);
	d = opendir(path);
	if (!d)
		return hvt_err_set(err, -ENOENT, "%s: %s: not a resctrl monitoring group", path,
				   strerror(errno));
	g->ndomains = 0;
	while ((de = readdir(d)) && g->ndomains < HVT_RESCTRL_MAX_DOMAINS)
		if (!strncmp(de->d_name, "mon_L3_", 7) && strlen(de->d_name) < sizeof(g->domains[0]))
			snprintf(g->domains[g->ndomains++], sizeof(g->domains[0]), "%.31s", de->d_name);
	closedir(d);
	if (!g->ndomains)
		return hvt_err_set(err, -ENOENT, "%s holds no mon_L3_* domain", path);
	qsort(g->domains, g->ndomains, sizeof(g->domains[0]), cmp_str);
	return 0;
}

/* Moves every thread of pid into the group, one write per thread as the kernel takes them. */
static int move_threads(struct hvt_resctrl_group *g, pid_t pid, struct hvt_err *err)
{
	char path[512], tasks[512], status[256] = "";
	struct dirent *de;
	DIR *d;
	int fd, moved = 0, rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	snprintf(tasks, sizeof(tasks), "%s/tasks", g->dir);
	if (!(d = opendir(path)))
		return hvt_err_set(err, -errno, "%s: %s", path, strerror(errno));
	fd = open(tasks, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0) {
		closedir(d);
		return hvt_err_set(err, -errno, "%s: %s", tasks, strerror(errno));
	}
	while ((de = readdir(d)) && !rc) {
		char line[32];
		int len;

		if (de->d_name[0] == '.')
			continue;
		len = snprintf(line, sizeof(line), "%s\n", de->d_name);
		if (write(fd, line, (size_t)len) != len) {
			rc = -errno;
			snprintf(path, sizeof(path), "%s/info/last_cmd_status", g->root);
			hvt_read_text(path, status, sizeof(status), NULL);
			hvt_err_set(err, rc, "moving thread %s of pid %d into %s: %s%s%s", de->d_name,
				    (int)pid, tasks, strerror(-rc), status[0] ? "; resctrl says: " : "",
				    status);
		}
		moved++;
	}
	close(fd);
	closedir(d);
	return rc ? rc : moved ? 0 : hvt_err_set(err, -ESRCH, "pid %d has no threads", (int)pid);
}

/* Reads one domain's cumulative bytes; -EAGAIN for "Unavailable"/"Error". */
static int read_domain(const struct hvt_resctrl_group *g, unsigned i, uint64_t *v, struct hvt_err *err)
{
	char path[512], buf[64], *end;
	int rc;

	snprintf(path, sizeof(path), "%s/mon_data/%s/mbm_total_bytes", g->dir, g->domains[i]);
	if ((rc = hvt_read_text(path, buf, sizeof(buf), err)))
		return rc;
	if (!strcmp(buf, "Unavailable") || !strcmp(buf, "Error"))
		return -EAGAIN;
	errno = 0;
	*v = strtoull(buf, &end, 10);
	if (!buf[0] || *end || errno)
		return hvt_err_set(err, -EINVAL, "%s: '%s' is not a byte count", path, buf);
	return 0;
}

int hvt_resctrl_read(struct hvt_resctrl_group *g, uint64_t *bytes, bool *available, struct hvt_err *err)
{
	for (unsigned i = 0; i < g->ndomains; i++) {
		uint64_t v;
		int rc = read_domain(g, i, &v, err);

		bytes[i] = 0;
		available[i] = false;
		if (rc == -EAGAIN) {
			g->have_prev[i] = false;
			continue;
		}
		if (rc)
			return rc;
		/* The kernel keeps 64-bit totals (it folds the 24+-bit hardware counter every second). */
		if (g->have_prev[i] && v >= g->prev[i]) {
			bytes[i] = v - g->prev[i];
			available[i] = true;
		}
		g->prev[i] = v;
		g->have_prev[i] = true;
	}
	return 0;
}

int hvt_resctrl_open(struct hvt_resctrl_group *g, const char *root, const char *name, pid_t pid,
		     struct hvt_err *err)
{
	uint64_t bytes[HVT_RESCTRL_MAX_DOMAINS];
	bool avail[HVT_RESCTRL_MAX_DOMAINS];
	int rc;

	*g = (struct hvt_resctrl_group){0};
	snprintf(g->root, sizeof(g->root), "%s", root ? root : "/sys/fs/resctrl");
	if ((rc = check_mbm(g->root, err)))
		return rc;
	snprintf(g->dir, sizeof(g->dir), "%s/mon_groups/%.100s", g->root, name);
	if (!mkdir(g->dir, 0755))
		g->created = true;
	else if (errno == ENOSPC)
		return hvt_err_set(
		    err, -ENOSPC,
		    "%s: no free RMID for another monitoring group (see %s/info/L3_MON/num_rmids); remove unused groups",
		    g->dir, g->root);
	else if (errno != EEXIST)
		return hvt_err_set(err, -errno, "creating %s: %s", g->dir, strerror(errno));
	if ((rc = list_domains(g, err)) || (rc = move_threads(g, pid, err)) ||
	    (rc = hvt_resctrl_read(g, bytes, avail, err))) {
		hvt_resctrl_close(g);
		return rc;
	}
	return 0;
}

void hvt_resctrl_close(struct hvt_resctrl_group *g)
{
	if (g->created && rmdir(g->dir) == 0)
		g->created = false;
}
