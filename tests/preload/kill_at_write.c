// SPDX-License-Identifier: MIT
/*
 * A crash at an exact moment, preloaded (LD_PRELOAD) into a program under test: with HVT_KILL_AT_WRITE=TEXT,
 * the first write() to a file whose path contains TEXT kills the process with SIGKILL instead of writing.
 * Works with sanitized programs too (then after their runtime in LD_PRELOAD).
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ssize_t write(int fd, const void *buf, size_t n)
{
	static const char *text;
	static int checked;
	char link[64], path[4096];
	ssize_t len;

	static ssize_t (*real_write)(int, const void *, size_t);

	if (!real_write)
		real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
	if (!checked) {
		text = getenv("HVT_KILL_AT_WRITE");
		checked = 1;
	}
	if (text && *text) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		len = readlink(link, path, sizeof(path) - 1);
		if (len > 0) {
			path[len] = 0;
			if (strstr(path, text))
				kill(getpid(), SIGKILL);
		}
	}
	return real_write(fd, buf, n);
}
