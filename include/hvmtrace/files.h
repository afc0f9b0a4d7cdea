/* SPDX-License-Identifier: MIT */
/*
 * Files given on the command line, read and written safely (docs/reliability.md, "Limits"):
 *  - inputs must be regular files: a FIFO, device, socket or directory is refused before anything could
 *    block on it (a FIFO's open() waits for a writer; /dev/zero never ends);
 *  - an output may not be an input: paths are compared by the file they name (device and inode), not by
 *    their spelling, so "T", "./T" and a hard link to T are one file;
 *  - an output replaces its file only when it is complete: it is written to a temporary file in the same
 *    directory (mode 0600, like traces) and renamed over the target at the end, so a failed run never leaves
 *    a truncated file where a good one was.
 */
#ifndef HVMTRACE_FILES_H
#define HVMTRACE_FILES_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

struct hvt_err;

/*
 * Opens path read-only. Anything but a regular file is refused with -EINVAL, and *mode (if not NULL) gets
 * its type for the message (hvt_file_type_name); the open itself never waits (O_NONBLOCK). Returns the fd
 * or -errno.
 */
int hvt_open_regular(const char *path, mode_t *mode);

/* "a FIFO", "a directory", "a character device", "a block device", "a socket", "a regular file". */
const char *hvt_file_type_name(mode_t mode);

/*
 * Whether two paths name the same file: the same device and inode when both exist; when one does not exist
 * yet, the same directory (device and inode) and the same last component (so "F" and "./F" are one output
 * before either is created). Paths that cannot be resolved are taken as different.
 */
bool hvt_same_file(const char *a, const char *b);

/* An output file written whole or not at all. "-" is standard output, written as it goes. */
struct hvt_outfile {
	const char *path; /* as given */
	FILE *f;          /* write here */
	char *tmp;        /* the temporary file renamed to the target at commit; NULL when written in place */
	char *target;     /* the file to replace (path with symlinks resolved) */
};

/*
 * Opens an output. A regular file (existing or not) is written through a temporary file in its directory,
 * created 0600; an existing non-regular file (/dev/null, a FIFO, a terminal) is written in place. The
 * message names the path.
 */
int hvt_outfile_open(struct hvt_outfile *o, const char *path, struct hvt_err *err);
/* Flushes, syncs and renames the temporary file over the target; on failure removes it. Always closes. */
int hvt_outfile_commit(struct hvt_outfile *o, struct hvt_err *err);
/* Renames the temporary file over the target now, without syncing it, and closes o: for a file that goes
 * on being written through a descriptor of its own (a trace, whose records follow its header). The
 * rename is what keeps a kill from destroying the target; syncing is left to the file's own close. */
int hvt_outfile_publish(struct hvt_outfile *o, struct hvt_err *err);
/* Closes and removes the temporary file: the target stays as it was. */
void hvt_outfile_abort(struct hvt_outfile *o);

#endif
