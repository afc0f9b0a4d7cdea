#!/bin/bash
# Mode ad end to end in the nested lab: for Debian's 6.1 and 6.12 kernels as L1 (under TCG -cpu max, with
# our KVM modules from scripts/kvm-modules.sh), hvmtrace-vmm runs the phases4 payload in an L2 guest and
# `hvmtrace record` (a separate process) harvests it through the A/D fd; check_phases holds every interval's
# written AND accessed sets to the VMM's phase log, page by page, at 1 s and 100 ms, with kvm_amd npt=1
# (TDP MMU) and npt=0 (shadow MMU). The programs under test are this build's, copied into L1's initramfs
# with their shared libraries. The L1 side is tests/lab/record_init.sh. LAB_KERNELS="6.1" runs one kernel.
. "$(dirname "$0")/common.bash"
. "$ROOT/versions.env"

command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 missing (scripts/install-deps.sh installs qemu-system-x86)"
for p in bin/hvmtrace bin/hvmtrace-vmm tests/tools/check_phases; do
	[ -x "$ROOT/$BUILD/$p" ] || fail "$BUILD/$p not built"
done

for k in ${LAB_KERNELS:-6.1 6.12}; do
	case $k in 6.1) abi=$KERNEL_6_1_ABI ;; 6.12) abi=$KERNEL_6_12_ABI ;; *) fail "LAB_KERNELS: no kernel '$k'" ;; esac
	[ -f "/usr/src/linux-headers-$abi/Makefile" ] ||
		skip "linux-headers-$abi not installed (scripts/install-deps.sh installs it)"
	kdir=$(scripts/guest-kernel.sh -q "$k") || fail "guest kernel $k"
	mods=$(scripts/kvm-modules.sh -q "$abi" 2>"$T/mods-$k.err") || fail "kvm modules for $abi: $(tail -5 "$T/mods-$k.err")"
	ir=$(scripts/mkinitramfs.sh -q \
		-b "$ROOT/$BUILD/bin/hvmtrace:/bin/hvmtrace" -b "$ROOT/$BUILD/bin/hvmtrace-vmm:/bin/hvmtrace-vmm" \
		-b "$ROOT/$BUILD/tests/tools/check_phases:/bin/check_phases" \
		-f "$mods/kvm.ko:/lab/kvm.ko" -f "$mods/kvm-amd.ko:/lab/kvm-amd.ko" \
		-f "$kdir/modules/kernel/virt/lib/irqbypass.ko:/lab/irqbypass.ko" \
		-f "$kdir/modules/kernel/drivers/crypto/ccp/ccp.ko:/lab/ccp.ko" \
		tests/lab/record_init.sh) || fail "initramfs for $k"
	start=$(date +%s%N)
	# Two L1 CPUs: the vCPU thread on one, the tracer on the other, as on a real host.
	timeout "${LAB_TIMEOUT:-900}" qemu-system-x86_64 -accel tcg -cpu max -m 2048 -smp 2 -display none \
		-no-reboot -serial "file:$T/serial-$k.log" -monitor none -nodefaults -kernel "$kdir/vmlinux" \
		-initrd "$ir" -append "console=ttyS0 nokaslr panic=-1 quiet" </dev/null >"$T/qemu-$k.out" 2>&1
	tr -d '\r' <"$T/serial-$k.log" >"$T/lab-$k.log"
	wall=$((($(date +%s%N) - start) / 1000000))
	grep -E '^(LAB|CHECK|lab:)' "$T/lab-$k.log"
	grep -q '^LAB-RESULT PASS' "$T/lab-$k.log" || fail "lab $k: $(grep -E '^(CHECK .*FAIL|LAB.*FAIL)' "$T/lab-$k.log" | head -5)"
	n=$(grep -c '^CHECK record .* PASS' "$T/lab-$k.log")
	[ "$n" -eq 4 ] || fail "lab $k: $n of 4 record scenarios passed"
	echo "lab $k: 4 record scenarios passed in $wall ms wall"
done
