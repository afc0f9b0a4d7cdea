#!/bin/bash
# Mode ad end to end on Intel (tests/lib/lab.bash, LAB_VENDOR=intel): Debian's kernel boots as L1 under Bochs
# (emulated VMX with EPT and EPT A/D) with our kvm.ko and kvm-intel.ko; hvmtrace-vmm runs the phases4
# payload in an L2 guest (with IF set: --guest-if) and `hvmtrace record` harvests it through the A/D fd;
# check_phases holds every interval's written and accessed sets to the VMM's phase log, page by page, with
# kvm_intel ept=1 eptad=1 (the TDP MMU on EPT, the pruned walk) and ept=0 (the shadow MMU), then ept=1
# eptad=0 at 1 s (EPT without A/D bits: KVM harvests by access tracking, a full walk). The L1 side is
# tests/lab/record_init.sh; before the scenarios, `hvmtrace doctor` in L1 (tests/lab/l1_doctor.sh): mode ad
# available, L1's memmap= reservation usable, written and accessed+written sets yes. Skips when bochs is
# not installed.
# The matrix, short by default for make check (Bochs runs one record scenario in 1-3 minutes; the shadow
# MMU and eptad=0 run in lab/test_intel_ad there too): LAB_KERNELS (default 6.12), LAB_TDP (ept settings,
# default 1), LAB_INTERVALS (default 1s), LAB_EPTAD0=1 adds the eptad=0 scenario. make lab runs it all.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
LAB_VENDOR=intel
source "$(dirname "$0")/../lib/lab.bash"

for p in bin/hvmtrace bin/hvmtrace-vmm tests/tools/check_phases; do
	[ -x "$ROOT/$BUILD/$p" ] || fail "$BUILD/$p not built"
done
lab_l0
intervals=${LAB_INTERVALS:-1s} tdp=${LAB_TDP:-1} eptad0=${LAB_EPTAD0:-0}
for k in ${LAB_KERNELS:-6.12}; do
	lab_prepare "$k"
	lab_doctor_files "$k"
	ir=$(scripts/mkinitramfs.sh -q \
		-b "$ROOT/$BUILD/bin/hvmtrace:/bin/hvmtrace" -b "$ROOT/$BUILD/bin/hvmtrace-vmm:/bin/hvmtrace-vmm" \
		-b "$ROOT/$BUILD/tests/tools/check_phases:/bin/check_phases" "${LAB_KVM_FILES[@]}" \
		"${LAB_DOCTOR_FILES[@]}" tests/lab/record_init.sh) || fail "initramfs for $k"
	lab_boot "$k" "$ir" 1024 "labintervals=${intervals// /,} labtdp=${tdp// /,} labeptad0=$eptad0 $LAB_DOCTOR_APPEND"
	lab_doctor_expect "$k"
	lab_expect "$k" "^CHECK record ept=[01] interval=.* PASS" $(($(wc -w <<<"$tdp") * $(wc -w <<<"$intervals"))) \
		"record scenarios passed"
	lab_expect "$k" "^CHECK record ept=1 eptad=0 interval=1s PASS" "$eptad0" "eptad=0 scenarios passed"
done
