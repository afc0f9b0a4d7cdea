// SPDX-License-Identifier: MIT
/* Whether an emulator is hvmtrace's patched QEMU (emulator.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emulator.h"
#include "hvmtrace/error.h"

#define HELP_MAX (256u << 10) /* QEMU 10.0's list is ~3 KB */

/* A line of the list that is exactly the type name (QEMU indents each: "  hvmtrace"). */
static bool lists_type(const char *out, const char *type)
{
	size_t n = strlen(type);

	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		while (*l == ' ' || *l == '\t')
			l++;
		if (!strncmp(l, type, n) && (l[n] == '\n' || l[n] == 0 || l[n] == ' '))
			return true;
	}
	return false;
}

int hvt_lv_check_emulator(const char *emulator, struct hvt_err *e)
{
	static char out[HELP_MAX + 1];
	size_t len = 0;
	int fds[2], status;
	ssize_t r;
	pid_t pid;

	if (access(emulator, X_OK))
		return hvt_err_set(e, -errno,
				   "emulator %s: %s (make install-qemu installs the patched QEMU at %s)",
				   emulator, strerror(errno), HVT_QEMU_DEFAULT);
	if (pipe2(fds, O_CLOEXEC))
		return hvt_err_set(e, -errno, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(fds[1], 1);
		dup2(null, 2);
		execl(emulator, emulator, "-object", "help", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (pid > 0 && len < HELP_MAX &&
	       ((r = read(fds[0], out + len, HELP_MAX - len)) > 0 || (r < 0 && errno == EINTR)))
		len += r > 0 ? (size_t)r : 0;
	close(fds[0]);
	if (pid < 0)
		return hvt_err_set(e, -errno, "fork: %s", strerror(errno));
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	out[len] = 0;
	if (!lists_type(out, "hvmtrace"))
		return hvt_err_set(e, -ENOTSUP,
				   "emulator %s is not hvmtrace's patched QEMU: its '-object help' lists no "
				   "hvmtrace object (make install-qemu installs one at %s)",
				   emulator, HVT_QEMU_DEFAULT);
	return 0;
}
