#!/bin/bash
# Storm: SIGSTOP of `hvmtrace record` for 2 s, then SIGCONT, three times in one run at random moments
# (a random 0-49 ms after a random number of 50 ms intervals): each stop lands in one interval that spans it
# and counts the deadlines it missed (tests/tools/check_deadlines: no interval spans more deadlines than it
# says), no interval is lost or merged, and the closed trace equals the JSON Lines written alongside.
# STORM_SEED repeats a run (the seed is printed).
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
source "$(dirname "$0")/../lib/storm.bash"
need_kvm

storm_vmm 0.3s
storm_seed
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 50ms -o "$T/t.hvt" \
	--jsonl "$T/t.jsonl" 2>"$T/record.err" &
rec=$!
BG_PIDS+=("$rec")
lines() { cat "$T/t.jsonl" 2>/dev/null | wc -l; }
has_lines() { [ "$(lines)" -ge "$1" ]; }
for round in 1 2 3; do
	want=$(($(lines) + 2 + RANDOM % 6)) us=$(((RANDOM << 15 | RANDOM) % 50000))
	wait_until "the tracer writes interval $want" $rec has_lines $want
	sleep "$(awk -v us=$us 'BEGIN { printf "%.4f", us / 1e6 }')"
	kill -STOP $rec
	stopped=$(lines)
	sleep 2
	kill -CONT $rec
	echo "round $round: stopped for 2 s after interval $stopped (+$us us)"
done
want=$(($(lines) + 3))
wait_until "the tracer goes on after the last stop" $rec has_lines $want
kill -INT $rec
wait $rec || fail "record exited $? after SIGINT: $(cat "$T/record.err")"
cat "$T/record.err"
check_recovered "after 3 stops" "$T/t.hvt" "$T/t.jsonl" 0
[ "$RECOVERED" = "$WRITTEN" ] || fail "the closed trace holds $RECOVERED intervals, the JSON Lines $WRITTEN"
"$TOOLS/check_deadlines" --trace "$T/t.hvt" --interval 50ms >"$T/deadlines" || {
	cat "$T/deadlines"
	fail "deadlines missed during the stops are not all accounted for"
}
cat "$T/deadlines"
# Each stop lies in one interval, which says it missed its deadlines. (A stop that came while the VMM
# answered a harvest request leaves that interval's end inside the stop: the next one then spans the
# rest, a little under 2 s.)
long=$("$BIN/hvmtrace" export --csv - "$T/t.hvt" | awk -F, 'NR > 1 && $4 >= 1.9 && $7 >= 36' | wc -l)
[ "$long" = 3 ] || fail "found $long intervals of 1.9 s or more that count their missed deadlines, expected 3"
echo "ok: 3 stops, each in an interval of about 2 s that counts its missed deadlines"
