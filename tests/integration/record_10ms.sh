#!/bin/bash
# 10 ms intervals work. Deadlines: the tracer is stopped for 300 ms once it has harvested 20 intervals; the
# deadlines it slept through are counted in the interval that spans them, never merged silently
# (tests/tools/check_deadlines), and record and report agree on the count. Pages: the phase pattern traced
# from start to end matches the phase log (must ⊆ written ⊆ may in every interval, exact in 5 whole-pass
# intervals of each phase; each phase is held until the tracer has harvested those, so a busy machine makes
# phases longer, never too short for the check). Where the guest's vCPU cannot finish a whole pass inside
# any 10 ms interval (in dirty-log mode every pass write-faults on the pages each harvest protects again),
# nothing can be held to the phase log interval by interval: the test skips with the pass times it saw.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm

# Deadlines, on a VMM of their own (trace_phases below starts the other).
start_vmm "$T/stop.sock" --payload phases4 --phase-time 0.5s --repeat 0 --vcpu-cpu $VCPU_CPU
stop_vmm=$VMM_PID
"$BIN/hvmtrace" record --attach "$T/stop.sock" --cpu $TRACER_CPU --interval 10ms -o "$T/stop.hvt" \
	--jsonl "$T/stop.jsonl" 2>"$T/stop.err" &
rec=$!
BG_PIDS+=("$rec")
has_lines() { [ "$(cat "$T/stop.jsonl" 2>/dev/null | wc -l)" -ge "$1" ]; }
wait_until "the tracer writes 20 intervals" $rec has_lines 20
kill -STOP $rec
sleep 0.3
kill -CONT $rec
wait_until "the tracer goes on after the stop" $rec has_lines $(($(wc -l <"$T/stop.jsonl") + 20))
kill -INT $rec
wait $rec || fail "record exited $? after SIGINT: $(cat "$T/stop.err")"
cat "$T/stop.err"
kill "$stop_vmm"
"$TOOLS/check_deadlines" --trace "$T/stop.hvt" --interval 10ms >"$T/deadlines" || {
	cat "$T/deadlines"
	fail "missed deadlines are not accounted for"
}
cat "$T/deadlines"
missed=$(grep -o '"missed_deadlines":[0-9]*' "$T/stop.jsonl" | awk -F: '{s += $2} END {print s + 0}')
assert_contains "$T/stop.err" "($missed deadlines missed)"
"$BIN/hvmtrace" report "$T/stop.hvt" >"$T/report.out" || fail "report failed"
assert_contains "$T/report.out" "$missed deadlines missed)"
# The stop lies in one interval of at least 300 ms, which spans at least 30 deadlines and so says it
# missed at least 29.
grep -o '"duration_s":[0-9.]*,[^}]*"missed_deadlines":[0-9]*' "$T/stop.jsonl" |
	awk -F'[:,]' '$NF >= 29 && $2 >= 0.3 { found = 1 } END { exit !found }' ||
	fail "no interval spans the 300 ms stop with its missed deadlines counted"
echo "deadlines ok: $(wc -l <"$T/stop.jsonl") intervals, $missed deadlines missed, the stop counted"

# Pages.
trace_phases 10ms 0.5s 5
echo "ok: $(wc -l <"$T/rec.jsonl") intervals match the phase log"
