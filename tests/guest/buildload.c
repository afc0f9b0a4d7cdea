// SPDX-License-Identifier: MIT
/*
 * buildload: a build-like load for a Linux guest, for --seconds (and at least --min-rounds rounds), with a
 * kernel build's process names. It re-executes itself through links named as a build's programs, so that each
 * process's comm
 * (/proc/PID/comm, what the guest agent reports) is right from its exec: a `make` runs --jobs compilations
 * at a time; each is a driver (forked from make) that runs `cc1` (reads a generated source file, works on
 * a private heap: parse trees, allocate, fill, walk; writes the assembly) and then becomes `as` (reads the
 * assembly, writes the object file); after every round `ld` reads all objects and writes one binary. Files
 * live in tmpfs (/tmp), so the memory traffic is the page cache's and the processes' own, like a kernel
 * build's. --units N sources a round (64); each cc1 works on a heap of --heap-kib KiB (4096) in --passes
 * N passes (1: build it and walk it once; each more reads and rewrites it all, as optimisation passes do
 * their IR, so a compiler lives longer). It prints "HVT PHASE build" at the
 * start and "HVT PHASE done" at the end, with the rounds and programs run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DIR       "/tmp/build"
#define BINDIR    DIR "/bin"
#define SRC_BYTES (256u << 10)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void write_file(const char *path, const char *buf, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f || fwrite(buf, 1, len, f) != len || fclose(f))
		die(path);
}

static void read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f || fread(buf, 1, len, f) != len)
		die(path);
	fclose(f);
}

/* cc1 UNIT PASSES: source in, a heap worked over (built, walked, then PASSES - 1 more passes that read and
 * rewrite all of it, as optimisation passes do their IR), assembly out. */
static int cc1(int unit, int passes, size_t heap_bytes)
{
	char src[64], asm_path[64];
	char *buf = malloc(SRC_BYTES), *heap = malloc(heap_bytes);
	unsigned long sum = 0;

	if (!buf || !heap)
		die("cc1");
	snprintf(src, sizeof(src), DIR "/u%d.c", unit);
	snprintf(asm_path, sizeof(asm_path), DIR "/u%d.s", unit);
	read_file(src, buf, SRC_BYTES);
	for (size_t i = 0; i < heap_bytes; i += 64)
		heap[i] = buf[i % SRC_BYTES];
	for (size_t i = 0; i < heap_bytes; i += 64)
		sum += (unsigned char)heap[(i * 7919) % heap_bytes];
	for (int p = 1; p < passes; p++)
		for (size_t i = 0; i < heap_bytes; i += 64)
			heap[i] =
			    (char)(heap[i] + (char)(sum += (unsigned char)heap[(i * 7919) % heap_bytes]));
	memset(buf, (int)(sum & 0xff), SRC_BYTES / 2);
	write_file(asm_path, buf, SRC_BYTES / 2);
	return 0;
}

/* as UNIT: assembly in, object out. */
static int as(int unit)
{
	char asm_path[64], obj[64];
	char *buf = malloc(SRC_BYTES / 2);

	if (!buf)
		die("as");
	snprintf(asm_path, sizeof(asm_path), DIR "/u%d.s", unit);
	snprintf(obj, sizeof(obj), DIR "/u%d.o", unit);
	read_file(asm_path, buf, SRC_BYTES / 2);
	for (size_t i = 0; i < SRC_BYTES / 2; i++)
		buf[i] ^= 0x5a;
	write_file(obj, buf, SRC_BYTES / 2);
	return 0;
}

/* ld UNITS: every object in, the binary out. */
static int ld(int units)
{
	char *buf = malloc(SRC_BYTES / 2);
	FILE *out = fopen(DIR "/a.out", "w");

	for (int u = 0; buf && out && u < units; u++) {
		char path[64];

		snprintf(path, sizeof(path), DIR "/u%d.o", u);
		read_file(path, buf, SRC_BYTES / 2);
		if (fwrite(buf, 1, SRC_BYTES / 2, out) != SRC_BYTES / 2)
			break;
	}
	if (!buf || !out || fclose(out))
		die("ld: " DIR "/a.out");
	return 0;
}

/* Becomes the build's program prog, with the arguments args (NULL-terminated, after the name; two at most).
 */
static void run(const char *prog, const char *const *args)
{
	char path[64];
	const char *argv[4] = {prog};

	for (int i = 0; i < 2 && args[i]; i++)
		argv[i + 1] = args[i];
	snprintf(path, sizeof(path), BINDIR "/%s", prog);
	execv(path, (char *const *)argv);
	die(path);
}

/* Waits for pid (-1: any child); a child that failed fails the build, as in make. */
static void wait_ok(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "make: a program of the build failed\n");
		exit(1);
	}
}

/* One compilation, as gcc's driver does it: cc1, then as (the driver becomes it). cc1_options: its
 * passes and heap, as "PASSES:HEAP_KIB". */
static void compile(int unit, const char *cc1_options)
{
	char u[16];
	pid_t pid;

	snprintf(u, sizeof(u), "%d", unit);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		run("cc1", (const char *const[]){u, cc1_options, NULL});
	wait_ok(pid);
	run("as", (const char *const[]){u, NULL});
}

static int make(double seconds, unsigned min_rounds, int jobs, int units, const char *cc1_options)
{
	char *buf = malloc(SRC_BYTES);
	unsigned rounds = 0, programs = 0;

	if (!buf)
		die("make");
	for (int u = 0; u < units; u++) {
		char path[64];

		for (size_t i = 0; i < SRC_BYTES; i++)
			buf[i] = (char)('a' + (i * 31 + (size_t)u) % 26);
		snprintf(path, sizeof(path), DIR "/u%d.c", u);
		write_file(path, buf, SRC_BYTES);
	}
	char units_arg[16];

	snprintf(units_arg, sizeof(units_arg), "%d", units);
	printf("HVT PHASE build\n");
	for (double end = now() + seconds; now() < end || rounds < min_rounds; rounds++) {
		int running = 0;
		pid_t pid;

		for (int u = 0; u < units; u++) {
			if (running == jobs) {
				wait_ok(-1);
				running--;
			}
			pid = fork();
			if (pid < 0)
				die("fork");
			if (pid == 0)
				compile(u, cc1_options);
			running++;
			programs += 2;
		}
		while (running-- > 0)
			wait_ok(-1);
		pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0)
			run("ld", (const char *const[]){units_arg, NULL});
		wait_ok(pid);
		programs++;
	}
	printf("HVT PHASE done %u rounds, %u programs\n", rounds, programs);
	return 0;
}

/* Links make, cc1, as and ld to this program, then becomes make: each exec names its process. */
static void become_make(char **argv)
{
	static const char *const progs[] = {"make", "cc1", "as", "ld"};
	char self[256], link_path[64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0 || n == sizeof(self) - 1)
		die("buildload: /proc/self/exe");
	self[n] = '\0';
	if ((mkdir(DIR, 0755) && errno != EEXIST) || (mkdir(BINDIR, 0755) && errno != EEXIST))
		die("buildload: " BINDIR);
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		snprintf(link_path, sizeof(link_path), BINDIR "/%s", progs[i]);
		if (unlink(link_path) && errno != ENOENT)
			die(link_path);
		if (symlink(self, link_path))
			die(link_path);
	}
	argv[0] = "make";
	execv(BINDIR "/make", argv);
	die(BINDIR "/make");
}

int main(int argc, char **argv)
{
	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	double seconds = 10;
	int jobs = 4, units = 64, passes = 1, heap_kib = 4096, min_rounds = 0;
	char cc1_options[32];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(name, "cc1") && argc == 3 && sscanf(argv[2], "%d:%d", &passes, &heap_kib) == 2)
		return cc1(atoi(argv[1]), passes, (size_t)heap_kib << 10);
	if (!strcmp(name, "as") && argc == 2)
		return as(atoi(argv[1]));
	if (!strcmp(name, "ld") && argc == 2)
		return ld(atoi(argv[1]));
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--seconds"))
			seconds = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--jobs"))
			jobs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--units"))
			units = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--passes"))
			passes = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--heap-kib"))
			heap_kib = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--min-rounds"))
			min_rounds = atoi(argv[i + 1]);
	}
	if (min_rounds < 0 || jobs < 1 || units < 1 || units > 4096 || passes < 1 || heap_kib < 64 ||
	    heap_kib > (1 << 20)) {
		fprintf(
		    stderr,
		    "buildload: --jobs, --units (to 4096), --passes at least 1; --heap-kib 64 to 1048576\n");
		return 2;
	}
	snprintf(cc1_options, sizeof(cc1_options), "%d:%d", passes, heap_kib);
	if (strcmp(name, "make"))
		become_make(argv);
	return make(seconds, (unsigned)min_rounds, jobs, units, cc1_options);
}
