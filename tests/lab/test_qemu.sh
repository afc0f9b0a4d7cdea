#!/bin/bash
# Patched QEMU in the nested lab: for Debian's 6.1 and 6.12 kernels as L1 (under TCG -cpu max, with our KVM
# modules from scripts/kvm-modules.sh), QEMU -M microvm -accel kvm runs the PVH phase payload as L2 and
# `hvmtrace record` traces it through QEMU's hvmtrace object in mode ad (the tracer harvests the A/D bits
# through the fd QEMU handed over); check_phases holds every interval's written and accessed sets to the
# phase log, page by page, at 1 s and 100 ms, with kvm_amd npt=1 (TDP MMU) and npt=0 (shadow MMU).
# Then the array payload (copy, add) in mode ad at 1 s, its sets checked the same way and its analyses by
# check_array_report: in `hvmtrace report --json --pages` every page of c is write-heavy and every page of a
# read-mostly, and report's accessed-set phases put a boundary within one interval of the copy→add switch.
# With LAB_QEMU_SCENARIOS=owners (opt-in; `make lab` runs it), the built-in Linux guest
# (scripts/guest-workloads.sh) is L2 under QEMU -M pc -accel kvm, npt=1 only: the array program with the guest
# agent, traced in mode ad with record --owners-port, its copy intervals' written c and accessed a and c
# attributed to the array process (docs/attribution.md).
# LAB_QEMU_SCENARIOS=damon (opt-in; `make lab` runs it): the same Linux L2 running the array program with
# DAMON recording inside it (paddr), traced in mode ad at 20 ms, the record scored by `hvmtrace score` in L1
# (precision and recall; docs/score.md); damon-host adds DAMON in L1 over QEMU's address space (vaddr), its
# record moved to guest-physical addresses (scripts/damon-hva-to-gpa.sh) and scored against the same trace.
# Both run once per DAMON attribute set and load: LAB_DAMON_ATTRS="S,A,MIN,MAX ..." (default DAMON's own,
# 5000,100000,10,1000) and LAB_DAMON_LOADS="array build" (default array; build: the build-like load of
# make score for LAB_DAMON_BUILD_SECS seconds, default 12, 2 compilations at a time).
# The L1 side is tests/lab/qemu_init.sh. LAB_KERNELS="6.1" runs one kernel; LAB_QEMU_MODES="ad,dirty-log"
# adds QEMU's dirty-log mode to the phases scenarios; LAB_QEMU_SCENARIOS="array" (or "phases", or a list)
# runs only those; LAB_TDP="1" one MMU setting, LAB_INTERVALS="1s" one interval of the phases scenarios.
# tests/lab/test_intel_qemu.sh sources this file for the Intel tier (L0: Bochs), with shorter defaults.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
# Run as itself: the AMD tier (L0: QEMU TCG). Sourced: the sourcing test's LAB_VENDOR.
[ "${BASH_SOURCE[0]}" != "$0" ] || LAB_VENDOR=amd
source "$(dirname "$0")/../lib/lab.bash"
if [ "$LAB_VENDOR" = intel ]; then
	kernels=${LAB_KERNELS:-6.12} tdp=${LAB_TDP:-1} intervals=${LAB_INTERVALS:-1s}
	scenarios=${LAB_QEMU_SCENARIOS:-phases}
	guest=(-f "$ROOT/$BUILD/guest/phases_if.elf:/lab/phases_if.elf") # L2 with IF=1 (qemu_init.sh)
	case ",$scenarios,${LAB_QEMU_MODES:-ad}," in *,owners,* | *,damon,* | *,damon-host,* | *,dirty-log,*)
		fail "LAB_QEMU_SCENARIOS owners, damon, damon-host, LAB_QEMU_MODES dirty-log: AMD tier only (untried under Bochs)" ;;
	esac
else
	kernels=${LAB_KERNELS:-6.1 6.12} tdp=${LAB_TDP:-1 0} intervals=${LAB_INTERVALS:-1s 100ms}
	scenarios=${LAB_QEMU_SCENARIOS:-phases,array}
	guest=()
fi

# The damon scenarios' runs (LAB_DAMON_*, above), checked before anything is built or booted.
damon_attrs=${LAB_DAMON_ATTRS:-5000,100000,10,1000} damon_loads=${LAB_DAMON_LOADS:-array}
damon_secs=${LAB_DAMON_BUILD_SECS:-12}
for a in $damon_attrs; do
	[[ $a =~ ^[0-9]+,[0-9]+,[0-9]+,[0-9]+$ ]] || fail "LAB_DAMON_ATTRS: '$a': expected S,A,MIN,MAX (us, us, regions, regions)"
done
for l in $damon_loads; do
	case $l in array | build) ;; *) fail "LAB_DAMON_LOADS: '$l': expected array or build" ;; esac
done
[[ $damon_secs =~ ^[1-9][0-9]*$ ]] || fail "LAB_DAMON_BUILD_SECS: '$damon_secs': expected whole seconds"
need_qemu # the QEMU under test, which runs in L1
for p in bin/hvmtrace tests/tools/check_phases tests/tools/check_array_report tests/tools/qemu_phases tests/tools/qmp \
	guest/phases.elf guest/phases_if.elf; do
	[ -e "$ROOT/$BUILD/$p" ] || fail "$BUILD/$p not built"
done
[ -f /usr/share/qemu/qboot.rom ] || skip "/usr/share/qemu/qboot.rom missing (Debian package qemu-system-data)"
lab_l0

# QEMU without its debug info, and the firmware files it needs for microvm, as L1 will find them.
strip -o "$T/qemu-system-x86_64" "$QEMU" || fail "strip $QEMU"
mkdir -p "$T/qemu-data"
cp "$(dirname "$QEMU")"/optionrom/*.bin "$T/qemu-data/" && cp /usr/share/qemu/qboot.rom "$T/qemu-data/bios-microvm.bin" ||
	fail "QEMU's data files"

n_modes=$(echo "${LAB_QEMU_MODES:-ad}" | tr , '\n' | grep -c .)
n_tdp=$(wc -w <<<"$tdp")
n_checks=0
case ",$scenarios," in *,phases,*) n_checks=$((n_tdp * $(wc -w <<<"$intervals") * n_modes)) ;; esac
case ",$scenarios," in *,array,*) n_checks=$((n_checks + n_tdp)) ;; esac
# The Linux L2's scenarios run with npt=1 only; damon and damon-host once per DAMON set and load.
# shellcheck disable=SC2086 # the words, however spaced
n_damon=$(($(echo $damon_attrs | wc -w) * $(echo $damon_loads | wc -w)))
n_l2=0
case ",$scenarios," in *,owners,*) n_l2=$((n_l2 + 1)) ;; esac
case ",$scenarios," in *,damon,*) n_l2=$((n_l2 + n_damon)) ;; esac
case ",$scenarios," in *,damon-host,*) n_l2=$((n_l2 + n_damon)) ;; esac
case " $tdp " in *" 1 "*) n_checks=$((n_checks + n_l2)) ;; esac
if [ $n_l2 -gt 0 ]; then
	# The built-in Linux guest as L2, with SeaBIOS for QEMU's pc machine; DAMON's recorder and the
	# address translator for L1's own DAMON (damon-host).
	guest_linux
	cp /usr/share/seabios/bios-256k.bin "$T/qemu-data/" || fail "SeaBIOS (Debian package seabios)"
	mkdir -p "$T/guest" && cp "$kernel" "$T/guest/vmlinux" && cp "$initrd" "$T/guest/initrd.gz" ||
		fail "the guest's files"
	guest+=(-f "$T/guest:/lab/guest" -b "$ROOT/$BUILD/tests/tools/check_array:/bin/check_array"
		-b "$ROOT/$BUILD/tests/tools/stamp_lines:/bin/stamp_lines"
		-f "$ROOT/tests/guest/damon-record.sh:/bin/damon-record"
		-f "$ROOT/scripts/damon-hva-to-gpa.sh:/bin/damon-hva-to-gpa")
fi
# One word each for L1's command line: sets split by /, loads by commas.
# shellcheck disable=SC2086 # the words, however spaced
damon_args="labdamonattrs=$(echo $damon_attrs | tr ' ' /) labdamonloads=$(echo $damon_loads | tr ' ' ,)"
damon_args="$damon_args labdamonsecs=$damon_secs"
[ "$n_checks" -gt 0 ] || fail "LAB_QEMU_SCENARIOS=$scenarios: names none of phases, array, owners, damon, damon-host"
for k in $kernels; do
	lab_prepare "$k"
	ir=$(scripts/mkinitramfs.sh -q \
		-b "$T/qemu-system-x86_64:/bin/qemu-system-x86_64" -f "$T/qemu-data:/lab/qemu-data" \
		-b "$ROOT/$BUILD/bin/hvmtrace:/bin/hvmtrace" \
		-b "$ROOT/$BUILD/tests/tools/check_phases:/bin/check_phases" \
		-b "$ROOT/$BUILD/tests/tools/check_array_report:/bin/check_array_report" \
		-b "$ROOT/$BUILD/tests/tools/qemu_phases:/bin/qemu_phases" \
		-b "$ROOT/$BUILD/tests/tools/qmp:/bin/qmp" -f "$ROOT/$BUILD/guest/phases.elf:/lab/phases.elf" \
		"${guest[@]}" "${LAB_KVM_FILES[@]}" tests/lab/qemu_init.sh) || fail "initramfs for $k"
	lab_boot "$k" "$ir" 3072 "labqemumodes=${LAB_QEMU_MODES:-ad} labqemuscenarios=$scenarios \
labtdp=${tdp// /,} labintervals=${intervals// /,} $damon_args"
	lab_expect "$k" "^CHECK qemu .* PASS" "$n_checks" "qemu scenarios passed"
done
