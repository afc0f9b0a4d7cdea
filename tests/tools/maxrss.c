// SPDX-License-Identifier: MIT
/*
 * maxrss [-c CPU] OUT CMD [ARG…]: runs CMD, writes its peak resident memory in KiB (wait4's ru_maxrss) to the
 * file OUT, and exits with CMD's status (128 + N for signal N). For tests that bound what a command may use.
 * With -c, the file CPU gets its user and system CPU seconds ("1.23 0.45"): benchmarks on a shared machine
 * say what the command cost beside its wall time.
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct rusage ru;
	int st;
	pid_t pid;
	FILE *f;
	const char *cpu = NULL;

	if (argc > 2 && !strcmp(argv[1], "-c")) {
		cpu = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: maxrss [-c CPU] OUT CMD [ARG...]\n");
		return 2;
	}
	pid = fork();
	if (pid < 0)
		return 2;
	if (!pid) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	if (wait4(pid, &st, 0, &ru) != pid)
		return 2;
	f = fopen(argv[1], "w");
	if (!f || fprintf(f, "%ld\n", ru.ru_maxrss) < 0 || fclose(f))
		return 2;
	f = cpu ? fopen(cpu, "w") : NULL;
	if (cpu && (!f ||
		    fprintf(f, "%ld.%06ld %ld.%06ld\n", (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
			    (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec) < 0 ||
		    fclose(f)))
		return 2;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
