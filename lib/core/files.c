// SPDX-License-Identifier: MIT
/* Inputs that are regular files, outputs that are not inputs, outputs replaced whole (hvmtrace/files.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hvmtrace/error.h"
#include "hvmtrace/files.h"

int hvt_open_regular(const char *path, mode_t *mode)
{
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	if (!S_ISREG(sb.st_mode)) {
		if (mode)
			*mode = sb.st_mode;
		close(fd);
		return -EINVAL;
	}
	return fd;
}

const char *hvt_file_type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "a regular file";
	case S_IFDIR:
		return "a directory";
	case S_IFIFO:
		return "a FIFO";
	case S_IFCHR:
		return "a character device";
	case S_IFBLK:
		return "a block device";
	case S_IFSOCK:
		return "a socket";
	default:
		return "not a regular file";
	}
}

/* What a path names: its file, or (not there yet) its directory and last component. */
struct file_id {
	bool exists;
	dev_t dev;
	ino_t ino;
	const char *name; /* last component, when !exists */
};

static int file_id(const char *path, struct file_id *id)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat sb;

	memset(id, 0, sizeof(*id));
	if (!stat(path, &sb)) {
		id->exists = true;
		id->dev = sb.st_dev;
		id->ino = sb.st_ino;
		return 0;
	}
	if (errno != ENOENT)
		return -errno;
	if (!slash) {
		strcpy(dir, ".");
		id->name = path;
	} else {
		size_t n = slash == path ? 1 : (size_t)(slash - path);

		if (n >= sizeof(dir))
			return -ENAMETOOLONG;
		memcpy(dir, path, n);
		dir[n] = '\0';
		id->name = slash + 1;
	}
	if (stat(dir, &sb))
		return -errno;
	id->dev = sb.st_dev;
	id->ino = sb.st_ino;
	return 0;
}

bool hvt_same_file(const char *a, const char *b)
{
	struct file_id ia, ib;

	if (file_id(a, &ia) || file_id(b, &ib) || ia.exists != ib.exists || ia.dev != ib.dev ||
	    ia.ino != ib.ino)
		return false;
	return ia.exists || !strcmp(ia.name, ib.name);
}

static void outfile_free(struct hvt_outfile *o)
{
	free(o->tmp);
	free(o->target);
	o->tmp = o->target = NULL;
	o->f = NULL;
}

int hvt_outfile_open(struct hvt_outfile *o, const char *path, struct hvt_err *err)
{
	const char *slash;
	struct stat sb;
	size_t dirlen;
	int fd;

	*o = (struct hvt_outfile){.path = path};
	if (!strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	if (!stat(path, &sb) && !S_ISREG(sb.st_mode)) {
		/* /dev/null, a FIFO or a terminal: there is nothing to replace, and renaming over it would be
		 * wrong */
		o->f = fopen(path, "we");
		if (!o->f)
			return hvt_err_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
		return 0;
	}
	/* a symlink's target is what gets replaced, not the link */
	o->target = !lstat(path, &sb) && S_ISLNK(sb.st_mode) ? realpath(path, NULL) : strdup(path);
	if (!o->target)
		return hvt_err_set(err, -errno, "cannot resolve %s: %s", path, strerror(errno));
	slash = strrchr(o->target, '/');
	dirlen = slash ? (size_t)(slash - o->target) + 1 : 0;
	if (asprintf(&o->tmp, "%.*s.%s.XXXXXX", (int)dirlen, o->target, o->target + dirlen) < 0) {
		o->tmp = NULL;
		outfile_free(o);
		return hvt_err_set(err, -ENOMEM, "out of memory");
	}
	fd = mkostemp(o->tmp, O_CLOEXEC); /* mode 0600 */
	if (fd < 0) {
		int rc = -errno;

		outfile_free(o);
		return hvt_err_set(err, rc, "cannot create %s: %s", path, strerror(-rc));
	}
	o->f = fdopen(fd, "w");
	if (!o->f) {
		int rc = -errno;

		close(fd);
		unlink(o->tmp);
		outfile_free(o);
		return hvt_err_set(err, rc, "cannot create %s: %s", path, strerror(-rc));
	}
	return 0;
}

int hvt_outfile_commit(struct hvt_outfile *o, struct hvt_err *err)
{
	int rc = 0;

	if (!o->f)
		return 0;
	if (o->f == stdout) {
		if (fflush(stdout))
			rc = hvt_err_set(err, -errno, "writing standard output: %s", strerror(errno));
		o->f = NULL;
		return rc;
	}
	errno = 0;
	if (fflush(o->f) || ferror(o->f) || (o->tmp && fdatasync(fileno(o->f))))
		rc = hvt_err_set(err, errno ? -errno : -EIO, "writing %s: %s", o->path,
				 strerror(errno ? errno : EIO));
	if (fclose(o->f) && !rc)
		rc = hvt_err_set(err, -errno, "writing %s: %s", o->path, strerror(errno));
	o->f = NULL;
	if (o->tmp && !rc && rename(o->tmp, o->target))
		rc = hvt_err_set(err, -errno, "cannot replace %s: %s", o->path, strerror(errno));
	if (o->tmp && rc)
		unlink(o->tmp);
	outfile_free(o);
	return rc;
}

int hvt_outfile_publish(struct hvt_outfile *o, struct hvt_err *err)
{
	int rc = 0;

	if (o->tmp && rename(o->tmp, o->target)) {
		rc = hvt_err_set(err, -errno, "cannot replace %s: %s", o->path, strerror(errno));
		unlink(o->tmp);
	}
	if (o->f && o->f != stdout)
		fclose(o->f);
	o->f = NULL;
	outfile_free(o);
	return rc;
}

void hvt_outfile_abort(struct hvt_outfile *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	else if (o->f)
		fflush(stdout);
	if (o->tmp)
		unlink(o->tmp);
	outfile_free(o);
}
