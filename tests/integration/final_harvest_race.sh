#!/bin/bash
# The final-harvest race (issue 13, item 1): a VMM whose guest stops at random points, RACE_STOPS times
# (default 200; seeds 1..N): a third at a random moment, a third right after a "harvested" while the tracer
# reads its bitmaps, a third with the tracer's next request on its way. Protocol 2's VMM
# writes the bitmaps only when asked, so every trace must hold exactly the intervals the VMM harvested,
# page for page, the final one included: 0 wrong, 0 lost. Then RACE_UNASKED stops (default 100) of a VMM
# that writes its final interval unasked, as protocol 1 did: the tracer may lose the last intervals then (it
# says so and exits 1), but the sequence word must keep every interval it records right.
# Every interval holds 16 pages, so equal page counts cannot reveal a wrong interval; the oracle can.
source "$(dirname "$0")/../lib/assert.bash"
command -v jq >/dev/null || skip "jq is not installed (scripts/install-deps.sh)"
STOPS=${RACE_STOPS:-200}
UNASKED=${RACE_UNASKED:-100}

# run_stops N [--unasked-final]: N tracer runs against one racepeer; sets WRONG, LOST, FAILED, INTERVALS.
run_stops() {
	local n=$1 flag=${2:-} k rc
	rm -rf "$T/oracle" && mkdir "$T/oracle"
	rm -f "$T/r.sock"
	# shellcheck disable=SC2086
	"$TOOLS/racepeer" "$T/r.sock" "$n" "$T/oracle" $flag >"$T/peer.out" 2>&1 &
	local peer=$!
	BG_PIDS+=("$peer")
	wait_socket "$T/r.sock"
	WRONG=0 LOST=0 FAILED=0 INTERVALS=0
	for k in $(seq 1 "$n"); do
		rc=0
		"$HVT" record --attach "$T/r.sock" --cpu "$TRACER_CPU" --interval 2ms -q -o "$T/t.hvt" \
			2>"$T/rec.err" || rc=$?
		case $rc in
		0) ;;
		1) if [ -z "$flag" ] || ! grep -q "wrote the shared bitmaps while the tracer read them\|unexpected harvested" "$T/rec.err"; then
			cat "$T/rec.err"
			fail "stop $k: record exited 1"
		fi
		   FAILED=$((FAILED + 1)) ;;
		*) cat "$T/rec.err"; fail "stop $k: record exited $rc" ;;
		esac
		"$HVT" export --jsonl - "$T/t.hvt" 2>"$T/exp.err" | jq -c '{seq,final,written}' >"$T/got.jsonl" ||
			{ cat "$T/exp.err"; fail "stop $k: the trace does not export"; }
		# Every recorded interval is the one the VMM harvested under its seq; none is missing.
		local wrong lost
		wrong=$(jq -c -n --slurpfile got "$T/got.jsonl" --slurpfile want "$T/oracle/$k.jsonl" \
			'[$got[] as $g | select(([$want[] | select(.seq == $g.seq)][0]) != $g)] | length')
		lost=$(jq -c -n --slurpfile got "$T/got.jsonl" --slurpfile want "$T/oracle/$k.jsonl" \
			'[$want[] as $w | select(([$got[] | select(.seq == $w.seq)] | length) == 0)] | length')
		[ "$wrong" = 0 ] || { diff "$T/got.jsonl" "$T/oracle/$k.jsonl" | head; cat "$T/rec.err"; }
		WRONG=$((WRONG + wrong))
		LOST=$((LOST + lost))
		INTERVALS=$((INTERVALS + $(wc -l <"$T/got.jsonl")))
	done
	wait "$peer" || fail "racepeer failed: $(cat "$T/peer.out")"
	cat "$T/peer.out"
}

run_stops "$STOPS"
echo "protocol 2: $STOPS stops, $INTERVALS intervals recorded, $WRONG wrong, $LOST lost"
assert_eq "wrong intervals" 0 "$WRONG"
assert_eq "lost intervals" 0 "$LOST"
assert_eq "failed runs" 0 "$FAILED"
grep -q "$STOPS final intervals sent" "$T/peer.out" || fail "not every stop ended with a final interval"
# The stops met the race's two windows: the tracer reading bitmaps, and a request on its way.
read -r after inflight < <(sed -n 's/.*: \([0-9]*\) right after a harvested, \([0-9]*\) with a request in flight.*/\1 \2/p' "$T/peer.out")
[ "${after:-0}" -gt 0 ] && [ "${inflight:-0}" -gt 0 ] || fail "no stop right after a harvested, or none with a request in flight"

run_stops "$UNASKED" --unasked-final
echo "unasked final (protocol 1's end): $UNASKED stops, $INTERVALS intervals recorded, $WRONG wrong, $LOST lost ($FAILED runs stopped by the tracer's checks)"
assert_eq "wrong intervals with an unasked final" 0 "$WRONG"
echo "ok"
