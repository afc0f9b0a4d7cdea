#!/bin/bash
# Mode ad end to end in the nested lab: for Debian's 6.1 and 6.12 kernels as L1 (under TCG -cpu max, with
# our KVM modules from scripts/kvm-modules.sh), hvmtrace-vmm runs the phases4 payload in an L2 guest and
# `hvmtrace record` (a separate process) harvests it through the A/D fd; check_phases holds every interval's
# written AND accessed sets to the VMM's phase log, page by page, at 1 s and 100 ms, with kvm_amd npt=1
# (TDP MMU) and npt=0 (shadow MMU). The programs under test are this build's, copied into L1's initramfs
# with their shared libraries. The L1 side is tests/lab/record_init.sh. First, `hvmtrace doctor` in L1
# (tests/lab/l1_doctor.sh): mode ad available, L1's memmap= reservation usable, written and accessed+written
# sets yes. LAB_KERNELS="6.1" runs one kernel.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
LAB_VENDOR=amd # the AMD tier (L0: QEMU TCG); tests/lab/test_intel_*.sh are the Intel one
source "$(dirname "$0")/../lib/lab.bash"

for p in bin/hvmtrace bin/hvmtrace-vmm tests/tools/check_phases; do
	[ -x "$ROOT/$BUILD/$p" ] || fail "$BUILD/$p not built"
done
lab_l0

for k in ${LAB_KERNELS:-6.1 6.12}; do
	lab_prepare "$k"
	lab_doctor_files "$k"
	ir=$(scripts/mkinitramfs.sh -q \
		-b "$ROOT/$BUILD/bin/hvmtrace:/bin/hvmtrace" -b "$ROOT/$BUILD/bin/hvmtrace-vmm:/bin/hvmtrace-vmm" \
		-b "$ROOT/$BUILD/tests/tools/check_phases:/bin/check_phases" "${LAB_KVM_FILES[@]}" \
		"${LAB_DOCTOR_FILES[@]}" tests/lab/record_init.sh) || fail "initramfs for $k"
	lab_boot "$k" "$ir" 2048 "$LAB_DOCTOR_APPEND"
	lab_doctor_expect "$k"
	lab_expect "$k" "^CHECK record .* PASS" 4 "record scenarios passed"
done
