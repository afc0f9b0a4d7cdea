// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: a whole trace file, as given. Finds what the reader does with torn, truncated and
 * corrupt files; most mutations break a CRC, so the record contents are fuzz_trace_records' job.
 */
#include "fuzz_common.h"
#include "fuzz_trace_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[PATH_MAX];
	int fd;

	if (!path[0])
		snprintf(path, sizeof(path), "%s/trace.hvt", fuzz_tmpdir());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
	fuzz_read_trace(path);
	return 0;
}
