// SPDX-License-Identifier: MIT
/* The claims: which domain's tracing holds which host-physical memory (RUN_DIR/NAME/claim). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "claims.h"
#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/util.h"
#include "libvirt_domain.h"

#define CLAIM_LINE 160

/*
 * A claim (RUN_DIR/NAME/claim) is lines "PHYS SIZE" and one "owner PID START": the process that holds the
 * memory, with its start time (/proc/PID/stat), so that a pid used again later is not taken for it. The
 * owner is the libvirt daemon that runs the hook while the domain starts, then the QEMU the devmem helper
 * handed the memory to. A claim whose owner is gone is stale: its domain's release never ran (the daemon
 * died and lost the domain). A claim without an owner line is held (written before owners were recorded).
 */
static bool claim_owner_gone(FILE *f)
{
	char line[CLAIM_LINE];
	unsigned long long start, now;
	int pid;

	rewind(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "owner %d %llu", &pid, &start) == 2)
			return pid <= 0 || hvt_process_start_time(pid, &now) || now != start;
	return false;
}

/* Other running domains' claims that overlap ours. A stale one (claim_owner_gone) does not count; with
 * take_over (the hook's start, under the claims lock) it is removed, saying so on stderr. */
int hvt_lv_claims_check(const struct hvt_lv_domain *d, const struct hvt_range *x, size_t n, bool take_over,
			struct hvt_err *e)
{
	DIR *dir = opendir(d->t.run_dir);
	struct dirent *de;
	int rc = 0;

	if (!dir)
		return 0; /* no run directory yet: nobody claims anything */
	while (!rc && (de = readdir(dir))) {
		char path[4096], line[CLAIM_LINE];
		size_t hit = n;
		FILE *f;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, d->name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/claim", d->t.run_dir, de->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		while (hit == n && fgets(line, sizeof(line), f)) {
			unsigned long long p, s;

			if (sscanf(line, "%llx %llx", &p, &s) != 2)
				continue;
			for (size_t i = 0; i < n && hit == n; i++)
				if (x[i].start < p + s && p < x[i].start + x[i].size)
					hit = i;
		}
		if (hit < n && claim_owner_gone(f)) {
			if (take_over && !unlink(path))
				fprintf(
				    stderr,
				    "hvmtrace: domain '%s': took over the stale claim of domain '%s' on guest RAM "
				    "0x%llx+0x%llx (its owner is gone; its release never ran)\n",
				    d->name, de->d_name, (unsigned long long)x[hit].start,
				    (unsigned long long)x[hit].size);
		} else if (hit < n) {
			rc = hvt_err_set(
			    e, -EBUSY, "guest RAM 0x%llx+0x%llx is in use by running domain '%s'",
			    (unsigned long long)x[hit].start, (unsigned long long)x[hit].size, de->d_name);
		}
		fclose(f);
	}
	closedir(dir);
	return rc;
}

/* Writes RUN_DIR/NAME/claim (extents, then the owner) through a temporary file; the claims lock is held. */
static int write_claim(const struct hvt_lv_domain *d, const struct hvt_range *x, size_t n, pid_t owner,
		       struct hvt_err *e)
{
	char path[4096], tmp[4200];
	unsigned long long start;
	FILE *f;

	if (hvt_process_start_time(owner, &start))
		return hvt_err_set(e, -ESRCH, "the claim's owner, pid %d, is not running", (int)owner);
	hvt_lv_path(d, "claim", path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(f = fopen(tmp, "w")))
		return hvt_err_set(e, -errno, "%s: %s", tmp, strerror(errno));
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%llx %llx\n", (unsigned long long)x[i].start, (unsigned long long)x[i].size);
	fprintf(f, "owner %d %llu\n", (int)owner, start);
	if (fclose(f) || rename(tmp, path))
		return hvt_err_set(e, -errno, "%s: %s", path, strerror(errno));
	return 0;
}

/* One claimer at a time, so two domains starting together cannot both see the memory free: the lock's fd,
 * or -errno with e set. */
static int lock_claims(const struct hvt_lv_domain *d, struct hvt_err *e)
{
	char lock[4096];
	int lfd;

	snprintf(lock, sizeof(lock), "%s/claims.lock", d->t.run_dir);
	lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX)) {
		int rc = hvt_err_set(e, -errno, "%s: %s", lock, strerror(errno));

		if (lfd >= 0)
			close(lfd);
		return rc;
	}
	return lfd;
}

/* Writes the claim under the claims' lock; check_others: first refuse memory another live domain claims. */
static int claim(const struct hvt_lv_domain *d, pid_t owner, bool check_others, struct hvt_err *e)
{
	struct hvt_range *x;
	size_t n;
	int rc, lfd;

	rc = hvt_lv_extents(d, &x, &n, e);
	if (rc || !n)
		return rc;
	lfd = lock_claims(d, e);
	if (lfd < 0)
		rc = lfd;
	else if (!check_others || !(rc = hvt_lv_claims_check(d, x, n, true, e)))
		rc = write_claim(d, x, n, owner, e);
	if (lfd >= 0)
		close(lfd);
	free(x);
	return rc;
}

int hvt_lv_claim(const struct hvt_lv_domain *d, pid_t owner, struct hvt_err *e)
{
	return claim(d, owner, true, e);
}

int hvt_lv_claim_owner(const struct hvt_lv_domain *d, pid_t owner, struct hvt_err *e)
{
	return claim(d, owner, false, e);
}

void hvt_lv_unclaim(const struct hvt_lv_domain *d)
{
	char path[4096];

	hvt_lv_path(d, "claim", path, sizeof(path));
	unlink(path);
}
