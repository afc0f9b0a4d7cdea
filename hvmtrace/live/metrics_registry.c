// SPDX-License-Identifier: MIT
/* The registry of running recorders' metrics endpoints (metrics_registry.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvmtrace/util.h"
#include "metrics_registry.h"

void metrics_registry_dir(char *buf, size_t len)
{
	const char *env = getenv("HVMTRACE_RUN_DIR");

	if (env && *env)
		snprintf(buf, len, "%s", env);
	else if (geteuid() == 0)
		snprintf(buf, len, "/run/hvmtrace");
	else
		snprintf(buf, len, "/tmp/hvmtrace-%u", (unsigned)geteuid());
}

int metrics_registry_add(const char *url, char *path, size_t pathlen)
{
	char dir[256], tmp[300];
	struct stat st;
	FILE *f;

	metrics_registry_dir(dir, sizeof(dir));
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	/* someone else's directory (a /tmp squatter) is not ours to announce in */
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return -EPERM;
	snprintf(path, pathlen, "%s/record-%d.url", dir, (int)getpid());
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", url);
	if (fclose(f) || rename(tmp, path)) {
		int rc = -errno;

		unlink(tmp);
		return rc;
	}
	return 0;
}

int metrics_registry_each(void (*fn)(void *ctx, pid_t pid, const char *url), void *ctx)
{
	char dir[256], path[600], url[256];
	struct dirent *e;
	DIR *d;
	int n = 0;

	metrics_registry_dir(dir, sizeof(dir));
	d = opendir(dir);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		int pid;
		char tail[8];

		if (sscanf(e->d_name, "record-%d%7s", &pid, tail) != 2 || strcmp(tail, ".url") || pid <= 0 ||
		    !hvt_process_alive((pid_t)pid))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(url, sizeof(url), f)) {
			url[strcspn(url, "\n")] = 0;
			fn(ctx, (pid_t)pid, url);
			n++;
		}
		fclose(f);
	}
	closedir(d);
	return n;
}
