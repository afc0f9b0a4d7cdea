// SPDX-License-Identifier: MIT
/*
 * ad mode (KVM with our KVM_AD_HARVEST patch): the tracer reads and clears the accessed and dirty bits of
 * the VM's leaf SPTEs itself, through the A/D fd the VMM handed over, one KVM_AD_HARVEST per slot. The
 * kernel's bitmap layout (64-bit little-endian words, bit i = page i of the slot) is the page sets' own, so
 * it fills the interval's sets in place. The VMM takes no part: no messages per interval.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "harvest.h"
#include "hvmtrace/kvm_ad.h"
#include "hvmtrace/util.h"

/* One KVM_AD_HARVEST over the whole of slot i, into the interval's sets. */
static int harvest_slot(struct session *s, struct hvt_interval *iv, uint32_t i, struct hvt_err *err)
{
	const struct hvt_memslot *m = &s->layout.slots[i];
	uint64_t npages = hvt_memslot_npages(&s->layout, m);
	struct kvm_ad_harvest h = {
	    .slot = m->slot,
	    .num_pages = npages,
	    .accessed_bitmap = (uint64_t)(uintptr_t)iv->accessed[i].words,
	    .dirty_bitmap = (uint64_t)(uintptr_t)iv->written[i].words,
	};

	if (ioctl(s->ad_fd, KVM_AD_HARVEST, &h) < 0)
		return hvt_err_set(err, -errno, "%s: KVM_AD_HARVEST on slot %u (%s, %llu pages): %s", s->path,
				   m->slot, m->name, (unsigned long long)npages, strerror(errno));
	if (h.slot_npages != npages)
		return hvt_err_set(err, -EPROTO,
				   "%s: KVM slot %u has %llu pages, the VMM's layout says %llu (layout %llu)",
				   s->path, m->slot, (unsigned long long)h.slot_npages,
				   (unsigned long long)npages, (unsigned long long)s->layout.generation);
	return 0;
}

/* Harvests every slot of the layout in force into iv (initialised here). */
static int harvest_all(struct session *s, struct hvt_interval *iv, struct hvt_err *err)
{
	int rc = hvt_interval_init(iv, &s->layout, HVT_IV_WRITTEN | HVT_IV_ACCESSED);

	if (rc)
		return hvt_err_set(err, rc, "out of memory for an interval of %u slots", s->layout.nslots);
	iv->t_start_ns = s->ad_prev_done_ns;
	iv->t_end_ns = hvt_now_ns();
	for (uint32_t i = 0; i < s->layout.nslots && !rc; i++)
		rc = harvest_slot(s, iv, i, err);
	uint64_t done = hvt_now_ns();
	if (rc) {
		hvt_interval_fini(iv);
		return rc;
	}
	iv->harvest_ns = done - iv->t_end_ns;
	iv->wall_start_ns = hvt_wall_now_ns() - (int64_t)(done - iv->t_start_ns);
	iv->generation = s->layout.generation;
	s->ad_prev_done_ns = done;
	return 0;
}

static int ad_harvest(struct session *s, struct hvt_interval *iv, int timeout_ms, struct hvt_err *err)
{
	int rc;

	(void)timeout_ms; /* nothing to wait for: the harvest is ours */
	rc = harvest_all(s, iv, err);
	if (!rc)
		iv->seq = ++s->seq;
	return rc;
}

/* The first harvest only clears what accumulated before we came (bits KVM set at fault time, earlier
 * accesses): the first interval starts when it is done. */
static int ad_start(struct session *s, struct hvt_err *err)
{
	struct hvt_interval stale = {0};
	int rc;

	if (s->ad_fd < 0)
		return hvt_err_set(err, -EPROTO, "%s: attached in mode ad without an A/D fd", s->path);
	rc = harvest_all(s, &stale, err);
	if (rc)
		return rc;
	hvt_interval_fini(&stale);
	s->t_armed_ns = s->ad_prev_done_ns;
	return 0;
}

/* The VMM's process still holds the guest's memory, so KVM has not dropped the SPTEs whose bits we want
 * (it does when the VMM's mm goes: a harvest then reports nothing, which would look like an idle guest). */
static bool ad_vm_still_mapped(const struct session *s)
{
	char path[64], stat[512], *close_paren;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)s->vmm_pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(stat, 1, sizeof(stat) - 1, f);
	fclose(f);
	stat[n] = 0;
	close_paren = strrchr(stat, ')'); /* "pid (comm) S …": comm may hold anything */
	return close_paren && close_paren[1] == ' ' && close_paren[2] && !strchr("ZXx", close_paren[2]);
}

const struct harvester harvester_ad = {
    .name = "ad",
    .mode = HVT_MODE_AD,
    .harvest = ad_harvest,
    .start = ad_start,
    .can_harvest_after_end = ad_vm_still_mapped,
};
