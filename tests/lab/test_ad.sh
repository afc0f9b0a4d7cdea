#!/bin/bash
# The nested lab's A/D checks (tests/lib/lab.bash, lab_ad): for Debian's 6.1 and 6.12 kernels, builds our KVM
# modules with the same scripts/kvm-modules.sh a user runs, boots the kernel as L1 under TCG -cpu max, and
# runs tests/lab/ad_check with kvm_amd npt=1 (TDP MMU) and npt=0 (shadow MMU): exact accessed/written sets,
# harvest from another process through the A/D fd only (-EIO on the VM fd), NOCLEAR, hot pages in every
# interval, all 512 pages of a touched 2 MiB mapping, guest RAM on /dev/mem (a memmap= range of L1), and a
# 4 GiB slot of 4 KiB and 2 MiB mappings (--gib), where the pruned walk skips whole GiBs;
# each with the full walk and with the pruned walk (KVM_AD_HARVEST_PRUNE), whose skipped regions and
# equality with the full walk under concurrent accesses are checked too.
# Needs no /dev/kvm on this host: L0 is TCG. Cold: source downloads + two module builds (~5 min on 2 cores).
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
LAB_VENDOR=amd # the AMD tier (L0: QEMU TCG); tests/lab/test_intel_*.sh are the Intel one
source "$(dirname "$0")/../lib/lab.bash"

lab_l0
for k in ${LAB_KERNELS:-6.1 6.12}; do
	lab_ad "$k"
	for npt in 1 0; do
		lab_expect "$k" "^LAB npt=$npt scenario" 8 "npt=$npt scenarios ran"
	done
	grep -q 'CHECK huge_page_written_all_512 PASS' "$T/lab-$k.log" || fail "lab $k: huge page check missing"
	# npt=1 prunes (the skipped-region checks run there only); both MMUs hold the pruned walk to the full one.
	[ "$(grep -c '^CHECK prune_skips_unused_regions_pruned PASS' "$T/lab-$k.log")" = 2 ] ||
		fail "lab $k: the pruned walk's region checks did not pass twice (plain and /dev/mem, npt=1)"
	[ "$(grep -c '^CHECK prune_concurrent_equals_full_walk PASS' "$T/lab-$k.log")" = 6 ] ||
		fail "lab $k: the concurrent pruned-versus-full check did not pass for both MMUs, plain, /dev/mem and GiB slot"
	# The GiB slot: exact sets on both MMUs, and on npt=1 with --prune whole GiBs skipped (1g=2), not elsewhere.
	[ "$(grep -c '^CHECK gib_.* FAIL' "$T/lab-$k.log")" = 0 ] && [ "$(grep -c '^CHECK gib_idle_written PASS' "$T/lab-$k.log")" = 4 ] ||
		fail "lab $k: the GiB slot's checks did not all pass on both MMUs, full and pruned"
	[ "$(grep -c '^CHECK gib_gib_found_by_entry_regions_pruned PASS 2m=15 1g=2 ' "$T/lab-$k.log")" = 1 ] ||
		fail "lab $k: the pruned walk did not skip whole GiBs exactly once (npt=1 --prune --gib)"
	echo "lab $k: $(grep -c '^CHECK .* PASS' "$T/lab-$k.log") checks passed"
done
