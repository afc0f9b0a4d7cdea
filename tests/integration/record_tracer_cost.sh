#!/bin/bash
# The tracer's own cost is data (issue 12 item 4): every interval records the tracer's CPU time next to the
# harvest time, report shows both as a share of one core, and an interval in which the tracer needed more
# than half its CPU is flagged in the trace and warned about on stderr.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm

# A small guest at 1 s: the tracer's CPU is recorded for every interval, and it is far from busy.
start_vmm "$T/vmm.sock" --payload phases4 --phase-time 0.5s --repeat 0 --vcpu-cpu $VCPU_CPU
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 1s --duration 3s -o "$T/idle.hvt" \
	--jsonl "$T/idle.jsonl" 2>"$T/idle.err" || fail "record failed: $(cat "$T/idle.err")"
assert_eq "intervals without the tracer's CPU time" 0 "$(jq -s 'map(select(.tracer_cpu_us == null)) | length' "$T/idle.jsonl")"
assert_eq "busy intervals at 1 s" 0 "$(jq -s 'map(select(.tracer_busy)) | length' "$T/idle.jsonl")"
jq -e -s 'all(.tracer_cpu_us > 0 and .tracer_cpu_us < .duration_s * 0.5e6)' "$T/idle.jsonl" >/dev/null ||
	fail "tracer CPU times out of range: $(jq -c '[.duration_s, .tracer_cpu_us]' "$T/idle.jsonl")"
grep -q "more than 50 %" "$T/idle.err" && fail "warned of a busy tracer at 1 s"
"$BIN/hvmtrace" report "$T/idle.hvt" >"$T/idle.report" || fail "report failed"
assert_contains "$T/idle.report" "missed harvest_% tracer_%" "(more than 50 % in 0 intervals)"
# report's share for interval 2 is its CPU time over its duration
row=$(awk '$1 == 2 { print $(NF - 0) }' "$T/idle.report")
want=$(jq -s '.[1] | .tracer_cpu_us / 1e4 / .duration_s | . * 10 | round / 10' "$T/idle.jsonl")
assert_near "report says interval 2 took $row % of a core, the trace $want %" "$row" "$want" 0.11
kill "$VMM_PID"
wait "$VMM_PID" 2>/dev/null

# A 1 TiB guest at 10 ms: scanning its bitmaps takes the tracer more than half of each interval.
rm -f "$T/vmm.sock"
start_vmm "$T/vmm.sock" --payload phases4 --high-ram 1T --phase-time 0.5s --repeat 0 --vcpu-cpu $VCPU_CPU
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 10ms --duration 1s -o "$T/busy.hvt" \
	--jsonl "$T/busy.jsonl" 2>"$T/busy.err" || fail "record failed: $(cat "$T/busy.err")"
busy=$(jq -s 'map(select(.tracer_busy)) | length' "$T/busy.jsonl")
[ "$busy" -ge 1 ] || fail "no interval flagged busy: $(jq -c '[.duration_s, .tracer_cpu_us]' "$T/busy.jsonl")"
# flagged exactly where the CPU time exceeds half the interval
jq -e -s 'all(.tracer_busy == (.tracer_cpu_us > .duration_s * 0.5e6))' "$T/busy.jsonl" >/dev/null ||
	fail "the busy flag disagrees with the CPU times: $(jq -c '[.duration_s, .tracer_cpu_us, .tracer_busy]' "$T/busy.jsonl")"
assert_contains "$T/busy.err" "(more than 50 %); deadlines may be missed at this interval"
assert_contains "$T/busy.err" "warning: in $busy interval"
"$BIN/hvmtrace" report "$T/busy.hvt" >"$T/busy.report" || fail "report failed"
assert_contains "$T/busy.report" "(more than 50 % in $busy interval"
assert_eq "rows marked busy" "$busy" "$(grep -c ' busy$\| busy ' "$T/busy.report")"
echo "ok: idle at 1 s; $busy of $(wc -l <"$T/busy.jsonl") intervals busy at 10 ms on a 1 TiB guest"
