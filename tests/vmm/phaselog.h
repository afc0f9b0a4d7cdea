/* SPDX-License-Identifier: MIT */
/*
 * The phase log (--phase-log FILE): JSON Lines, one flushed line per event, read by the test checker.
 *   {"type":"script", …}  first: page size, payload, phases (hold, write and read ranges), system pages
 *                         and two classes of them (untouched_pages, table_pages: struct system_pages),
 *                         slots
 *   {"type":"phase","index":k,"round":r,"t_ns":T[,"t_earliest_ns":E]}  phase k began at T (or, when the
 *                         logger only knows bounds, somewhere in [E, T]: see tests/tools/qemu_phases.c)
 *   {"type":"pass","phase":k,"round":r,"pass":n,"t_start_ns":A,"t_end_ns":B}  a whole pass lay in [A, B]
 *   {"type":"done","t_ns":T[,"t_earliest_ns":E],"reason":"finished"|"signal"}  the end (bounds as above)
 */
#ifndef HVMTRACE_VMM_PHASELOG_H
#define HVMTRACE_VMM_PHASELOG_H

#include <stdint.h>
#include <stdio.h>

#include "script.h"

struct vm_slot;
struct hvt_err;

struct phaselog {
	FILE *f; /* NULL: no log */
};

/*
 * The payload's pages outside its phases' sets, for the checker (docs/kvm-ad.md, "Pages without a guest
 * access"). Ranges of struct range_list (script.h); untouched and tables lie inside all.
 */
struct system_pages {
	struct range_list all;       /* may be in any interval's sets (code, script, page tables, …) */
	struct range_list untouched; /* never touched once the payload runs its phases: in no set */
	struct range_list tables;    /* the guest's paging structures: in no set under the shadow MMU */
};

int phaselog_open(struct phaselog *pl, const char *path, struct hvt_err *err);
void phaselog_close(struct phaselog *pl);

void phaselog_script(struct phaselog *pl, const struct script *s, uint64_t hold_ns,
		     const struct system_pages *sys, const struct vm_slot *slots, uint32_t nslots);
void system_pages_free(struct system_pages *sys);
/* t_earliest_ns < t_ns: the event happened somewhere in between (it is logged then); else exactly at t_ns. */
void phaselog_phase(struct phaselog *pl, unsigned index, uint64_t round, uint64_t t_earliest_ns,
		    uint64_t t_ns);
void phaselog_pass(struct phaselog *pl, unsigned phase, uint64_t round, uint64_t pass, uint64_t t_start_ns,
		   uint64_t t_end_ns);
void phaselog_done(struct phaselog *pl, uint64_t t_earliest_ns, uint64_t t_ns, const char *reason);

#endif
