/* SPDX-License-Identifier: MIT */
/*
 * Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.c): splitting an input into NUL-separated fields,
 * and files in a private temporary directory for parsers that read paths. Header-only so that each harness
 * is one object.
 */
#ifndef HVMTRACE_FUZZ_COMMON_H
#define HVMTRACE_FUZZ_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_FIELDS 16

/* An input cut at its NUL bytes: field i is a NUL-terminated copy; missing fields are NULL. */
struct fuzz_fields {
	char *buf;
	size_t n;
	char *f[FUZZ_MAX_FIELDS];
};

static inline void fuzz_split(struct fuzz_fields *ff, const uint8_t *data, size_t size)
{
	char *p;

	memset(ff, 0, sizeof(*ff));
	ff->buf = malloc(size + 1);
	if (!ff->buf)
		abort();
	memcpy(ff->buf, data, size);
	ff->buf[size] = 0;
	p = ff->buf;
	while (ff->n < FUZZ_MAX_FIELDS) {
		ff->f[ff->n++] = p;
		p += strlen(p);
		if (p == ff->buf + size)
			break;
		p++; /* past the separator */
	}
}

static inline void fuzz_fields_free(struct fuzz_fields *ff)
{
	free(ff->buf);
}

/* A private directory under TMPDIR (default /tmp), made once per process and removed by nobody: each
 * harness writes the same few names in it again and again. */
static inline const char *fuzz_tmpdir(void)
{
	static char dir[PATH_MAX];

	if (!dir[0]) {
		const char *t = getenv("TMPDIR");

		snprintf(dir, sizeof(dir), "%s/hvt-fuzz-XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(dir))
			abort();
	}
	return dir;
}

/* Writes text (may be NULL: the file is removed) to path. */
static inline void fuzz_put_file(const char *path, const char *text)
{
	int fd;
	size_t len, done = 0;

	if (!text) {
		if (unlink(path) && errno != ENOENT)
			abort();
		return;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	len = strlen(text);
	while (done < len) {
		ssize_t n = write(fd, text + done, len - done);

		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	close(fd);
}

/* mkdir -p of a path inside the private directory. */
static inline void fuzz_mkdirs(const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(p, 0700);
			*s = '/';
		}
	mkdir(p, 0700);
}

#endif
