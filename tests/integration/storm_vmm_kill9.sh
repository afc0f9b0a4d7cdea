#!/bin/bash
# Storm: kill -9 of the VMM in the middle of an interval, 10 times at random moments (a random 0-99 ms after
# a random number, 1-8, of 100 ms intervals): `record` ends by itself, says the VMM went away, and leaves a
# closed trace (export exit 0) that holds every interval of the JSON Lines it wrote alongside, and nothing
# else. STORM_SEED repeats a run (the seed is printed).
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
source "$(dirname "$0")/../lib/storm.bash"
need_kvm

storm_seed
lines() { cat "$T/t.jsonl" 2>/dev/null | wc -l; }
has_lines() { [ "$(lines)" -ge "$1" ]; }
for i in $(seq 1 10); do
	want=$((1 + RANDOM % 8)) us=$(((RANDOM << 15 | RANDOM) % 100000))
	rm -f "$T"/t.* "$T/vmm.sock"
	storm_vmm 0.2s
	"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 100ms -o "$T/t.hvt" \
		--jsonl "$T/t.jsonl" 2>"$T/record.err" &
	rec=$!
	BG_PIDS+=("$rec")
	wait_until "the tracer writes interval $want" $rec has_lines $want
	sleep "$(awk -v us=$us 'BEGIN { printf "%.4f", us / 1e6 }')"
	kill -9 "$VMM_PID"
	wait "$VMM_PID" 2>/dev/null
	rc=0
	wait $rec || rc=$?
	[ $rc = 0 ] || [ $rc = 1 ] || fail "kill $i: record exited $rc: $(cat "$T/record.err")"
	grep -qiE 'closed|VMM|peer' "$T/record.err" || fail "kill $i: record does not say the VMM went away: $(cat "$T/record.err")"
	check_recovered "VMM kill $i (after $want intervals + $us us)" "$T/t.hvt" "$T/t.jsonl" 0
	[ "$RECOVERED" = "$WRITTEN" ] || fail "kill $i: the closed trace holds $RECOVERED intervals, the JSON Lines $WRITTEN"
	"$TOOLS/check_deadlines" --trace "$T/t.hvt" --interval 100ms >/dev/null || fail "kill $i: $("$TOOLS/check_deadlines" --trace "$T/t.hvt" --interval 100ms)"
	echo "VMM kill $i after $want intervals + $us us: record exit $rc, $WRITTEN intervals in a closed trace: $(tail -n 1 "$T/record.err")"
done
echo "ok: 10 VMM kills, every trace closed"
