#!/bin/bash
# Patched QEMU on Intel: lab/test_qemu's scenarios (tests/lab/qemu_init.sh, driven by tests/lab/test_qemu.sh,
# which this file sources) with L1 under Bochs (tests/lib/lab.bash, LAB_VENDOR=intel: emulated VMX with EPT
# and EPT A/D) and our kvm.ko and kvm-intel.ko: QEMU -M microvm -accel kvm runs the PVH phase payload as L2
# (phases_if.elf: IF=1, since Bochs gives no interrupt exit while L2 runs with IF=0; docs/lab.md §6) and
# `hvmtrace record` traces it through QEMU's hvmtrace object in mode ad; check_phases holds every interval's
# written and accessed sets to the phase log, page by page. Skips when bochs is not installed.
# The matrix, short by default for make check: one boot with one scenario (6.12, ept=1, 1 s) took 180 s
# here with the host otherwise quiet (L1 up after 54 s: its initramfs holds QEMU; the scenario about 50 s
# of L1 time), 448 s beside two other Bochs labs. LAB_KERNELS (default 6.12), LAB_TDP (kvm_intel ept
# settings, default 1), LAB_INTERVALS (default 1s), LAB_QEMU_SCENARIOS (default phases; array adds the array
# payload and its analyses). make lab runs both kernels, ept=1 and ept=0, at 1 s.
# shellcheck disable=SC2034 # read by the sourced test_qemu.sh and lab.bash
LAB_VENDOR=intel
source "$(dirname "$0")/test_qemu.sh"
