#!/bin/bash
# `hvmtrace bw` refuses with one clear sentence and a non-zero exit when it cannot measure: no memory-
# controller PMU (this host, a VM, for real), counters the kernel will not open for lack of privilege (root
# with CAP_SYS_ADMIN and CAP_PERFMON removed, for real, at this host's perf_event_paranoid), trees it cannot
# map, and bad arguments. It never falls back to another source.
source "$(dirname "$0")/../lib/assert.bash"
STANDIN=tests/fixtures/sysfs/standin/sys

if [ -e /sys/bus/event_source/devices/uncore_imc_0 ] || [ -e /sys/bus/event_source/devices/amd_umc_0 ]; then
	echo "this host has a memory-controller PMU: the no-PMU case runs on a copy of the stand-in without it"
	mkdir -p "$T/nopmu/sys/bus/event_source/devices/software"
	expect 1 "no memory-controller PMU" "$BIN/hvmtrace" bw -n 1 --sysfs-root "$T/nopmu/sys"
else
	expect 1 "no memory-controller PMU in /sys/bus/event_source/devices" "$BIN/hvmtrace" bw -n 1
	assert_contains "$T/err" "modprobe intel_uncore"
fi
[ "$(wc -l <"$T/err")" = 1 ] || fail "expected one line, got: $(cat "$T/err")"
[ -s "$T/out" ] && fail "bw printed figures without a PMU: $(cat "$T/out")"

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && [ "$paranoid" -gt 0 ]; then
	expect 1 "kernel.perf_event_paranoid is $paranoid" \
		setpriv --bounding-set=-sys_admin,-perfmon "$BIN/hvmtrace" bw -n 1 --sysfs-root "$STANDIN"
	if [ "$paranoid" -ge 3 ]; then
		assert_contains "$T/err" "only CAP_SYS_ADMIN"
	else
		assert_contains "$T/err" "need CAP_PERFMON"
	fi
	assert_contains "$T/err" "sysctl kernel.perf_event_paranoid=0"
	[ "$(wc -l <"$T/err")" = 1 ] || fail "expected one line, got: $(cat "$T/err")"
else
	echo "privilege case not run: needs root, setpriv and perf_event_paranoid > 0 (it is $paranoid)"
fi

# Trees that cannot be mapped: a CPU the generation table does not know; a tree that is not sysfs.
mkdir -p "$T/odd"
cp -a tests/fixtures/sysfs/skx/. "$T/odd/"
sed -i 's/^model\t\t: 85/model\t\t: 42/' "$T/odd/proc/cpuinfo"
expect 1 "is not in hvmtrace's table" "$BIN/hvmtrace" bw -n 1 --sysfs-root "$T/odd/sys"
expect 1 "not a sysfs tree" "$BIN/hvmtrace" bw -n 1 --sysfs-root "$T/none"
# A recorded tree of another machine: its PMU types are not this kernel's.
expect 1 "" "$BIN/hvmtrace" bw -n 1 --sysfs-root tests/fixtures/sysfs/skx/sys

expect 2 "not a positive number" "$BIN/hvmtrace" bw -n 0
expect 2 "not a duration" "$BIN/hvmtrace" bw --interval 5x
expect 2 "cannot both go to standard output" "$BIN/hvmtrace" bw --csv - --jsonl -
echo ok
