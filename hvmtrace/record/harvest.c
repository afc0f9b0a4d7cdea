// SPDX-License-Identifier: MIT
/* The harvest modes this hvmtrace implements: a new mode is its harvest_*.c file and one row here. */
#include <stdio.h>

#include "harvest.h"

/* Each defined in its harvest_*.c; only this table names them. */
extern const struct harvester harvester_ad, harvester_dirty_ring, harvester_dirty_log;

/* In the order `--mode auto` prefers them. */
static const struct harvester *const harvesters[] = {
    &harvester_ad,         /* accessed and written pages */
    &harvester_dirty_ring, /* written pages at a cost that follows them; only a VMM on KVM's dirty ring */
    &harvester_dirty_log,  /* written pages only; every VMM offers it, so auto falls back to it */
};

#define NHARVESTERS (sizeof(harvesters) / sizeof(harvesters[0]))

const struct harvester *harvester_for_mode(enum hvt_mode mode)
{
	for (size_t i = 0; i < NHARVESTERS; i++)
		if (harvesters[i]->mode == mode)
			return harvesters[i];
	return NULL;
}

enum hvt_mode harvester_auto_mode(uint32_t offered)
{
	for (size_t i = 0; i < NHARVESTERS; i++)
		if (offered & HVT_MODE_BIT(harvesters[i]->mode))
			return harvesters[i]->mode;
	return harvesters[NHARVESTERS - 1]->mode; /* not offered either: the caller says so */
}

const struct hvt_opt_choice *harvester_mode_choices(void)
{
	static struct hvt_opt_choice choices[NHARVESTERS + 2]; /* auto, the modes, the end */

	if (!choices[0].name) {
		choices[0] = (struct hvt_opt_choice){"auto", HVT_MODE_NONE};
		for (size_t i = 0; i < NHARVESTERS; i++)
			choices[i + 1] = (struct hvt_opt_choice){hvt_mode_name(harvesters[i]->mode),
								 (int)harvesters[i]->mode};
	}
	return choices;
}

void harvester_list_modes(char *buf, size_t len)
{
	size_t at = 0, n = 0;

	if (len)
		buf[0] = 0;
	for (unsigned m = 0; m < 32 && at < len; m++) {
		if (!harvester_for_mode((enum hvt_mode)m))
			continue;
		const char *sep = n == 0 ? "" : n + 1 == NHARVESTERS ? " and " : ", ";
		n++;
		at += (size_t)snprintf(buf + at, len - at, "%s%s", sep, hvt_mode_name((enum hvt_mode)m));
	}
}
