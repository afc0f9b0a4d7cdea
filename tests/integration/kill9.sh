#!/bin/bash
# kill -9 of `hvmtrace record` at 20 random moments: every trace opens, and export recovers every interval
# the tracer finished before the kill (each complete line of the JSON Lines written alongside appears,
# identical, in the export; the trace may hold at most one interval more, written just before the kill).
# The VMM serves the next tracer after each kill.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm

start_vmm "$T/vmm.sock" --payload phases4 --phase-time 0.3s --repeat 0 --vcpu-cpu $VCPU_CPU
RANDOM=${KILL9_SEED:-$$}
echo "seed $RANDOM"
total=0
for i in $(seq 1 20); do
	ms=$((50 + RANDOM % 1450))
	"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 10ms -o "$T/k$i.hvt" \
		--jsonl "$T/k$i.jsonl" 2>"$T/k$i.err" &
	pid=$!
	sleep "$(awk -v ms=$ms 'BEGIN { printf "%.3f", ms / 1000 }')"
	kill -9 $pid
	wait $pid 2>/dev/null
	# Only complete lines count: the kill may tear the last one.
	if [ -s "$T/k$i.jsonl" ] && [ "$(tail -c 1 "$T/k$i.jsonl" | od -An -c | tr -d ' ')" != '\n' ]; then
		sed -i '$d' "$T/k$i.jsonl"
	fi
	lines=$(wc -l <"$T/k$i.jsonl")
	rc=0
	"$BIN/hvmtrace" export --jsonl "$T/k$i.export" "$T/k$i.hvt" 2>"$T/k$i.export.err" || rc=$?
	[ $rc = 3 ] || { cat "$T/k$i.err" "$T/k$i.export.err"; fail "kill $i after ${ms} ms: export exit $rc, expected 3 (incomplete)"; }
	assert_contains "$T/k$i.export.err" "incomplete trace"
	got=$(wc -l <"$T/k$i.export")
	[ "$got" -ge "$lines" ] && [ "$got" -le $((lines + 1)) ] ||
		fail "kill $i after ${ms} ms: export recovered $got intervals, the tracer had finished $lines"
	head -n "$lines" "$T/k$i.export" | cmp -s - "$T/k$i.jsonl" ||
		fail "kill $i after ${ms} ms: recovered intervals differ from what the tracer wrote"
	echo "kill $i after ${ms} ms: $lines intervals written, $got recovered"
	total=$((total + lines))
	kill -0 "$VMM_PID" || fail "the VMM died after kill $i"
done
[ $total -gt 100 ] || fail "only $total intervals over 20 runs: the kills came too early to test anything"
echo "ok: $total intervals recovered over 20 kills"
