/* SPDX-License-Identifier: MIT */
/*
 * What each group of checks reads from the host, as plain facts: every group gathers them (the only part
 * that touches the host) and then judges them into checks, so the judging is tested on facts a test sets
 * and the gathering on recorded trees (tests/fixtures/).
 */
#ifndef HVT_DOCTOR_FACTS_H
#define HVT_DOCTOR_FACTS_H

#include <stdbool.h>
#include <stdint.h>

#include "doctor.h"

/* A KVM module as /sys/module shows it. */
struct doc_kvm_module {
	bool present;     /* /sys/module/NAME exists */
	bool builtin;     /* no initstate: built into the kernel, cannot be replaced by loading modules */
	bool out_of_tree; /* taint has 'O': loaded from outside the kernel's tree (our replacement build) */
};

/* A bool module parameter: 'Y', 'N', or 0 when the file is absent. */
struct doc_virt_facts {
	char vendor[16]; /* "GenuineIntel", "AuthenticAMD", "" */
	char model_name[96];
	bool vmx, svm, hypervisor; /* cpuinfo flags */
	char release[128];         /* the running kernel (PROC/sys/kernel/osrelease) */
	bool kvm_dev;              /* /dev/kvm exists */
	int kvm_errno;             /* opening it or asking it failed: errno; 0 when it answered */
	int api_version;           /* KVM_GET_API_VERSION */
	int cap_ad;                /* KVM_CHECK_EXTENSION(KVM_CAP_AD_HARVEST): -1 not asked, 0, 1 */
	struct doc_kvm_module kvm, kvm_intel, kvm_amd, kvm_pvm;
	char ept, eptad, pml, npt, tdp_mmu;
};

void doc_virt_gather(const struct doc_env *env, struct doc_virt_facts *f);
void doc_virt_judge(const struct doc_virt_facts *f, struct doc_report *r);

#endif
