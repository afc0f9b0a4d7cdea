// SPDX-License-Identifier: MIT
/*
 * qemu_phases: drives the PVH phase payload (tests/guest/phases.S) in a QEMU guest whose RAM is a shared
 * file (memory-backend-file,share=on), and writes the same phase log as hvmtrace-vmm --phase-log, so
 * check_phases can hold a trace of QEMU to the foundation test's exact sets.
 *
 *   qemu_phases prepare --ram FILE --low-ram SIZE --high-ram SIZE --payload NAME [--array-size SIZE]
 *       creates FILE (low RAM at offset 0, high RAM, which starts at 4 GiB, right after it: QEMU's order),
 *       writes the script where the payload looks for it and the "wait" command. Start QEMU after this.
 *   qemu_phases ready --ram FILE [--pid PID] [--ack-timeout DUR]
 *       waits until the guest has booted and waits for its first command: attach the tracer after this,
 *       or the firmware's boot-time writes land in its first intervals.
 *   qemu_phases run (same options as prepare) --hold DUR [--hold-intervals N --follow FILE]
 *                   --phase-log FILE [--pid PID] [--ack-timeout DUR]
 *       holds each phase DUR after the guest confirmed it (and, following the tracer's JSON Lines, until
 *       the tracer has harvested N whole intervals inside it: ../vmm/phase_hold.h), then asks for the
 *       next; logs everything.
 *
 * --ram-offset OFF: guest RAM is the part of --ram from OFF on, a file or device that exists (the devmem
 * backend's /dev/mem at a memmap= range, or its stand-in file); --pc: QEMU's pc machine with
 * max-ram-below-4g=--low-ram (libvirt has no microvm), so --high-ram lies right after --low-ram.
 *
 * A wait for the guest ends as soon as its outcome is known: the guest confirmed, reported a vector, or
 * QEMU (--pid) exited. Only a guest that does none of these meets --ack-timeout, a bound for a machine busy
 * with other work (default 300 s), not a guess at how long a boot takes.
 *
 * The guest has no doorbell here, so times come from watching the ack page (phases_abi.h): a phase began
 * between the command and the ack that shows it (logged as those bounds), and between two samples whose
 * pass counts differ by two or more at least one whole pass of the sampled phase ran (logged as a pass
 * over the time between them). Both are conservative: the checker's exact intervals only get fewer.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../guest/phases_abi.h"
#include "../vmm/guest_abi.h"
#include "../vmm/phase_hold.h"
#include "../vmm/phaselog.h"
#include "../vmm/script.h"
#include "../vmm/vm.h"
#include "hvmtrace/error.h"
#include "hvmtrace/options.h"
#include "hvmtrace/util.h"

#define PAGE      4096ull
#define HIGH_GPA  (4ull << 30)
#define SAMPLE_NS 1000000ull /* how often the ack page is read */
#define HISTORY   4          /* distinct pass counts remembered */
#define PASS_MASK ((1ull << PHASES_ACK_SHIFT) - 1)

struct options {
	const char *ram, *payload, *phase_log, *follow;
	uint64_t low_ram, high_ram, array_bytes, hold_ns, ack_timeout_ns;
	uint64_t ram_offset; /* where guest RAM starts in --ram (/dev/mem: its physical address) */
	bool pc;             /* -M pc with max-ram-below-4g=--low-ram, not microvm */
	unsigned hold_intervals;
	pid_t qemu_pid; /* 0: not watched */
};

struct guest {
	uint8_t *ram;
	uint64_t bytes;
	volatile uint32_t *cmd;
	volatile uint64_t *ack;
};

__attribute__((format(printf, 1, 2))) static void die(const char *fmt, ...);
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "qemu_phases: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static uint8_t *gpa_to_host(const struct guest *g, const struct options *o, uint64_t gpa, uint64_t len)
{
	if (gpa + len <= o->low_ram)
		return g->ram + gpa;
	if (gpa >= HIGH_GPA && gpa - HIGH_GPA + len <= o->high_ram)
		return g->ram + o->low_ram + (gpa - HIGH_GPA);
	return NULL;
}

static void map_ram(struct guest *g, const struct options *o, bool create)
{
	/* With --ram-offset the RAM is part of a file or device that is already there (/dev/mem, the
	 * devmem backend's stand-in): never created, truncated or sized here. */
	bool whole = !o->ram_offset;
	int fd = open(o->ram, O_RDWR | O_CLOEXEC | (create && whole ? O_CREAT | O_TRUNC : 0), 0600);
	struct stat st;

	g->bytes = o->low_ram + o->high_ram;
	if (fd < 0)
		die("--ram %s: cannot open", o->ram);
	if (create && whole && ftruncate(fd, (off_t)g->bytes))
		die("--ram %s: cannot size it", o->ram);
	if (fstat(fd, &st) || (S_ISREG(st.st_mode) && (uint64_t)st.st_size < o->ram_offset + g->bytes) ||
	    (whole && (uint64_t)st.st_size != g->bytes))
		die("--ram %s: not as large as --ram-offset + --low-ram + --high-ram", o->ram);
	g->ram = mmap(NULL, g->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)o->ram_offset);
	close(fd);
	if (g->ram == MAP_FAILED)
		die("--ram %s: cannot map it", o->ram);
	g->cmd = (volatile uint32_t *)gpa_to_host(g, o, PHASES_CMD_GPA, 4);
	g->ack = (volatile uint64_t *)gpa_to_host(g, o, PHASES_ACK_GPA, PAGE);
	if (!g->cmd || !g->ack)
		die("--ram %s: low RAM too small for the control pages", o->ram);
}

static void build_script(struct script *s, const struct options *o)
{
	struct script_geometry geo = {
	    .low_pages = o->low_ram / PAGE,
	    .high_first_gfn = HIGH_GPA / PAGE,
	    .high_pages = o->high_ram / PAGE,
	    .first_free_gfn = PHASES_FREE_GPA / PAGE,
	    .array_bytes = o->array_bytes,
	};
	struct hvt_err err = {{0}};

	if (script_build(s, o->payload, &geo, &err))
		die("%s", err.msg);
}

/* The script's bytes as the payload reads them; exits if they do not fit the script area. */
static uint8_t *encode_script(const struct script *s, size_t *len)
{
	uint8_t *buf;

	*len = script_encoded_size(s);
	if (*len > PHASES_SCRIPT_MAX)
		die("--payload %s: the script does not fit the payload's script area", s->name);
	buf = malloc(*len);
	if (!buf || script_encode(s, buf, *len) != *len)
		die("--payload %s: cannot encode the script", s->name);
	return buf;
}

static void prepare(const struct options *o)
{
	struct guest g;
	struct script s = {0};
	size_t len;
	uint8_t *bytes;

	map_ram(&g, o, true);
	build_script(&s, o);
	bytes = encode_script(&s, &len);
	memcpy(gpa_to_host(&g, o, PHASES_SCRIPT_GPA, len), bytes, len);
	*g.cmd = PHASES_CMD_WAIT;
	msync(g.ram, g.bytes, MS_SYNC);
	free(bytes);
	script_free(&s);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};

	nanosleep(&ts, NULL);
}

/* An ack page word at GPA `gpa` (phases_abi.h): the fault report lies in the ack page. */
static uint64_t ack_page_word(const struct guest *g, uint64_t gpa)
{
	return g->ack[(gpa - PHASES_ACK_GPA) / 8];
}

/* Says what reached the guest when its handler reported a vector (phases_abi.h), and fails. */
static void die_if_fault(const struct guest *g, uint64_t ack)
{
	uint64_t frame = PHASES_FAULT_STACK_TOP - 40;
	char err[40] = "none pushed";

	if (ack >> PHASES_ACK_SHIFT != PHASES_ACK_FAULT)
		return;
	if (ack_page_word(g, PHASES_FAULT_FRAME_BYTES) == 56)
		snprintf(err, sizeof(err), "0x%" PRIx64, ack_page_word(g, frame - 8));
	fprintf(
	    stderr,
	    "qemu_phases: vector %llu (an exception or a stray interrupt) reached the guest at RIP 0x%" PRIx64
	    " (CS 0x%" PRIx64 ", RFLAGS 0x%" PRIx64 ", RSP 0x%" PRIx64 "); error code %s; CR2 0x%" PRIx64
	    "; the guest has halted\n",
	    (unsigned long long)(ack & PASS_MASK), ack_page_word(g, frame), ack_page_word(g, frame + 8),
	    ack_page_word(g, frame + 16), ack_page_word(g, frame + 24), err,
	    ack_page_word(g, PHASES_FAULT_CR2));
	exit(1);
}

/* Fails at once when QEMU (--pid) has exited: the guest will not answer. */
static void die_if_qemu_gone(const struct options *o, const char *waiting_for)
{
	if (o->qemu_pid > 0 && !hvt_process_alive(o->qemu_pid)) {
		fprintf(stderr, "qemu_phases: QEMU (pid %d) exited while waiting for %s\n", (int)o->qemu_pid,
			waiting_for);
		exit(1);
	}
}

/* The ack word, after checking that no vector reached the guest. */
static uint64_t read_ack(const struct guest *g)
{
	uint64_t ack = __atomic_load_n(g->ack, __ATOMIC_ACQUIRE);

	die_if_fault(g, ack);
	return ack;
}

/*
 * Asks for phase `cmd` and waits until the ack shows phase `want`; returns that ack. The guest made the
 * change before *t_seen; the ack's pass count was still current at *t_read (just before the read).
 */
static uint64_t command(const struct guest *g, const struct options *o, uint32_t cmd, uint64_t want,
			uint64_t *t_read, uint64_t *t_seen)
{
	uint64_t deadline = hvt_now_ns() + o->ack_timeout_ns, ack;

	__atomic_store_n(g->cmd, cmd, __ATOMIC_RELEASE);
	for (;;) {
		*t_read = hvt_now_ns();
		ack = read_ack(g);
		if (ack >> PHASES_ACK_SHIFT == want)
			break;
		die_if_qemu_gone(o, "the guest's confirmation");
		if (hvt_now_ns() > deadline) {
			fprintf(stderr,
				"qemu_phases: the guest did not confirm phase %" PRIu64
				" within --ack-timeout (ack 0x%" PRIx64
				"): is it running phases.elf on --ram?\n",
				want, ack);
			exit(1);
		}
		sleep_ns(20000);
	}
	*t_seen = hvt_now_ns();
	return ack;
}

/*
 * Samples the ack page until the phase's hold is over, logging passes of phase k: if the count was still c
 * at time t1 (just before the last read that saw c) and is >= c + 2 at t2 (just after a later read), pass
 * c + 2 began after pass c + 1 ended, which was after t1, and ended before t2. So each logged pass lies
 * wholly inside [t1, t2], whatever a pass's length.
 */
static void watch_passes(const struct guest *g, const struct options *o, struct phaselog *pl,
			 struct phase_hold *hold, unsigned k, uint64_t count, uint64_t t)
{
	struct hvt_err err = {{0}};
	struct sample {
		uint64_t count, t_last;
	} hist[HISTORY] = {{count, t}};
	unsigned nhist = 1;
	uint64_t logged = count + 1; /* passes <= logged are logged or began before the phase was seen */

	for (;;) {
		int over = phase_hold_over(hold, hvt_now_ns(), &err);

		if (over < 0)
			die("phase %u: %s", k, err.msg);
		if (over) {
			if (hold->want)
				fprintf(
				    stderr,
				    "qemu_phases: phase %u held %.3f s, until %u whole intervals inside it\n",
				    k, (double)(hvt_now_ns() - hold->begin_ns) / 1e9, hold->have);
			break;
		}
		die_if_qemu_gone(o, "the phase to end");
		sleep_ns(SAMPLE_NS);
		/* The count was c at `before` at the latest and had become c by `now`. */
		uint64_t before = hvt_now_ns(), ack = read_ack(g), now = hvt_now_ns(), c = ack & PASS_MASK;

		if (ack >> PHASES_ACK_SHIFT != k)
			die("the guest left phase %u by itself (ack 0x%" PRIx64 ")", k, ack);
		if (c == hist[nhist - 1].count) {
			hist[nhist - 1].t_last = before;
			continue;
		}
		for (unsigned i = nhist; i-- > 0;)
			if (hist[i].count + 2 <= c) {
				if (hist[i].count + 2 > logged) {
					phaselog_pass(pl, k, 0, hist[i].count + 2, hist[i].t_last, now);
					if (phase_hold_pass(hold, hist[i].t_last, now))
						die("%s", "out of memory");
					logged = hist[i].count + 2;
				}
				break;
			}
		if (nhist == HISTORY)
			memmove(hist, hist + 1, --nhist * sizeof(*hist));
		hist[nhist++] = (struct sample){c, before};
	}
}

/*
 * The ack page is written by every pass, so it is part of every phase's write set. The command page is
 * read all the time, also while the guest waits for its first command, so it goes with the payload's
 * system pages (system_pages()).
 */
static void add_ack_page(struct script *s)
{
	for (unsigned k = 0; k < s->nphases; k++)
		if (script_add_range(&s->phases[k].write, PHASES_ACK_GPA / PAGE, 1, 1))
			die("%s", "out of memory");
}

/*
 * The payload's pages outside its phases, by class, from the layout the guest left in the ack page: the
 * image, the script and the command page; the fault stubs and the entry's stack are not touched once the
 * guest is ready, and its page tables only by the CPU's walks.
 */
static void system_pages(struct system_pages *sys, const struct guest *g, size_t script_len)
{
	const uint64_t tables = g->ack[(PHASES_LAYOUT_TABLES - PHASES_ACK_GPA) / 8],
		       tables_end = g->ack[(PHASES_LAYOUT_TABLES_END - PHASES_ACK_GPA) / 8],
		       image_end = g->ack[(PHASES_LAYOUT_IMAGE_END - PHASES_ACK_GPA) / 8];

	if (!(PHASES_IMAGE_GPA < tables && tables < tables_end && tables_end < image_end &&
	      image_end <= PHASES_SCRIPT_GPA && !(tables % PAGE) && !(tables_end % PAGE) &&
	      !(image_end % PAGE)))
		die("%s",
		    "the guest left no layout of its image in the ack page (a payload older than this driver?)");
	memset(sys, 0, sizeof(*sys));
	if (script_add_range(&sys->all, PHASES_IMAGE_GPA / PAGE, (image_end - PHASES_IMAGE_GPA) / PAGE, 1) ||
	    script_add_range(&sys->all, PHASES_SCRIPT_GPA / PAGE, (script_len + PAGE - 1) / PAGE, 1) ||
	    script_add_range(&sys->all, PHASES_CMD_GPA / PAGE, 1, 1) ||
	    script_add_range(&sys->untouched, PHASES_VECTORS_GPA / PAGE, 1, 1) ||
	    script_add_range(&sys->untouched, image_end / PAGE - 1, 1, 1) ||
	    script_add_range(&sys->tables, tables / PAGE, (tables_end - tables) / PAGE, 1))
		die("%s", "out of memory");
}

static void ready(const struct options *o)
{
	struct guest g;
	uint64_t deadline = hvt_now_ns() + o->ack_timeout_ns;

	map_ram(&g, o, false);
	while (read_ack(&g) >> PHASES_ACK_SHIFT != PHASES_ACK_READY) {
		die_if_qemu_gone(o, "the guest to boot");
		if (hvt_now_ns() > deadline) {
			fprintf(stderr,
				"qemu_phases: the guest on --ram %s is not ready within --ack-timeout\n",
				o->ram);
			exit(1);
		}
		sleep_ns(1000000);
	}
}

static void run(const struct options *o)
{
	const struct vm_slot slots[2] = {{.id = 0, .gpa = 0, .size = o->low_ram},
					 {.id = 1, .gpa = HIGH_GPA, .size = o->high_ram}};
	struct hvt_err err = {{0}};
	struct phaselog pl;
	struct phase_hold hold;
	struct guest g;
	struct script s = {0};
	struct system_pages sys;
	uint64_t t_cmd, t_read, t_seen;
	size_t len;
	uint8_t *bytes;

	map_ram(&g, o, false);
	build_script(&s, o);
	bytes = encode_script(&s, &len);
	if (memcmp(gpa_to_host(&g, o, PHASES_SCRIPT_GPA, len), bytes, len))
		die("--ram %s: holds another script (prepare with the same options)", o->ram);
	free(bytes);
	if (phaselog_open(&pl, o->phase_log, &err) ||
	    phase_hold_init(&hold, o->hold_ns, o->hold_intervals, o->follow, &err))
		die("%s", err.msg);
	add_ack_page(&s);
	system_pages(&sys, &g, len);
	phaselog_script(&pl, &s, o->hold_ns, &sys, slots, 2);
	system_pages_free(&sys);

	for (unsigned k = 0; k < s.nphases; k++) {
		t_cmd = hvt_now_ns();
		uint64_t ack = command(&g, o, k, k, &t_read, &t_seen);

		phaselog_phase(&pl, k, 0, t_cmd, t_seen);
		phase_hold_begin(&hold, t_seen); /* where the phase surely ran from */
		watch_passes(&g, o, &pl, &hold, k, ack & PASS_MASK, t_read);
	}
	t_cmd = hvt_now_ns();
	command(&g, o, s.nphases, PHASES_ACK_DONE, &t_read, &t_seen);
	phaselog_done(&pl, t_cmd, t_seen, "finished");
	phaselog_close(&pl);
	phase_hold_fini(&hold);
	script_free(&s);
}

enum verb { PREPARE, READY, RUN };

int main(int argc, char **argv)
{
	static const struct hvt_opt_choice verbs[] = {
	    {"prepare", PREPARE}, {"ready", READY}, {"run", RUN}, {NULL, 0}};
	struct options o = {.payload = "phases4",
			    .low_ram = 3ull << 30,
			    .high_ram = 1ull << 30,
			    .array_bytes = 64ull << 20,
			    .hold_ns = 1000000000ull,
			    .ack_timeout_ns = 300000000000ull};
	enum verb verb = PREPARE;
	const struct hvt_option opts[] = {
	    HVT_OPT_CHOICE(0, NULL, &verb, verbs, "VERB", "prepare, ready or run", .required = true),
	    HVT_OPT_PATH(0, "ram", &o.ram, "FILE", "the guest's RAM file", .required = true),
	    HVT_OPT_SIZE(
		0, "ram-offset", &o.ram_offset, 0, 0, 4096, "OFF",
		"guest RAM starts at OFF in --ram, which must exist (/dev/mem: the physical address)"),
	    HVT_OPT_FLAG(0, "pc", &o.pc,
			 "QEMU's pc machine with max-ram-below-4g=--low-ram (default microvm)"),
	    HVT_OPT_SIZE(0, "low-ram", &o.low_ram, 2 << 20, 0, 2 << 20, "SIZE", "RAM at 0 (default 3G)"),
	    HVT_OPT_SIZE(0, "high-ram", &o.high_ram, 2 << 20, 0, 2 << 20, "SIZE",
			 "RAM at 4 GiB (default 1G)"),
	    HVT_OPT_STRING(0, "payload", &o.payload, "NAME", "the phase script (default phases4)"),
	    HVT_OPT_SIZE(0, "array-size", &o.array_bytes, 2 << 20, 0, 2 << 20, "SIZE",
			 "array payload: bytes of each array (default 64M)"),
	    HVT_OPT_DURATION(0, "hold", &o.hold_ns, 1, "DUR",
			     "run: how long each phase is held (default 1s)"),
	    HVT_OPT_PATH(0, "phase-log", &o.phase_log, "FILE", "run: the phase log to write"),
	    HVT_OPT_INT(0, "hold-intervals", &o.hold_intervals, 1, 1u << 30, "N",
			"run: also hold each phase until the tracer harvested N whole intervals in it"),
	    HVT_OPT_PATH(0, "follow", &o.follow, "FILE", "run: the tracer's JSON Lines, read as they grow"),
	    HVT_OPT_INT(0, "pid", &o.qemu_pid, 1, INT32_MAX, "PID", "QEMU's pid: stop waiting once it exits"),
	    HVT_OPT_DURATION(0, "ack-timeout", &o.ack_timeout_ns, 1, "DUR",
			     "overall bound on the guest's answer (default 300s)"),
	    HVT_OPT_END,
	};
	const struct hvt_cmdline cmd = {
	    .prog = "qemu_phases",
	    .synopsis = "prepare|ready|run --ram FILE [options]",
	    .options = opts,
	    .usage_status = 2,
	};
	int rc = hvt_opts_parse(&cmd, argc, argv);

	if (rc != HVT_OPTS_RUN)
		return rc;
	if (!o.hold_intervals != !o.follow) {
		fprintf(stderr, "qemu_phases: --hold-intervals and --follow go together\n");
		return 2;
	}
	if (verb == RUN && !o.phase_log) {
		fprintf(stderr, "qemu_phases: run needs --phase-log FILE\n");
		return 2;
	}
	/* microvm: RAM up to 3 GiB at 0, the rest at 4 GiB (hw/i386/microvm.c); pc: up to max-ram-below-4g
	 * (hw/i386/pc_piix.c). */
	if (!o.pc && o.high_ram && o.low_ram != 3ull << 30)
		die("--low-ram %s: QEMU's microvm has RAM at 4 GiB only when 3 GiB are below it",
		    "must be 3G");
	if (verb == PREPARE)
		prepare(&o);
	else if (verb == READY)
		ready(&o);
	else
		run(&o);
	return 0;
}
