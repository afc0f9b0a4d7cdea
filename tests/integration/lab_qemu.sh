#!/bin/bash
# Patched QEMU in the nested lab: for Debian's 6.1 and 6.12 kernels as L1 (under TCG -cpu max, with our KVM
# modules from scripts/kvm-modules.sh), QEMU -M microvm -accel kvm runs the PVH phase payload as L2 and
# `hvmtrace record` traces it through QEMU's hvmtrace object in mode ad (the tracer harvests the A/D bits
# through the fd QEMU handed over); check_phases holds every interval's written and accessed sets to the
# phase log, page by page, at 1 s and 100 ms, with kvm_amd npt=1 (TDP MMU) and npt=0 (shadow MMU).
# The L1 side is tests/lab/qemu_init.sh. LAB_KERNELS="6.1" runs one kernel; LAB_QEMU_MODES="ad,dirty-log"
# adds QEMU's dirty-log mode.
. "$(dirname "$0")/common.bash"
. "$ROOT/versions.env"

command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 missing (scripts/install-deps.sh installs qemu-system-x86)"
need_qemu
for p in bin/hvmtrace tests/tools/check_phases tests/tools/qemu_phases tests/tools/qmp guest/phases.elf; do
	[ -e "$ROOT/$BUILD/$p" ] || fail "$BUILD/$p not built"
done
[ -f /usr/share/qemu/qboot.rom ] || skip "/usr/share/qemu/qboot.rom missing (Debian package qemu-system-data)"

# QEMU without its debug info, and the firmware files it needs for microvm, as L1 will find them.
strip -o "$T/qemu-system-x86_64" "$QEMU" || fail "strip $QEMU"
mkdir -p "$T/qemu-data"
cp "$(dirname "$QEMU")"/optionrom/*.bin "$T/qemu-data/" && cp /usr/share/qemu/qboot.rom "$T/qemu-data/bios-microvm.bin" ||
	fail "QEMU's data files"

n_modes=$(echo "${LAB_QEMU_MODES:-ad}" | tr , '\n' | grep -c .)
for k in ${LAB_KERNELS:-6.1 6.12}; do
	case $k in 6.1) abi=$KERNEL_6_1_ABI ;; 6.12) abi=$KERNEL_6_12_ABI ;; *) fail "LAB_KERNELS: no kernel '$k'" ;; esac
	[ -f "/usr/src/linux-headers-$abi/Makefile" ] ||
		skip "linux-headers-$abi not installed (scripts/install-deps.sh installs it)"
	kdir=$(scripts/guest-kernel.sh -q "$k") || fail "guest kernel $k"
	mods=$(scripts/kvm-modules.sh -q "$abi" 2>"$T/mods-$k.err") || fail "kvm modules for $abi: $(tail -5 "$T/mods-$k.err")"
	ir=$(scripts/mkinitramfs.sh -q \
		-b "$T/qemu-system-x86_64:/bin/qemu-system-x86_64" -f "$T/qemu-data:/lab/qemu-data" \
		-b "$ROOT/$BUILD/bin/hvmtrace:/bin/hvmtrace" \
		-b "$ROOT/$BUILD/tests/tools/check_phases:/bin/check_phases" \
		-b "$ROOT/$BUILD/tests/tools/qemu_phases:/bin/qemu_phases" \
		-b "$ROOT/$BUILD/tests/tools/qmp:/bin/qmp" -f "$ROOT/$BUILD/guest/phases.elf:/lab/phases.elf" \
		-f "$mods/kvm.ko:/lab/kvm.ko" -f "$mods/kvm-amd.ko:/lab/kvm-amd.ko" \
		-f "$kdir/modules/kernel/virt/lib/irqbypass.ko:/lab/irqbypass.ko" \
		-f "$kdir/modules/kernel/drivers/crypto/ccp/ccp.ko:/lab/ccp.ko" \
		tests/lab/qemu_init.sh) || fail "initramfs for $k"
	start=$(date +%s%N)
	# Two L1 CPUs: QEMU's vCPU thread on one, the tracer on the other, as on a real host.
	# loglevel=4: L1's warnings (lockups, oopses) reach the log, its boot chatter does not.
	timeout "${LAB_TIMEOUT:-400}" qemu-system-x86_64 -accel tcg -cpu max -m 3072 -smp 2 -display none \
		-no-reboot -serial "file:$T/serial-$k.log" -monitor none -nodefaults -kernel "$kdir/vmlinux" \
		-initrd "$ir" -append "console=ttyS0 nokaslr panic=-1 loglevel=4 labqemumodes=${LAB_QEMU_MODES:-ad}" \
		</dev/null >"$T/qemu-$k.out" 2>&1
	tr -d '\r' <"$T/serial-$k.log" >"$T/lab-$k.log"
	wall=$((($(date +%s%N) - start) / 1000000))
	grep -E '^(LAB|CHECK|lab:)' "$T/lab-$k.log"
	grep -q '^LAB-RESULT' "$T/lab-$k.log" || fail "lab $k: L1 ended without a result after $wall ms; its last lines: $(tail -n 15 "$T/lab-$k.log")"
	grep -q '^LAB-RESULT PASS' "$T/lab-$k.log" || fail "lab $k: $(grep -E '^(CHECK .*FAIL|LAB.*FAIL)' "$T/lab-$k.log" | head -5)"
	n=$(grep -c '^CHECK qemu .* PASS' "$T/lab-$k.log")
	[ "$n" -eq $((4 * n_modes)) ] || fail "lab $k: $n of $((4 * n_modes)) QEMU scenarios passed"
	echo "lab $k: $n QEMU scenarios passed in $wall ms wall"
done
