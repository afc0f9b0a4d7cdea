#!/bin/sh
# The nested lab: boots a stock Debian kernel as L1 under qemu-system-x86_64 -accel tcg -cpu max (emulated
# AMD SVM with nested paging), with our rebuilt KVM modules and tests/lab/ad_check in a busybox initramfs,
# and runs the scenarios of tests/lab/init.sh inside it. Results come back over the serial console.
#
# Usage: tests/lab/run.sh [-b MIB] [-o LOG] 6.1|6.12
#   -b MIB  also run the harvest benchmark over an MIB-sized slot (4 KiB and 2 MiB mappings)
#   -o LOG  keep the serial log there
# Env: AD_CHECK (default build/tests/lab/ad_check), QEMU (default qemu-system-x86_64), LAB_TIMEOUT (s).
# Everything heavy is cached by scripts/guest-kernel.sh, kvm-modules.sh and mkinitramfs.sh.
# Exit: 0 when L1 reports "LAB-RESULT PASS", 1 otherwise.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/versions.env"

bench=""
log=""
while getopts b:o: opt; do
	case "$opt" in
	b) bench=$OPTARG ;;
	o) log=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case "${1:-}" in
6.1) abi=$KERNEL_6_1_ABI ;;
6.12) abi=$KERNEL_6_12_ABI ;;
*)
	echo "usage: tests/lab/run.sh [-b MIB] [-o LOG] 6.1|6.12" >&2
	exit 2
	;;
esac
ad_check=${AD_CHECK:-$here/build/tests/lab/ad_check}
[ -x "$ad_check" ] || {
	echo "lab: $ad_check not built (make lab builds it)" >&2
	exit 1
}
qemu=${QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null || {
	echo "lab: $qemu not found (Debian package: qemu-system-x86)" >&2
	exit 1
}

kdir=$("$here/scripts/guest-kernel.sh" -q "$1")
mods=$("$here/scripts/kvm-modules.sh" -q "$abi" 2>/dev/null) || mods=$("$here/scripts/kvm-modules.sh" "$abi")
ir=$("$here/scripts/mkinitramfs.sh" -q \
	-f "$ad_check:/lab/ad_check" \
	-f "$mods/kvm.ko:/lab/kvm.ko" -f "$mods/kvm-amd.ko:/lab/kvm-amd.ko" \
	-f "$kdir/modules/kernel/virt/lib/irqbypass.ko:/lab/irqbypass.ko" \
	-f "$kdir/modules/kernel/drivers/crypto/ccp/ccp.ko:/lab/ccp.ko" \
	"$here/tests/lab/init.sh")

# 3 GiB so that the memmap= hole at 2 GiB is RAM that /dev/mem can map (docs/hardware-notes.md §8.3).
append="console=ttyS0 nokaslr panic=-1 quiet memmap=256M\$0x80000000 labdevmem=0x80000000"
[ -z "$bench" ] || append="$append labbench=$bench"
out=${log:-$(mktemp)}
start=$(date +%s%N)
echo "lab: booting L1 $abi (kvm modules: $mods)"
timeout "${LAB_TIMEOUT:-600}" "$qemu" -accel tcg -cpu max -m 3072 -smp 1 -display none -no-reboot \
	-serial stdio -monitor none -nodefaults -kernel "$kdir/vmlinux" -initrd "$ir" -append "$append" \
	</dev/null 2>&1 | while IFS= read -r line; do
	case "$line" in
	LAB-L1-UP*) echo "lab: L1 up after $((($(date +%s%N) - start) / 1000000)) ms wall ($line)" ;;
	esac
	printf '%s\n' "$line"
done | tr -d '\r' | tee "$out" | grep -E '^(LAB|CHECK|BENCH|EVIDENCE|lab:|harvest:)' || true
echo "lab: total $((($(date +%s%N) - start) / 1000000)) ms wall"
grep -q '^LAB-RESULT PASS' "$out"
