// SPDX-License-Identifier: MIT
/*
 * stamp_lines: copies standard input to standard output, prefixing each line with the host's
 * CLOCK_MONOTONIC time in nanoseconds when it arrived: "<ns> <line>". Piping a guest's serial console
 * through it puts the guest's progress markers on the same clock as a trace's intervals.
 */
#include <stdio.h>
#include <stdlib.h>

#include "hvmtrace/util.h"

int main(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	while ((n = getline(&line, &cap, stdin)) > 0) {
		printf("%llu %s%s", (unsigned long long)hvt_now_ns(), line, line[n - 1] == '\n' ? "" : "\n");
		fflush(stdout);
	}
	free(line);
	return 0;
}
