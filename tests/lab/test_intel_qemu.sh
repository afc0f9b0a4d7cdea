#!/bin/bash
# Patched QEMU on Intel: lab/test_qemu's scenarios (tests/lab/qemu_init.sh, driven by tests/lab/test_qemu.sh,
# which this file sources) with L1 under Bochs (tests/lib/lab.bash, LAB_VENDOR=intel: emulated VMX with EPT
# and EPT A/D) and our kvm.ko and kvm-intel.ko: QEMU -M microvm -accel kvm runs the PVH phase payload as L2
# and `hvmtrace record` traces it through QEMU's hvmtrace object in mode ad; check_phases holds every
# interval's written and accessed sets to the phase log, page by page. Skips when bochs is not installed.
# The matrix, short by default for make check (Bochs boots this L1, whose initramfs holds QEMU, in about
# MEASURE s and runs one scenario in about MEASURE s): LAB_KERNELS (default 6.12), LAB_TDP (kvm_intel ept
# settings, default 1), LAB_INTERVALS (default 1s), LAB_QEMU_SCENARIOS (default phases; array adds the
# array payload and its analyses). make lab runs more.
LAB_VENDOR=intel
source "$(dirname "$0")/test_qemu.sh"
