#!/bin/bash
# The nested lab's A/D checks on Intel (tests/lib/lab.bash, LAB_VENDOR=intel, lab_ad): Debian's kernel boots
# as L1 under Bochs (emulated VMX with EPT, EPT A/D and PML; TCG emulates no VMX) with our kvm.ko and
# kvm-intel.ko from scripts/kvm-modules.sh, and runs tests/lab/ad_check with kvm_intel ept=1 eptad=1 (the
# TDP MMU walking EPT) and ept=0 (the shadow MMU): the same checks as lab/test_ad on AMD, each with the full
# and the pruned walk, plain, 2 MiB mappings, guest RAM on /dev/mem and a 4 GiB slot where the pruned walk
# skips whole GiBs (--gib); then ept=1 eptad=0 (EPT without A/D
# bits: KVM harvests by access tracking, exact too, and cannot prune), plain, full and pruned walk; and
# ept=1 with KVM's dirty logging on (ad_check --dirty-log), pml=1 (KVM clears D bits itself) and pml=0, full
# and pruned walk, and pml=1 on the shadow MMU (kvm tdp_mmu=0). Skips when bochs is not installed.
# LAB_KERNELS picks the kernels (default 6.12 here, to keep make check short; make lab runs both).
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
LAB_VENDOR=intel
source "$(dirname "$0")/../lib/lab.bash"

lab_l0
for k in ${LAB_KERNELS:-6.12}; do
	lab_ad "$k"
	for ept in 1 0; do
		lab_expect "$k" "^LAB ept=$ept scenario" 8 "ept=$ept scenarios ran"
	done
	lab_expect "$k" "^LAB ept=1 kvm_intel.ept=Y eptad=Y pml=Y tdp_mmu=Y" 2 "loads of kvm_intel with ept=Y eptad=Y pml=Y"
	lab_expect "$k" "^LAB ept=1 kvm_intel.ept=Y eptad=Y pml=Y tdp_mmu=N" 1 "loads of kvm_intel with pml=Y, kvm tdp_mmu=N"
	lab_expect "$k" "^LAB ept=1 tdp_mmu=0 pml=1 scenario" 1 "dirty-log scenarios on the shadow MMU ran"
	lab_expect "$k" "^LAB ept=1 kvm_intel.ept=Y eptad=Y pml=N " 1 "loads of kvm_intel with pml=N"
	# KVM's dirty log and the harvest, both exact whichever reads first (pml=1: KVM clears D bits itself).
	for pml in 1 0; do
		lab_expect "$k" "^LAB ept=1 pml=$pml scenario" 2 "pml=$pml dirty-log scenarios ran"
	done
	grep -q 'CHECK huge_page_written_all_512 PASS' "$T/lab-$k.log" || fail "lab $k: huge page check missing"
	# ept=1 prunes (the skipped-region checks run there only); both MMUs hold the pruned walk to the full one.
	lab_expect "$k" '^CHECK prune_skips_unused_regions_pruned PASS' 2 "pruned-region checks passed (ept=1)"
	lab_expect "$k" "^LAB ept=1 eptad=0 scenario" 2 "eptad=0 scenarios ran"
	# ept=1, ept=0 (plain, /dev/mem and the GiB slot each) and eptad=0 hold the pruned walk to the full one.
	lab_expect "$k" '^CHECK prune_concurrent_equals_full_walk PASS' 7 "pruned-versus-full checks passed"
	# The GiB slot: exact sets on both MMUs, full and pruned; with ept=1 --prune whole GiBs skipped.
	lab_expect "$k" '^CHECK gib_.* FAIL' 0 "GiB-slot checks failed"
	lab_expect "$k" '^CHECK gib_idle_written PASS' 4 "GiB-slot idle intervals exact"
	lab_expect "$k" '^CHECK gib_gib_found_by_entry_regions_pruned PASS 2m=15 1g=2 ' 1 "GiB-slot walks that skipped whole GiBs as expected"
	echo "lab $k: $(grep -c '^CHECK .* PASS' "$T/lab-$k.log") checks passed"
done
