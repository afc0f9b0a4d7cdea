#!/bin/bash
# make lab: the nested lab's A/D checks by hand (tests/lib/lab.bash, lab_ad; the test tests/lab/test_ad.sh
# runs the same): boots Debian's kernel K as L1 under the QEMU this tree builds, with our rebuilt KVM
# modules, and runs tests/lab/ad_check there with kvm_amd npt=1 and npt=0 (LAB_VENDOR=intel: under Bochs,
# kvm_intel ept=1, ept=0 and eptad=0, as tests/lab/test_intel_ad.sh). L1's lines are shown as they come.
#
# Usage: tests/lab/run.sh [-b MIB] [-o LOG] 6.1|6.12
#   -b MIB  also run the harvest benchmark over an MIB-sized slot (4 KiB and 2 MiB mappings)
#   -o LOG  keep L1's serial log there
# Env: AD_CHECK (default $BUILD/tests/lab/ad_check), LAB_QEMU (L0 instead of the QEMU make qemu builds),
# LAB_STALL, LAB_TIMEOUT (s; see the retry rule in tests/lib/lab.bash). Everything heavy is cached by
# scripts/build-qemu.sh, guest-kernel.sh, kvm-modules.sh and mkinitramfs.sh.
# Exit: 0 when L1 reports "LAB-RESULT PASS", 1 when it does not, 2 on a usage error, 77 when the kernel's
# headers are missing.
BUILD=${BUILD:-build}
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
source "$(dirname "$0")/../lib/lab.bash"

usage() {
	echo "usage: tests/lab/run.sh [-b MIB] [-o LOG] 6.1|6.12" >&2
	exit 2
}
bench="" log=""
while getopts b:o: opt; do
	case "$opt" in
	b) bench=$OPTARG ;;
	o) log=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# = 1 ] && { [ "$1" = 6.1 ] || [ "$1" = 6.12 ]; } || usage

lab_l0
rc=0
(lab_ad "$1" "$bench") || rc=$?
if [ -n "$log" ] && [ -e "$T/lab-$1.log" ]; then cp "$T/lab-$1.log" "$log" || fail "cannot write $log"; fi
exit $rc
