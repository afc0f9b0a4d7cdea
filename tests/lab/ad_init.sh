#!/bin/sh
# /init of the nested lab's L1 for tests/lab/test_ad.sh and make lab (tests/lib/lab.bash, lab_ad): loads our
# KVM modules and runs tests/lab/ad_check with kvm_amd npt=1 or kvm_intel ept=1 (TDP MMU walker) and npt=0 or
# ept=0 (shadow MMU rmap walker; labtdp= picks, l1_prelude.sh), plain, with 2 MiB mappings, on /dev/mem
# (labdevmem=) and on a 4 GiB slot of whole GiBs (--gib: pruning by 1 GiB entries), each with the full walk and with the pruned walk (--prune), and the harvest benchmark when
# the kernel command line asks (labbench=MIB). The Intel tier ends with kvm_intel ept=1 eptad=0 (EPT without
# A/D bits, where KVM harvests by access tracking and cannot prune): the plain scenario, full and pruned;
# before it, KVM's dirty logging beside the harvest with kvm_intel pml=1 and pml=0 (ad_check --dirty-log), and
# after it the same with pml=1 on the shadow MMU walking EPT (kvm tdp_mmu=0).
# Results on the serial console: "CHECK name PASS|FAIL" lines, then "LAB-RESULT PASS|FAIL".
. /lab/l1_prelude.sh

bench=$(sed -n 's/.*labbench=\([0-9]*\).*/\1/p' /proc/cmdline)
devmem=$(sed -n 's/.*labdevmem=\(0x[0-9a-fA-F]*\).*/\1/p' /proc/cmdline)
for tdp in $LAB_TDP; do
	load_kvm $tdp || continue
	for args in "" "--huge" ${devmem:+"--devmem $devmem"} "--gib" \
		"--prune" "--prune --huge" ${devmem:+"--prune --devmem $devmem"} "--prune --gib"; do
		echo "LAB $MMU=$tdp scenario: ad_check $args"
		# shellcheck disable=SC2086
		./ad_check $args || result=FAIL
	done
	if [ -n "$bench" ] && [ "$tdp" = 1 ]; then
		echo "LAB $MMU=$tdp bench: ad_check --bench $bench"
		./ad_check --bench "$bench" | grep -E '^BENCH|^LAB_AD|FAIL'
	fi
	unload_kvm
done
# KVM's dirty logging beside the harvest (ad_check --dirty-log), on the TDP MMU: with pml=1 KVM clears D bits
# itself (docs/kvm-ad.md), with pml=0 it write-protects.
if [ "$KVM_VENDOR" = kvm_intel ]; then
	for pml in 1 0; do
		load_kvm 1 pml=$pml || continue
		for args in "--dirty-log" "--dirty-log --prune"; do
			echo "LAB ept=1 pml=$pml scenario: ad_check $args"
			# shellcheck disable=SC2086
			./ad_check $args || result=FAIL
		done
		unload_kvm
	done
fi
if [ "$KVM_VENDOR" = kvm_intel ] && load_kvm 1 eptad=0; then
	for args in "" "--prune"; do
		echo "LAB ept=1 eptad=0 scenario: ad_check $args"
		# shellcheck disable=SC2086
		./ad_check $args || result=FAIL
	done
	unload_kvm
fi
# Last, as it reloads kvm.ko: the shadow MMU walking EPT (kvm tdp_mmu=0), where dirty logging with pml=1 clears
# D bits through the rmaps.
if [ "$KVM_VENDOR" = kvm_intel ] && rmmod kvm && insmod ./kvm.ko tdp_mmu=0 && load_kvm 1 pml=1; then
	echo "LAB ept=1 tdp_mmu=0 pml=1 scenario: ad_check --dirty-log"
	./ad_check --dirty-log || result=FAIL
	unload_kvm
fi
lab_end
