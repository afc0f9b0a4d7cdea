// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: the values users type: durations ("10ms"), sizes ("512M"), CPU lists ("0-3,8"), and a
 * command line through the option table that every command uses.
 *
 * Input, cut at NUL bytes: a duration, a size, a CPU list, then up to 12 arguments for a table with one
 * option of each type.
 */
#include "fuzz_common.h"
#include "hvmtrace/options.h"
#include "hvmtrace/util.h"

static void check_duration(const char *s)
{
	uint64_t ns, again;
	char buf[32];

	if (hvt_parse_duration(s, &ns))
		return;
	if (ns < 1 || ns > 1000000000000000000ull)
		abort(); /* the documented range */
	hvt_format_duration(ns, buf, sizeof(buf));
	/* what hvmtrace prints reads back as the same duration, while doubles hold it exactly */
	if (ns < (1ull << 53) && (hvt_parse_duration(buf, &again) || again != ns)) {
		fprintf(stderr, "duration '%s' = %llu ns prints as '%s', which does not read back\n", s,
			(unsigned long long)ns, buf);
		abort();
	}
}

static void check_size(const char *s)
{
	uint64_t bytes;
	char buf[32];

	if (hvt_parse_size(s, &bytes))
		return;
	if (bytes >> 63)
		abort();
	hvt_format_size(bytes, buf, sizeof(buf));
}

static void check_cpulist(const char *s)
{
	cpu_set_t set;
	int n = hvt_parse_cpulist(s, &set);

	if (n >= 0 && n != CPU_COUNT(&set))
		abort(); /* the count returned is the count of CPUs set */
}

static void check_options(char **argv, int argc)
{
	static FILE *devnull;
	static const struct hvt_opt_choice modes[] = {{"dirty-log", 1}, {"ad", 2}, {NULL, 0}};
	bool flag = false;
	const char *str = NULL, *path = NULL, *operand = NULL;
	int cpu = -1, mode = 0;
	int32_t count = 0;
	uint64_t dur = 0, sz = 0;
	const struct hvt_option opts[] = {
	    HVT_OPT_HEADING("Fuzz"),
	    HVT_OPT_FLAG('q', "quiet", &flag, "a flag"),
	    HVT_OPT_STRING('n', "name", &str, "NAME", "a string", .max = 16),
	    HVT_OPT_PATH('o', "output", &path, "FILE", "a path"),
	    HVT_OPT_INT('c', "count", &count, 1, 1000, "N", "an int"),
	    HVT_OPT_CPU(0, "cpu", &cpu, "CPU", "a CPU"),
	    HVT_OPT_DURATION('i', "interval", &dur, 10000000, "DUR", "a duration"),
	    HVT_OPT_SIZE('s', "size", &sz, 4096, 1ll << 40, 4096, "SIZE", "a size"),
	    HVT_OPT_CHOICE('m', "mode", &mode, modes, "MODE", "a choice"),
	    HVT_OPT_OPERAND(&operand, "FILE", "an operand"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline c = {
	    .prog = "fuzz", .synopsis = "[options] FILE", .options = opts, .usage_status = 2};
	int rc;

	if (!devnull && !(devnull = fopen("/dev/null", "we")))
		abort();
	rc = hvt_opts_parse_to(&c, argc, argv, devnull, devnull);
	if (rc == HVT_OPTS_RUN &&
	    ((count && (count < 1 || count > 1000)) || (dur && dur < 10000000) || sz % 4096 ||
	     sz > (1ull << 40) || (cpu != -1 && (cpu < 0 || cpu >= CPU_SETSIZE)) ||
	     (str && strlen(str) > 16)))
		abort(); /* a value outside its entry's bounds was let through */
	if (rc != HVT_OPTS_RUN && rc != 0 && rc != 2)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_fields ff;
	char *argv[FUZZ_MAX_FIELDS];
	int argc = 0;

	fuzz_split(&ff, data, size);
	check_duration(ff.f[0]);
	if (ff.n > 1)
		check_size(ff.f[1]);
	if (ff.n > 2)
		check_cpulist(ff.f[2]);
	argv[argc++] = "fuzz";
	for (size_t i = 3; i < ff.n; i++)
		argv[argc++] = ff.f[i];
	argv[argc] = NULL;
	check_options(argv, argc);
	fuzz_fields_free(&ff);
	return 0;
}
