#!/bin/bash
# 10 ms intervals work: the trace is consistent with the phase log (must ⊆ written ⊆ may in every interval,
# exact where a whole pass fits); deadlines the tracer slept through (it is stopped for 300 ms) are counted
# in the interval that spans them, never merged silently, and record and report agree on the count.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm

start_vmm "$T/vmm.sock" --payload phases4 --phase-time 0.5s --wait-attach --phase-log "$T/phases.jsonl" \
	--vcpu-cpu $VCPU_CPU
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 10ms -o "$T/t.hvt" \
	--jsonl "$T/rec.jsonl" 2>"$T/record.err" &
rec=$!
# Freeze the tracer for 300 ms in phase 1: it must not merge the deadlines it slept through silently.
sleep 0.7
kill -STOP $rec
sleep 0.3
kill -CONT $rec
wait $rec || { cat "$T/record.err" "$T/vmm.out"; fail "record failed"; }
cat "$T/record.err"
wait "$VMM_PID" || fail "the VMM failed"
"$TOOLS/check_phases" --trace "$T/t.hvt" --phase-log "$T/phases.jsonl" --min-inside 0 --min-exact 20 >"$T/check.out" ||
	{ grep -v ': ok$' "$T/check.out"; fail "trace does not match the phases"; }
tail -n 1 "$T/check.out"
n=$(wc -l <"$T/rec.jsonl")
[ "$n" -ge 100 ] || fail "only $n intervals in 2 s at 10 ms"
# Missed deadlines: the sum in the JSON Lines equals what record and report say.
missed=$(grep -o '"missed_deadlines":[0-9]*' "$T/rec.jsonl" | awk -F: '{s += $2} END {print s + 0}')
assert_contains "$T/record.err" "($missed deadlines missed)"
"$BIN/hvmtrace" report "$T/t.hvt" >"$T/report.out" || fail "report failed"
assert_contains "$T/report.out" "$missed deadlines missed)"
[ "$missed" -ge 25 ] || fail "a 300 ms stop at 10 ms intervals missed only $missed deadlines"
grep -o '"duration_s":[0-9.]*,[^}]*"missed_deadlines":[0-9]*' "$T/rec.jsonl" |
	awk -F'[:,]' '$NF >= 25 && $2 >= 0.28 { found = 1 } END { exit !found }' ||
	fail "no interval spans the 300 ms stop with its missed deadlines counted"
# Durations of intervals after missed deadlines cover the skipped ones: no interval may be silently long.
awk -F'"duration_s":' '{split($2, a, ","); d = a[1]; m = 0; if (match($0, /"missed_deadlines":[0-9]+/)) m = substr($0, RSTART + 19, RLENGTH - 19); if (d > 0.010 * (m + 2) && $0 !~ /"final":true/) { print "interval too long for its missed count: " $0; exit 1 } }' "$T/rec.jsonl" | cut -c1-200 | grep . && fail "an interval spans more than its deadlines"
echo "ok: $n intervals, $missed deadlines missed"
