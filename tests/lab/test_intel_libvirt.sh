#!/bin/bash
# The libvirt chain on Intel: lab/test_libvirt's scenario (tests/lab/libvirt_init.sh, driven by
# tests/lab/test_libvirt.sh, which this file sources) with L1 under Bochs (tests/lib/lab.bash,
# LAB_VENDOR=intel) and our kvm.ko and kvm-intel.ko: Debian's libvirtd in L1 starts the domain `hvmtrace
# virt-xml` made, guest RAM on L1's memmap= range through /dev/mem and the devmem helper, the unprivileged
# QEMU checked, the hook's tracer in mode ad, and check_phases holds the PVH payload's written and accessed
# sets to its phase log, page by page, at 1 s. L2 is phases_if.elf (IF=1, the 8259s masked: Bochs gives no
# interrupt exit while L2 runs with IF=0; docs/lab.md §6). Bochs emulates two CPUs here (LAB_BOCHS_CPUS,
# default 2), since virt-xml keeps the vCPUs off the tracer's CPU and refuses a host with one CPU; each runs
# at half speed. Skips when bochs is not installed.
# Not in make check: it skips unless LAB_INTEL_LIBVIRT=1 (make lab sets it), because one boot with one
# scenario (6.12, ept=1) took 577 s here (L1 up after 173 s), more than the 4 minutes an Intel lab test may
# add to make check. The matrix: LAB_KERNELS (default 6.12), LAB_TDP (kvm_intel ept settings, default 1).
if [ "${LAB_INTEL_LIBVIRT:-0}" != 1 ]; then # a skip (exit 77, the reason last), before assert.bash makes $T
	echo "the libvirt route under Bochs takes about 10 minutes: LAB_INTEL_LIBVIRT=1 runs it (make lab does)"
	exit 77
fi
# shellcheck disable=SC2034 # read by the sourced test_libvirt.sh and lab.bash
LAB_VENDOR=intel LAB_BOCHS_CPUS=${LAB_BOCHS_CPUS:-2}
source "$(dirname "$0")/test_libvirt.sh"
