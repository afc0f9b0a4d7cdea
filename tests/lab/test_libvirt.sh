#!/bin/bash
# The libvirt chain in the nested lab, for real (issue 10): for Debian's 6.1 and 6.12 kernels as L1 (under
# TCG -cpu max, with our KVM modules), Debian's libvirtd runs in L1 and starts a domain made by `hvmtrace
# virt-xml` whose guest RAM is L1's memmap= reservation through /dev/mem, handed to the unprivileged QEMU
# (libvirt-qemu, no capabilities: checked) by the devmem helper the hook starts; the hook starts the tracer
# in mode ad, and check_phases holds the PVH phase payload's written and accessed sets to its phase log,
# page by page, with kvm_amd npt=1 and npt=0. The L1 side is tests/lab/libvirt_init.sh; libvirt's files
# come from this host's packages (scripts/lab-libvirt-root.sh, cached). LAB_KERNELS="6.1" runs one kernel,
# LAB_TDP="1" one MMU setting. tests/lab/test_intel_libvirt.sh sources this file for the Intel tier (L0:
# Bochs, kvm_intel; 6.12 and ept=1 by default).
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
# Run as itself: the AMD tier (L0: QEMU TCG). Sourced: the sourcing test's LAB_VENDOR.
[ "${BASH_SOURCE[0]}" != "$0" ] || LAB_VENDOR=amd
source "$(dirname "$0")/../lib/lab.bash"
if [ "$LAB_VENDOR" = intel ]; then
	kernels=${LAB_KERNELS:-6.12} tdp=${LAB_TDP:-1}
	guest=(-f "$ROOT/$BUILD/guest/phases_if.elf:/lab/phases_if.elf") # L2 with IF=1 (libvirt_init.sh)
else
	kernels=${LAB_KERNELS:-6.1 6.12} tdp=${LAB_TDP:-1 0} guest=()
fi

need_qemu # the QEMU under test, which libvirtd runs in L1
for p in bin/hvmtrace tests/tools/check_phases tests/tools/qemu_phases guest/phases.elf guest/phases_if.elf; do
	[ -e "$ROOT/$BUILD/$p" ] || fail "$BUILD/$p not built"
done
[ -f /usr/share/seabios/bios-256k.bin ] || skip "/usr/share/seabios/bios-256k.bin missing (Debian package seabios)"
command -v libvirtd >/dev/null || skip "no libvirtd (scripts/install-deps.sh installs it)"
lab_l0
lvroot=$(scripts/lab-libvirt-root.sh -q) || fail "libvirt for L1 (scripts/lab-libvirt-root.sh)"

# QEMU without its debug info beside its option ROMs, as scripts/build-qemu.sh leaves it (virt-xml passes
# -L DIR/optionrom), and SeaBIOS where QEMU's firmware path finds it; the hooks as make install-libvirt
# installs them, calling /bin/hvmtrace.
mkdir -p "$T/qemu"
strip -o "$T/qemu/qemu-system-x86_64" "$QEMU" && cp -r "$(dirname "$QEMU")/optionrom" "$T/qemu/" || fail "QEMU's files"
sed "s|@BINDIR@|/bin|" hvmtrace/libvirt/qemu-hook >"$T/qemu-hook"
sed "s|@BINDIR@|/bin|" hvmtrace/libvirt/daemon-hook >"$T/daemon-hook"

for k in $kernels; do
	lab_prepare "$k"
	# libvirt's trees first: mkinitramfs copies a directory to a path that must not exist yet
	ir=$(scripts/mkinitramfs.sh -q \
		-f "$lvroot/usr:/usr" -f "$lvroot/lib:/lib" -f "$lvroot/etc/libvirt:/etc/libvirt" \
		-f "$lvroot/etc/passwd:/etc/passwd" -f "$lvroot/etc/group:/etc/group" \
		-f /usr/share/seabios/bios-256k.bin:/usr/share/seabios/bios-256k.bin \
		-b "$T/qemu/qemu-system-x86_64:/lab/qemu/qemu-system-x86_64" -f "$T/qemu/optionrom:/lab/qemu/optionrom" \
		-b "$ROOT/$BUILD/bin/hvmtrace:/bin/hvmtrace" -f "$T/qemu-hook:/lab/qemu-hook" \
		-f "$T/daemon-hook:/lab/daemon-hook" \
		-b "$ROOT/$BUILD/tests/tools/check_phases:/bin/check_phases" \
		-b "$ROOT/$BUILD/tests/tools/qemu_phases:/bin/qemu_phases" \
		-f "$ROOT/$BUILD/guest/phases.elf:/lab/phases.elf" "${guest[@]}" \
		"${LAB_KVM_FILES[@]}" tests/lab/libvirt_init.sh) || fail "initramfs for $k"
	lab_boot "$k" "$ir" 3072 "memmap=256M\$0x80000000 labtdp=${tdp// /,}"
	lab_expect "$k" "^CHECK libvirt .* PASS" "$(wc -w <<<"$tdp")" "libvirt scenarios passed"
done
