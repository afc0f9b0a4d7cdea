#!/bin/bash
# `record --duration D --interval I` has D/I deadlines: each is either harvested (one interval stands for it)
# or counted missed, so intervals + missed = D/I, and deadlines after the end of the run are never counted.
# Checked on an undisturbed run and on one whose tracer is stopped (SIGSTOP) after a few intervals until
# well past the end: when it goes on, the deadlines inside the run that it slept through are missed, the
# ones after the end are not deadlines of this run. (They were counted: a 1 s run stopped for 1.5 s said
# it missed some 40 deadlines of its 20.)
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm

start_vmm "$T/vmm.sock" --payload phases4 --phase-time 0.05s --repeat 0 --vcpu-cpu $VCPU_CPU

lines() { cat "$T/$1.jsonl" 2>/dev/null | wc -l; }
has_lines() { [ "$(lines "$1")" -ge "$2" ]; }

# check NAME: the run's intervals and missed deadlines add up to its 20 deadlines, in record's summary and
# in the JSON Lines alike; sets MISSED.
check() {
	local n missed said
	n=$(lines "$1")
	missed=$(grep -o '"missed_deadlines":[0-9]*' "$T/$1.jsonl" | awk -F: '{ s += $2 } END { print s + 0 }')
	said=$(sed -n 's/.*: \([0-9]*\) intervals recorded (\([0-9]*\) deadlines missed).*/\1 \2/p' "$T/$1.err")
	assert_eq "$1: record's summary (intervals, missed)" "$n $missed" "$said"
	[ $((n + missed)) = 20 ] ||
		fail "$1: $n intervals + $missed missed deadlines, but a 1 s run at 50 ms has 20 deadlines"
	echo "$1: $n intervals + $missed missed deadlines = 20"
	MISSED=$missed
}

# Undisturbed: whatever the machine's load made it miss, the sum holds.
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 50ms --duration 1s \
	-o "$T/quiet.hvt" --jsonl "$T/quiet.jsonl" 2>"$T/quiet.err" || fail "record failed: $(cat "$T/quiet.err")"
check quiet

# Stopped after 4 intervals (the 1 s run began before the first) for 1.5 s: the end has passed for certain
# when it goes on, however slowly the machine ran before the stop.
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 50ms --duration 1s \
	-o "$T/stopped.hvt" --jsonl "$T/stopped.jsonl" 2>"$T/stopped.err" &
rec=$!
BG_PIDS+=("$rec")
wait_until "the tracer writes 4 intervals" $rec has_lines stopped 4
kill -STOP $rec
sleep 1.5
kill -CONT $rec
wait $rec || fail "record exited $? after the stop: $(cat "$T/stopped.err")"
cat "$T/stopped.err"
check stopped
missed=$MISSED
[ "$missed" -gt 0 ] || fail "stopped past the end, the tracer missed no deadline: the test tested nothing"
"$BIN/hvmtrace" report "$T/stopped.hvt" >"$T/report.out" || fail "report failed"
assert_contains "$T/report.out" "$missed deadlines missed)"
echo "ok: the stopped run counts $missed missed deadlines, all inside the run"
