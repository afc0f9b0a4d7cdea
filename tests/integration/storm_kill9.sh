#!/bin/bash
# Storm: kill -9 of `hvmtrace record` at 100 random moments of a 100 ms run (10 ms intervals): every trace
# that exists opens, and every interval completed before the kill is exported, identical to the JSON Lines
# the tracer wrote alongside. The moments follow what the tracer has done, not the clock: each kill comes a
# random 0-9 ms after the tracer has written a random number (0-10) of intervals, so kills land in the
# attach, in every interval and after the end. STORM_SEED repeats a run (the seed is printed).
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
source "$(dirname "$0")/../lib/storm.bash"
need_kvm

storm_vmm 0.05s
storm_seed
notrace=0 inside=0 after=0 total=0
for i in $(seq 1 100); do
	want=$((RANDOM % 11)) us=$((RANDOM % 10000))
	"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 10ms --duration 100ms \
		-o "$T/k.hvt" --jsonl "$T/k.jsonl" 2>"$T/k.err" &
	pid=$!
	# the moment: once `want` intervals are written (or the tracer has ended), then a random fraction
	# of an interval
	until [ "$(cat "$T/k.jsonl" 2>/dev/null | wc -l)" -ge "$want" ] || ! kill -0 $pid 2>/dev/null; do
		sleep 0.001
	done
	sleep "$(awk -v us=$us 'BEGIN { printf "%.4f", us / 1e6 }')"
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	if [ ! -e "$T/k.hvt" ]; then
		notrace=$((notrace + 1)) # killed before the trace was created
		[ ! -s "$T/k.jsonl" ] || fail "kill $i: JSON Lines written, but no trace"
	else
		check_recovered "kill $i (after $want intervals + $us us)" "$T/k.hvt" "$T/k.jsonl" 0 3
		if [ "$WRITTEN" -ge 10 ]; then after=$((after + 1)); else inside=$((inside + 1)); fi
		total=$((total + WRITTEN))
	fi
	rm -f "$T"/k.*
	kill -0 "$VMM_PID" || fail "the VMM died after kill $i"
done
echo "100 kills: $notrace before the trace existed, $inside during the run, $after after its last interval; $total intervals recovered"
[ $inside -ge 50 ] || fail "only $inside kills landed during a run: the storm tested too little"
