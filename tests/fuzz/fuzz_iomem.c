// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the host address maps chanmap reads before it maps anything through /dev/mem:
 * /proc/iomem text, the memmap= arguments of a kernel command line, and /sys/firmware/memmap entries.
 *
 * Input, cut at NUL bytes: /proc/iomem text; a kernel command line; then up to four firmware map entries
 * as three fields each (start, end, type), written as DIR/N/{start,end,type}.
 */
#include "fuzz_common.h"
#include "hvmtrace/chanmap.h" /* struct hvt_range */
#include "hvmtrace/error.h"
#include "hvmtrace/iomem.h"

#define MAX_FW 4

static void put_fwmap(const char *dir, const struct fuzz_fields *ff, size_t *nfw)
{
	char path[PATH_MAX];

	*nfw = 0;
	for (size_t e = 0; e < MAX_FW; e++) {
		const char *names[3] = {"start", "end", "type"};
		bool present = 2 + 3 * e + 2 < ff->n;

		snprintf(path, sizeof(path), "%s/%zu", dir, e);
		if (present)
			fuzz_mkdirs(path);
		for (int k = 0; k < 3; k++) {
			char file[PATH_MAX];

			snprintf(file, sizeof(file), "%s/%s", path, names[k]);
			fuzz_put_file(file, present ? ff->f[2 + 3 * e + k] : NULL);
		}
		if (present)
			++*nfw;
		else
			rmdir(path);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char fwdir[PATH_MAX];
	struct hvt_err err = {{0}};
	struct fuzz_fields ff;
	struct hvt_iomem io = {0};
	struct hvt_range *r = NULL;
	size_t n = 0, nfw;

	if (!fwdir[0]) {
		snprintf(fwdir, sizeof(fwdir), "%s/memmap", fuzz_tmpdir());
		fuzz_mkdirs(fwdir);
	}
	fuzz_split(&ff, data, size);
	if (!hvt_iomem_parse(ff.f[0], "fuzz-iomem", &io, &err)) {
		for (size_t i = 0; i < io.n; i++) {
			const struct hvt_iomem_entry *x = &io.entries[i];
			int found = hvt_iomem_find(&io, x->start);

			if (found < 0 || x->end < x->start)
				abort(); /* an entry's own start lies in it, or in an entry nested in it */
			hvt_iomem_check_extent(&io, x->start, x->end - x->start + 1, &err);
		}
		hvt_iomem_check_extent(&io, 0x100000000ull, 1ull << 30, &err);
	}
	if (ff.n > 1 && !hvt_memmap_parse_cmdline(ff.f[1], &r, &n, &err)) {
		for (size_t i = 0; i < n; i++) {
			char buf[64];
			struct hvt_range *again = NULL;
			size_t m = 0;
			char arg[80];

			/* what chanmap reserve prints must read back as the same reservation */
			hvt_memmap_format(r[i].start, r[i].size, buf, sizeof(buf));
			snprintf(arg, sizeof(arg), "memmap=%s", buf);
			if (hvt_memmap_parse_cmdline(arg, &again, &m, &err) || m != 1 ||
			    again[0].start != r[i].start || again[0].size != r[i].size) {
				fprintf(stderr, "memmap %s does not read back as 0x%llx+0x%llx\n", arg,
					(unsigned long long)r[i].start, (unsigned long long)r[i].size);
				abort();
			}
			free(again);
		}
		free(r);
	}
	put_fwmap(fwdir, &ff, &nfw);
	if (nfw) {
		struct hvt_fwmap fw;

		if (!hvt_fwmap_read(fwdir, &fw, &err)) {
			struct hvt_range *res = NULL;
			size_t nres = 0;

			hvt_fwmap_check_ram(&fw, fw.entries[0].start, 4096, &err);
			if (io.entries && !hvt_iomem_user_reserved(&io, &fw, &res, &nres))
				free(res);
			hvt_fwmap_free(&fw);
		}
	}
	hvt_iomem_free(&io);
	fuzz_fields_free(&ff);
	return 0;
}
