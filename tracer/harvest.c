// SPDX-License-Identifier: MIT
/* The harvest backend for each mode. */
#include "harvest.h"

const struct harvester *harvester_for_mode(enum hvt_mode mode)
{
	switch (mode) {
	case HVT_MODE_DIRTY_LOG:
		return &harvester_dirty_log;
	case HVT_MODE_AD:
		return &harvester_ad;
	default:
		return NULL;
	}
}
