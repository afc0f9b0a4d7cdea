#!/bin/bash
# Patched QEMU on Intel: lab/test_qemu's scenarios (tests/lab/qemu_init.sh, driven by tests/lab/test_qemu.sh,
# which this file sources) with L1 under Bochs (tests/lib/lab.bash, LAB_VENDOR=intel: emulated VMX with EPT
# and EPT A/D) and our kvm.ko and kvm-intel.ko: QEMU -M microvm -accel kvm runs the PVH phase payload as L2
# (phases_if.elf: IF=1, since Bochs gives no interrupt exit while L2 runs with IF=0; docs/lab.md §6) and
# `hvmtrace record` traces it through QEMU's hvmtrace object in mode ad; check_phases holds every interval's
# written and accessed sets to the phase log, page by page. Skips when bochs is not installed.
# Not in make check: it skips unless LAB_INTEL_QEMU=1 (make lab sets it), because one boot with one scenario
# (6.12, ept=1, 1 s) took 448 s here (L1 up after 130 s: its initramfs holds QEMU; the scenario 318 s),
# more than the 4 minutes an Intel lab test may add to make check; lab/test_intel_record runs mode ad on
# EPT there. The matrix: LAB_KERNELS (default 6.12), LAB_TDP (kvm_intel ept settings, default 1),
# LAB_INTERVALS (default 1s), LAB_QEMU_SCENARIOS (default phases; array adds the array payload and its
# analyses). make lab runs both kernels, ept=1 and ept=0, at 1 s.
LAB_VENDOR=intel
if [ "${LAB_INTEL_QEMU:-0}" != 1 ]; then # a skip (exit 77, the reason last), before assert.bash makes $T
	echo "patched QEMU under Bochs takes about 8 minutes: LAB_INTEL_QEMU=1 runs it (make lab does)"
	exit 77
fi
source "$(dirname "$0")/test_qemu.sh"
