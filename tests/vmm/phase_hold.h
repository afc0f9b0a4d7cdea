/* SPDX-License-Identifier: MIT */
/*
 * When a phase may end: after its hold time (hvmtrace-vmm --phase-time, qemu_phases --hold) and, when the
 * driver follows the tracer (--follow FILE, the file `hvmtrace record --jsonl FILE` writes one flushed line
 * per harvested interval), only once the tracer has harvested --hold-intervals N whole intervals inside it.
 * "Whole" is what check_phases (tests/tools) counts as wholly inside a phase: the window from the previous
 * interval's end to this interval's harvest end lies in the phase, and a logged pass lies wholly inside the
 * interval. So a machine busy with other work makes phases longer, never too short for the checker, and
 * what an exact interval must contain does not change. The tracer and its trace format know nothing of it.
 */
#ifndef HVMTRACE_VMM_PHASE_HOLD_H
#define HVMTRACE_VMM_PHASE_HOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hvt_err;

struct hold_pass {
	uint64_t t_start_ns, t_end_ns;
};

struct phase_hold {
	uint64_t min_ns;  /* the hold time */
	unsigned want;    /* whole intervals per phase; 0: the hold time alone */
	const char *path; /* the tracer's JSON Lines; NULL: not followed */
	int fd;           /* -1 until the tracer has created the file */
	uint64_t offset;  /* bytes of the file read so far */
	char *head;       /* the head (HOLD_HEAD bytes at most) of the line being read */
	size_t len;
	bool have_prev; /* prev_end_ns holds the last interval's end */
	uint64_t prev_end_ns;
	uint64_t intervals;    /* lines read */
	uint64_t last_news_ns; /* when the last line came (or the phase began) */
	uint64_t last_poll_ns;
	/* The phase in progress. */
	uint64_t begin_ns;
	unsigned have;                /* whole intervals inside it */
	unsigned inside;              /* intervals inside it, whole or not */
	uint64_t shortest_pass_ns;    /* of the passes logged in it; UINT64_MAX: none */
	uint64_t longest_interval_ns; /* of the intervals inside it */
	uint64_t pass_sum_ns;         /* of the passes logged in it, and their number */
	uint64_t interval_sum_ns;     /* of the intervals inside it */
	unsigned passes_logged;
	struct hold_pass *passes; /* logged passes not yet before every interval read */
	size_t npasses, pass_cap;
};

/* follow NULL: the hold time alone (want must be 0). */
int phase_hold_init(struct phase_hold *h, uint64_t min_ns, unsigned want, const char *follow,
		    struct hvt_err *err);
void phase_hold_fini(struct phase_hold *h);

/* The phase began at t_ns (for a phase known by bounds: the latest bound, where it surely ran). */
void phase_hold_begin(struct phase_hold *h, uint64_t t_ns);
/* A pass the driver logged in the phase log (only logged passes count, as for the checker). */
int phase_hold_pass(struct phase_hold *h, uint64_t t_start_ns, uint64_t t_end_ns);
/* 1 when the phase may end at now_ns, 0 not yet; a negative errno (err says why) when the tracer has
 * harvested nothing for HOLD_STALL_S seconds, when many intervals inside the phase held no logged pass and
 * no pass of the phase was shorter than its longest interval (the check could never count one: "passes
 * take longer than an interval"), when far more held none though passes would fit (the guest is preempted
 * in every pass), or when its file cannot be read. */
int phase_hold_over(struct phase_hold *h, uint64_t now_ns, struct hvt_err *err);

#endif
