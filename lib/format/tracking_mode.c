// SPDX-License-Identifier: MIT
/* The tracking modes' names, as the attach protocol and META's "mode" spell them. */
#include <string.h>

#include "hvmtrace/tracking_mode.h"

static const char *const mode_names[HVT_MODE_NMODES] = {
    [HVT_MODE_NONE] = "none",
    [HVT_MODE_DIRTY_LOG] = "dirty-log",
    [HVT_MODE_AD] = "ad",
    [HVT_MODE_DIRTY_RING] = "dirty-ring",
};

const char *hvt_mode_name(enum hvt_mode m)
{
	if ((unsigned)m < HVT_MODE_NMODES && mode_names[m])
		return mode_names[m];
	return "none";
}

enum hvt_mode hvt_mode_from_name(const char *name)
{
	for (unsigned i = 1; name && i < HVT_MODE_NMODES; i++)
		if (!strcmp(name, mode_names[i]))
			return (enum hvt_mode)i;
	return HVT_MODE_NONE;
}
