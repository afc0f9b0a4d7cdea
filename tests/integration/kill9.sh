#!/bin/bash
# kill -9 of `hvmtrace record` (10 ms intervals, no end) at 20 random moments: every trace opens as
# incomplete, and export recovers every interval the tracer finished before the kill (each complete line of
# the JSON Lines written alongside appears, identical, in the export; the trace may hold at most one interval
# more, written just before the kill). The VMM serves the next tracer after each kill. The moments follow
# what the tracer has done, not the clock: each kill comes a random 0-9 ms after the tracer has written a
# random number (1-150) of intervals, so a busy machine delays the kills rather than making them land in
# the attach. STORM_SEED repeats a run (the seed is printed).
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
source "$(dirname "$0")/../lib/storm.bash"
need_kvm

storm_vmm 0.3s
storm_seed
lines() { cat "$T/k.jsonl" 2>/dev/null | wc -l; }
has_lines() { [ "$(lines)" -ge "$1" ]; }
total=0
for i in $(seq 1 20); do
	want=$((1 + RANDOM % 150)) us=$((RANDOM % 10000))
	"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 10ms -o "$T/k.hvt" \
		--jsonl "$T/k.jsonl" 2>"$T/k.err" &
	pid=$!
	BG_PIDS+=("$pid")
	wait_until "kill $i: the tracer writes $want intervals" $pid has_lines $want
	sleep "$(awk -v us=$us 'BEGIN { printf "%.4f", us / 1e6 }')"
	kill -9 $pid
	wait $pid 2>/dev/null
	check_recovered "kill $i (after $want intervals + $us us)" "$T/k.hvt" "$T/k.jsonl" 3
	assert_contains "$T/k.hvt.export.err" "incomplete trace"
	echo "kill $i after $want intervals + $us us: $WRITTEN intervals written, $RECOVERED recovered"
	total=$((total + WRITTEN))
	rm -f "$T"/k.*
	kill -0 "$VMM_PID" || fail "the VMM died after kill $i"
done
echo "ok: $total intervals recovered over 20 kills"
