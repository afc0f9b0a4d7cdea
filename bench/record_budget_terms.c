// SPDX-License-Identifier: MIT
/*
 * record's working memory as mem_budget_terms computes it (hvmtrace/record/mem_budget.c) for guest RAM up
 * to a size, in mode dirty-log or ad, with every slot a layout may have and an hour of 1 s intervals, as
 * record sizes it. bench/table/record_budget.sh prints it beside what record locked: the test VMM offers no
 * accessed bits, so mode ad's figure is computed, not measured.
 * usage: record_budget_terms MAX_GUEST_GIB dirty-log|ad
 * Prints "BUDGET mode=M working=N sets=N record=N index=N fixed=N" (bytes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../hvmtrace/record/mem_budget.h"
#include "hvmtrace/layout.h"

int main(int argc, char **argv)
{
	struct mem_budget_terms t;
	char *end;
	double gib = argc == 3 ? strtod(argv[1], &end) : 0;
	bool ad = argc == 3 && !strcmp(argv[2], "ad");

	if (argc != 3 || *end || gib <= 0 || (!ad && strcmp(argv[2], "dirty-log"))) {
		fprintf(stderr, "usage: record_budget_terms MAX_GUEST_GIB dirty-log|ad\n");
		return 2;
	}
	mem_budget_terms(&(struct mem_budget_in){.max_guest_bytes = (uint64_t)(gib * (1ull << 30)),
						 .page_size = 4096,
						 .max_slots = HVT_LAYOUT_MAX_SLOTS,
						 .nsets = ad ? 2 : 1,
						 .retry_copy = ad,
						 .max_intervals = 3600},
			 &t);
	printf("BUDGET mode=%s working=%llu sets=%llu record=%llu index=%llu fixed=%llu\n", argv[2],
	       (unsigned long long)(t.sets + t.record + t.index + t.owners + t.fixed),
	       (unsigned long long)t.sets, (unsigned long long)t.record, (unsigned long long)t.index,
	       (unsigned long long)t.fixed);
	return 0;
}
