// SPDX-License-Identifier: MIT
/*
 * hvmtrace plot: runs hvmtrace-plot from the directory this program lies in (docs/plots.md). The pictures
 * are a program of their own so that cairo and its libraries are not mapped into `hvmtrace`, whose
 * `record` locks every mapped page (mlockall) within RLIMIT_MEMLOCK.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "hvmtrace/trace_input.h"

int cmd_plot(int argc, char **argv)
{
	char self[PATH_MAX], prog[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	(void)argc;
	if (n < 0) {
		fprintf(stderr, "hvmtrace plot: cannot find where hvmtrace lies: /proc/self/exe: %s\n",
			strerror(errno));
		return TRACE_USAGE;
	}
	self[n] = '\0';
	slash = strrchr(self, '/');
	*slash = '\0';
	snprintf(prog, sizeof(prog), "%s/hvmtrace-plot", self);
	execv(prog, argv);
	fprintf(stderr, "hvmtrace plot: cannot run %s: %s\n", prog, strerror(errno));
	return TRACE_USAGE;
}
