// SPDX-License-Identifier: MIT
/* The host checks: whether this host can trace a domain as its request asks, before the domain starts. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "claims.h"
#include "hvmtrace/chanmap.h"
#include "hvmtrace/error.h"
#include "hvmtrace/iomem.h"
#include "hvmtrace/util.h"
#include "host_checks.h"
#include "libvirt_domain.h"

static int check_cpu(const struct hvt_lv_domain *d, struct hvt_err *e)
{
	char online[256];
	cpu_set_t on;

	if (hvt_read_text("/sys/devices/system/cpu/online", online, sizeof(online), e) ||
	    hvt_parse_cpulist(online, &on) < 0)
		return hvt_err_set(e, -EIO, "cannot read this host's online CPUs");
	if (!CPU_ISSET(d->t.cpu, &on))
		return hvt_err_set(e, -ENODEV, "tracer CPU %d does not exist on this host (online: %s)",
				   d->t.cpu, online);
	if (d->pinned && CPU_ISSET(d->t.cpu, &d->pin_set))
		return hvt_err_set(
		    e, -EBUSY,
		    "tracer CPU %d is one the domain's vCPUs or emulator threads are pinned to "
		    "(<cputune>)",
		    d->t.cpu);
	return 0;
}

bool hvt_lv_systemd_runs(void)
{
	struct stat st;

	return !getenv("HVMTRACE_NO_SYSTEMD") && !stat("/run/systemd/system", &st) && S_ISDIR(st.st_mode);
}

/* Directories the hook, outside any sandbox, can write but the tracer's unit
 * (hvmtrace/libvirt/hvmtrace@.service) cannot keep a trace in: a domain whose traces would go there is
 * refused rather than traced into nothing. */
static const struct {
	const char *dir, *why;
} unit_unfit[] = {
    {"/tmp", "PrivateTmp=yes: the unit's /tmp is its own, removed when it stops"},
    {"/var/tmp", "PrivateTmp=yes: the unit's /var/tmp is its own, removed when it stops"},
    {"/home", "ProtectHome=yes: the unit cannot see it"},
    {"/root", "ProtectHome=yes: the unit cannot see it"},
    {"/run/user", "ProtectHome=yes: the unit cannot see it"},
    {"/usr", "ProtectSystem=full: read-only in the unit"},
    {"/boot", "ProtectSystem=full: read-only in the unit"},
    {"/efi", "ProtectSystem=full: read-only in the unit"},
    {"/etc", "ProtectSystem=full: read-only in the unit"},
};

static int check_unit_can_write(const char *dir, struct hvt_err *e)
{
	char real[PATH_MAX];

	if (!realpath(dir, real))
		return hvt_err_set(e, -errno, "output directory %s: %s", dir, strerror(errno));
	for (size_t i = 0; i < sizeof(unit_unfit) / sizeof(unit_unfit[0]); i++) {
		size_t len = strlen(unit_unfit[i].dir);

		if (!strncmp(real, unit_unfit[i].dir, len) && (real[len] == '/' || !real[len]))
			return hvt_err_set(
			    e, -EACCES,
			    "output directory %s is under %s, where the tracer's systemd unit "
			    "hvmtrace@.service cannot keep a trace (%s): choose another, such as "
			    "/var/lib/hvmtrace",
			    dir, unit_unfit[i].dir, unit_unfit[i].why);
	}
	return 0;
}

int hvt_lv_check_output(const char *dir, struct hvt_err *e)
{
	char probe[4096];
	struct stat st;
	int fd, rc;

	if (stat(dir, &st))
		return hvt_err_set(e, -errno, "output directory %s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return hvt_err_set(e, -ENOTDIR, "output directory %s is not a directory", dir);
	if (hvt_lv_systemd_runs() && (rc = check_unit_can_write(dir, e)))
		return rc;
	/* Root passes access(W_OK) on a read-only mount: only creating a file tells. */
	snprintf(probe, sizeof(probe), "%s/.hvmtrace-probe-XXXXXX", dir);
	fd = mkstemp(probe);
	if (fd < 0)
		return hvt_err_set(e, -errno, "output directory %s is not writable: %s", dir,
				   strerror(errno));
	close(fd);
	unlink(probe);
	return 0;
}

static int check_iomem(const struct hvt_lv_domain *d, const struct hvt_range *x, size_t n, struct hvt_err *e)
{
	struct hvt_iomem io;
	int rc = hvt_iomem_read(d->t.iomem, &io, e);

	if (rc)
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		rc = hvt_iomem_check_extent(&io, x[i].start, x[i].size, e);
		if (rc)
			hvt_err_prefix(e, rc, "guest RAM: ");
	}
	hvt_iomem_free(&io);
	return rc;
}

/* QEMU's command line must be the one virt-xml writes for this request and name (a renamed or hand-edited
 * domain would put QEMU's sockets where the hook does not look). */
static int check_commandline(const struct hvt_lv_domain *d, struct hvt_err *e)
{
	char want[4200];

	hvt_lv_path(d, "qemu/vm.sock", want, sizeof(want));
	if (!d->qemu_socket || strcmp(d->qemu_socket, want))
		return hvt_err_set(
		    e, -EINVAL,
		    "<qemu:commandline> puts the hvmtrace socket at %s, not %s: run hvmtrace virt-xml "
		    "on this domain again",
		    d->qemu_socket ? d->qemu_socket : "(nowhere)", want);
	hvt_lv_path(d, "devmem.sock", want, sizeof(want));
	if (d->t.ram != HVT_LV_RAM_NONE && (!d->qemu_helper || strcmp(d->qemu_helper, want)))
		return hvt_err_set(
		    e, -EINVAL,
		    "<qemu:commandline> takes guest RAM from helper %s, not %s: run hvmtrace virt-xml "
		    "on this domain again",
		    d->qemu_helper ? d->qemu_helper : "(none)", want);
	return 0;
}

int hvt_lv_check(const struct hvt_lv_domain *d, struct hvt_err *e)
{
	struct hvt_range *x = NULL;
	size_t n = 0;
	int rc;

	if (!d->traced)
		return 0;
	rc = check_cpu(d, e);
	if (!rc)
		rc = hvt_lv_check_output(d->t.output, e);
	if (!rc)
		rc = hvt_lv_extents(d, &x, &n, e);
	if (!rc && n)
		rc = check_iomem(d, x, n, e);
	if (!rc && n)
		rc = hvt_lv_claims_check(d, x, n, false, e);
	if (!rc)
		rc = check_commandline(d, e);
	free(x);
	return rc;
}

/* The hook saves each started domain's XML in RUN/NAME/domain.xml and removes RUN/NAME when it is
 * released, so the run directory lists the traced domains that run. */
size_t hvt_lv_cpu_sharers(const struct hvt_lv_domain *d, char *names, size_t len)
{
	DIR *dir = opendir(d->t.run_dir);
	struct dirent *de;
	size_t count = 0, used = 0;

	if (len)
		names[0] = 0;
	while (dir && (de = readdir(dir))) {
		char path[4200], *xml = NULL;
		struct hvt_lv_domain o;
		struct hvt_err e = {{0}};
		size_t xlen;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, d->name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/domain.xml", d->t.run_dir, de->d_name);
		if (hvt_read_file(path, "domain XML", 16u << 20, &xml, &xlen, &e))
			continue;
		if (!hvt_lv_parse(xml, xlen, &o, &e)) {
			if (o.traced && o.t.cpu == d->t.cpu) {
				used += snprintf(names + used, used < len ? len - used : 0, "%s'%s'",
						 count ? ", " : "", o.name);
				count++;
			}
			hvt_lv_free(&o);
		}
		free(xml);
	}
	if (dir)
		closedir(dir);
	return count;
}
