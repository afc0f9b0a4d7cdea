// SPDX-License-Identifier: MIT
/*
 * ad mode (KVM with our KVM_AD_HARVEST patch): the tracer reads and clears the accessed and dirty bits of
 * the VM's leaf SPTEs itself, through the A/D fd the VMM handed over, one KVM_AD_HARVEST per slot. The
 * kernel's bitmap layout (64-bit little-endian words, bit i = page i of the slot) is the page sets' own, so
 * it fills the interval's sets in place. The VMM takes no part: no messages per interval. It only announces
 * new layouts when its memslots change; a harvest that meets a change before its announcement waits for it
 * and harvests that interval again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "harvest.h"
#include "hvmtrace/attach.h"
#include "hvmtrace/error.h"
#include "hvmtrace/kvm_ad.h"
#include "hvmtrace/layout.h"
#include "hvmtrace/pageset.h"
#include "hvmtrace/trace.h"
#include "hvmtrace/util.h"
#include "session.h"

/* How long a harvest that met changed memslots waits for the VMM's new layout, and, once one came, for the
 * rest of its burst (firmware remaps memory several times in a row). */
#define LAYOUT_WAIT_MS  500
#define LAYOUT_BURST_MS 20

#define AD_SETS (HVT_IV_WRITTEN | HVT_IV_ACCESSED)

/* The A/D fd from KVM_CREATE_AD_FD, the end of the last harvest through it, and the flags each harvest
 * passes: KVM_AD_HARVEST_PRUNE unless the full walk was asked for or the kernel does not know the flag, and
 * KVM_AD_HARVEST_SPARSE (the interval's bitmaps are new, so zero: the kernel writes only where it found
 * bits) unless the kernel does not know it. */
struct ad {
	int fd;
	uint64_t prev_done_ns;
	uint32_t flags;
};

static struct ad *state(const struct session *s)
{
	return s->harvester_state;
}

/* One KVM_AD_HARVEST over the whole of slot i, into the interval's sets. *stale: the failure may mean the
 * VMM changed its memslots (KVM knows no such slot, or sizes it differently). */
static int harvest_slot(struct session *s, struct hvt_interval *iv, uint32_t i, bool *stale,
			struct hvt_err *err)
{
	const struct hvt_memslot *m = &s->layout.slots[i];
	uint64_t npages = hvt_memslot_npages(&s->layout, m);
	struct kvm_ad_harvest h = {
	    .slot = m->slot,
	    .num_pages = npages,
	    .accessed_bitmap = (uint64_t)(uintptr_t)iv->accessed[i].words,
	    .dirty_bitmap = (uint64_t)(uintptr_t)iv->written[i].words,
	};
	int rc;

	h.flags = state(s)->flags;
	rc = ioctl(state(s)->fd, KVM_AD_HARVEST, &h);
	/* A kernel refuses every flag it does not know: at the first harvest, drop SPARSE (patch 8), then
	 * PRUNE (patch 5: it walks whole). */
	while (rc < 0 && errno == EINVAL && !s->ad_walk &&
	       (h.flags & (KVM_AD_HARVEST_SPARSE | KVM_AD_HARVEST_PRUNE))) {
		h.flags &= h.flags & KVM_AD_HARVEST_SPARSE ? ~KVM_AD_HARVEST_SPARSE : ~KVM_AD_HARVEST_PRUNE;
		rc = ioctl(state(s)->fd, KVM_AD_HARVEST, &h);
		if (!rc)
			state(s)->flags = h.flags;
	}
	if (rc < 0) {
		int e = errno;

		*stale = e == ENOENT || e == EINVAL;
		return hvt_err_set(err, -e, "%s: KVM_AD_HARVEST on slot %u (%s, %llu pages): %s", s->path,
				   m->slot, m->name, (unsigned long long)npages, strerror(e));
	}
	if (h.slot_npages != npages) {
		*stale = true;
		return hvt_err_set(err, -EPROTO,
				   "%s: KVM slot %u has %llu pages, the VMM's layout says %llu (layout %llu)",
				   s->path, m->slot, (unsigned long long)h.slot_npages,
				   (unsigned long long)npages, (unsigned long long)s->layout.generation);
	}
	/* The kernel wrote the words: mark those it set, so what follows walks them only (pageset.h). */
	hvt_pageset_remark(&iv->accessed[i]);
	hvt_pageset_remark(&iv->written[i]);
	/* The kernel clears PRUNE after a walk it could not prune (shadow MMU, no A/D bits). */
	if (!s->ad_walk)
		s->ad_walk = h.flags & KVM_AD_HARVEST_PRUNE ? "pruned" : "full";
	return 0;
}

/* Harvests every slot of the layout in force into iv (initialised here). On failure iv keeps the *done
 * slots harvested before it (their bits are cleared in KVM: they exist only here). */
static int harvest_slots(struct session *s, struct hvt_interval *iv, uint32_t *done, bool *stale,
			 struct hvt_err *err)
{
	int rc = session_interval_init(s, iv, AD_SETS);

	*done = 0;
	*stale = false;
	if (rc)
		return hvt_err_set(err, rc, "out of memory for an interval of %u slots", s->layout.nslots);
	for (; *done < s->layout.nslots; ++*done) {
		rc = harvest_slot(s, iv, *done, stale, err);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * KVM disagreed with the layout: the VMM may have changed its memslots, and its layout message may be on
 * the way (it sends it once the change is complete). Reads what the VMM sends for up to LAYOUT_WAIT_MS;
 * true if a newer layout is now in force. A bye or an error ends the wait (the session records it).
 */
static bool await_new_layout(struct session *s)
{
	const uint64_t gen = s->layout.generation;
	const uint64_t deadline = hvt_now_ns() + LAYOUT_WAIT_MS * 1000000ull;

	for (;;) {
		uint64_t now = hvt_now_ns();
		struct hvt_err ignored;
		struct hvt_msg m;
		int left;

		if (now >= deadline)
			break;
		left = s->layout.generation != gen ? LAYOUT_BURST_MS : (int)((deadline - now) / 1000000) + 1;
		if (session_recv(s, &m, left, &ignored))
			break;
		bool layout = m.type == HVT_MSG_LAYOUT;
		hvt_msg_fini(&m);
		if (!layout)
			break;
	}
	return s->layout.generation != gen;
}

/* The pages of the first n slots of old (harvested under an older layout; slot i starts at GFN
 * old_gfn[i]) go into iv by GFN. Written pages that no slot of the layout in force holds are lost. */
static void carry_over(const struct session *s, struct hvt_interval *iv, const struct hvt_interval *old,
		       const uint64_t *old_gfn, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		for (int w = 0; w < 2; w++) {
			const struct hvt_pageset *from = w ? &old->written[i] : &old->accessed[i];
			struct hvt_pageset *to = w ? iv->written : iv->accessed;
			struct hvt_run run;
			uint64_t pos = 0;

			while (hvt_pageset_next_run(from, &pos, &run)) {
				for (uint64_t p = run.first; p < run.first + run.count; p++) {
					uint64_t page;
					int j = hvt_layout_find_gfn(&s->layout, old_gfn[i] + p, &page);

					if (j >= 0)
						hvt_pageset_set(&to[j], page);
					else if (w)
						iv->lost_pages++;
				}
			}
		}
	}
}

/* Harvests every slot of the layout in force into iv (initialised here). When KVM disagrees with the
 * layout and the VMM then announces a new one, the interval is harvested again under it, once, keeping
 * what the first attempt had taken. */
static int harvest_all(struct session *s, struct hvt_interval *iv, struct hvt_err *err)
{
	struct hvt_interval first = {0};
	uint64_t *old_gfn = NULL;
	uint32_t taken = 0, done;
	bool stale;
	int rc;

	uint64_t t_end = hvt_now_ns();
	rc = harvest_slots(s, iv, &taken, &stale, err);
	if (rc && stale) {
		first = *iv;
		memset(iv, 0, sizeof(*iv));
		/* The slots' GFNs, before the new layout replaces the old one. */
		old_gfn = calloc(taken ? taken : 1, sizeof(*old_gfn));
		for (uint32_t i = 0; old_gfn && i < taken; i++)
			old_gfn[i] = hvt_memslot_first_gfn(&s->layout, &s->layout.slots[i]);
		if (old_gfn && await_new_layout(s)) {
			t_end = hvt_now_ns(); /* every slot's bits up to here are in this interval */
			rc = harvest_slots(s, iv, &done, &stale, err);
			if (!rc)
				carry_over(s, iv, &first, old_gfn, taken);
		}
	}
	uint64_t t_done = hvt_now_ns();
	free(old_gfn);
	hvt_interval_fini(&first);
	if (rc) {
		hvt_interval_fini(iv);
		return rc;
	}
	iv->t_start_ns = state(s)->prev_done_ns;
	iv->t_end_ns = t_end;
	iv->harvest_ns = t_done - t_end;
	iv->wall_start_ns = hvt_wall_now_ns() - (int64_t)(t_done - iv->t_start_ns);
	iv->generation = s->layout.generation;
	state(s)->prev_done_ns = t_done;
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

/* "attached" brings the A/D fd, and no bitmaps: the sets come from KVM_AD_HARVEST. */
static int ad_attach(struct session *s, struct hvt_msg *m, struct hvt_err *err)
{
	struct ad *a;

	if (m->u.attached.bitmap_bytes)
		return hvt_err_set(err, -EPROTO, "%s: attached in mode ad with %llu bitmap bytes, expected 0",
				   s->path, (unsigned long long)m->u.attached.bitmap_bytes);
	a = calloc(1, sizeof(*a));
	if (!a)
		return hvt_err_set(err, -ENOMEM, "out of memory");
	a->fd = m->fds[0];
	m->fds[0] = -1; /* taken */
	a->flags = KVM_AD_HARVEST_SPARSE | (s->ad_walk_full ? 0 : KVM_AD_HARVEST_PRUNE);
	s->harvester_state = a;
	return 0;
}

/* The A/D fd keeps the VM alive: it goes with the session. */
static void ad_close(struct session *s)
{
	if (state(s)->fd >= 0)
		close(state(s)->fd);
	free(state(s));
}

/* The first harvest only clears what accumulated before we came (bits KVM set at fault time, earlier
 * accesses): the first interval starts when it is done. */
static int ad_start(struct session *s, struct hvt_err *err)
{
	struct hvt_interval stale = {0};
	int rc;

	if (state(s)->fd < 0)
		return hvt_err_set(err, -EPROTO, "%s: attached in mode ad without an A/D fd", s->path);
	rc = harvest_all(s, &stale, err);
	if (rc)
		return rc;
	session_interval_done(s, &stale);
	s->t_armed_ns = state(s)->prev_done_ns;
	return 0;
}

/* The VMM's process still holds the guest's memory, so KVM has not dropped the SPTEs whose bits we want
 * (it does when the VMM's mm goes: a harvest then reports nothing, which would look like an idle guest). */
static bool vm_still_mapped(const struct session *s)
{
	return hvt_process_alive(s->vmm_pid);
}

/* No "harvested" brings the guest's last interval: take it ourselves while the VM exists. */
static int ad_after_end(struct session *s, struct hvt_interval *iv, struct hvt_err *err)
{
	int rc;

	if (!vm_still_mapped(s))
		return 0;
	rc = ad_harvest(s, iv, 0, err);
	if (rc)
		return rc;
	iv->flags |= HVT_IV_FINAL; /* taken after bye: the guest has stopped */
	return 1;
}

static void ad_describe(const struct session *s, char *buf, size_t len)
{
	if (s->ad_walk)
		snprintf(buf, len, "the tracer harvests the A/D bits itself (%s walk)", s->ad_walk);
	else
		snprintf(buf, len, "the tracer harvests the A/D bits itself");
}

const struct harvester harvester_ad = {
    .mode = HVT_MODE_AD,
    .sets = AD_SETS,
    .attach = ad_attach,
    .start = ad_start,
    .harvest = ad_harvest,
    .after_end = ad_after_end,
    .close = ad_close,
    .describe = ad_describe,
};
