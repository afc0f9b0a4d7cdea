// SPDX-License-Identifier: MIT
/*
 * The closing verdict (docs/doctor.md "The verdict"): for each thing a user may want to trace, yes or no and
 * the check that decides it, read from the table by id. The exit status is 0 when every capability asked
 * for is a yes.
 */
#include <stdio.h>
#include <string.h>

#include "doctor/doctor.h"

/* What a capability needs: ids that must be yes; a trailing '.' means "some check with this prefix". */
static const char *const needs[DOC_NCAPS][8] = {
    [DOC_CAP_DIRTY_LOG] = {"kvm.dev", "qemu.patched"},
    [DOC_CAP_AD] = {"kvm.dev", "kvm.ad_harvest", "qemu.patched"},
    [DOC_CAP_BANDWIDTH] = {"pmu.discovery", "devmem", "memmap.", "chanmap", "chanmap.", "qemu.patched"},
};

static bool prefix(const char *id, const char *p)
{
	return !strncmp(id, p, strlen(p));
}

/* The check that stops this need, or NULL when it is met; *absent says no such check was made. */
static const struct doc_check *blocker(const struct doc_report *r, const char *need, bool *absent)
{
	size_t len = strlen(need);
	const struct doc_check *first = NULL;

	*absent = false;
	if (need[len - 1] != '.') {
		const struct doc_check *c = doc_find(r, need);

		*absent = !c;
		return c && c->status != DOC_YES ? c : NULL;
	}
	for (size_t i = 0; i < r->n; i++) {
		if (!prefix(r->c[i].id, need))
			continue;
		if (r->c[i].status == DOC_YES)
			return NULL;
		if (!first)
			first = &r->c[i];
	}
	*absent = !first;
	return first;
}

static bool any_prefix(const struct doc_report *r, const char *p)
{
	for (size_t i = 0; i < r->n; i++)
		if (prefix(r->c[i].id, p))
			return true;
	return false;
}

/* A self-test that failed (any source but a stand-in) stops bandwidth. */
static const struct doc_check *failed_selftest(const struct doc_report *r)
{
	for (size_t i = 0; i < r->n; i++)
		if (prefix(r->c[i].id, "selftest.pmu") && r->c[i].status == DOC_NO)
			return &r->c[i];
	return NULL;
}

int doc_verdict(struct doc_report *r, unsigned needed)
{
	int status = 0;

	for (int k = 0; k < DOC_NCAPS; k++) {
		const struct doc_check *stop = NULL;
		const char *missing = NULL;
		bool absent;

		for (int i = 0; i < 8 && needs[k][i] && !stop && !missing; i++) {
			stop = blocker(r, needs[k][i], &absent);
			if (absent)
				missing = needs[k][i];
		}
		if (!stop && !missing && k == DOC_CAP_BANDWIDTH)
			stop = failed_selftest(r);
		r->v.yes[k] = !stop && !missing;
		if (stop)
			snprintf(r->v.because[k], sizeof(r->v.because[k]), "%s%s%s", stop->what,
				 stop->fix[0] ? " — fix: " : "", stop->fix);
		else if (missing)
			snprintf(r->v.because[k], sizeof(r->v.because[k]), "%s was not checked", missing);
		else if (k == DOC_CAP_DIRTY_LOG)
			snprintf(r->v.because[k], sizeof(r->v.because[k]),
				 "KVM answers and QEMU is patched%s",
				 doc_find(r, "kvm.pvm")
				     ? " (KVM here is PVM: it runs what its emulation of kernel mode allows)"
				     : "");
		else if (k == DOC_CAP_AD)
			snprintf(r->v.because[k], sizeof(r->v.because[k]),
				 "KVM offers KVM_CAP_AD_HARVEST and QEMU is patched");
		else
			snprintf(
			    r->v.because[k], sizeof(r->v.because[k]),
			    "a memory-controller PMU counts, /dev/mem maps a reservation the chanmap places on a channel%s",
			    any_prefix(r, "selftest.pmu.") ? ", and the self-test's counts are in their band"
							   : "");
		if (!r->v.yes[k] && (needed & (1u << k)))
			status = 1;
	}
	return status;
}
