#!/bin/bash
# The nested lab (tests/lab/run.sh): for Debian's 6.1 and 6.12 kernels, builds our KVM modules with the
# same scripts/kvm-modules.sh a user runs, boots the kernel as L1 under TCG -cpu max, and runs
# tests/lab/ad_check with kvm_amd npt=1 (TDP MMU) and npt=0 (shadow MMU): exact accessed/written sets,
# harvest from another process through the A/D fd only (-EIO on the VM fd), NOCLEAR, hot pages in every
# interval, all 512 pages of a touched 2 MiB mapping, and guest RAM on /dev/mem (a memmap= range of L1).
# Needs no /dev/kvm on this host: L0 is TCG. Cold: source downloads + two module builds (~5 min on 2 cores).
. "$(dirname "$0")/common.bash"
. "$ROOT/versions.env"

command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 missing (scripts/install-deps.sh installs qemu-system-x86)"
for abi in "$KERNEL_6_1_ABI" "$KERNEL_6_12_ABI"; do
	[ -f "/usr/src/linux-headers-$abi/Makefile" ] ||
		skip "linux-headers-$abi not installed (scripts/install-deps.sh installs it)"
done
[ -x "$ROOT/$BUILD/tests/lab/ad_check" ] || fail "$BUILD/tests/lab/ad_check not built"

for k in 6.1 6.12; do
	AD_CHECK=$ROOT/$BUILD/tests/lab/ad_check tests/lab/run.sh -o "$T/lab-$k.log" "$k" >"$T/run-$k.out" 2>&1 ||
		fail "lab $k: $(grep -E 'FAIL|lab:' "$T/run-$k.out" | head -10)"
	for npt in 1 0; do
		n=$(grep -c "^LAB npt=$npt scenario" "$T/lab-$k.log")
		[ "$n" -eq 3 ] || fail "lab $k npt=$npt: ran $n of 3 scenarios"
	done
	grep -q 'CHECK huge_page_written_all_512 PASS' "$T/lab-$k.log" || fail "lab $k: huge page check missing"
	echo "lab $k: $(grep -c '^CHECK .* PASS' "$T/lab-$k.log") checks passed; $(grep 'L1 up' "$T/run-$k.out")"
done
