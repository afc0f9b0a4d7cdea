#!/bin/bash
# A scrape storm does not slow the harvest (issue 12 item 5): the phase payload traced at 100 ms for the same
# number of intervals, once quiet and once while curl scrapes the metrics endpoint as fast as it answers; the
# stormy run misses no more deadlines than the quiet one, and the endpoint answered many scrapes a second.
# The scrapers run on the vCPU's CPU; the endpoint's thread runs on the tracer's, below the harvest.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm
command -v curl >/dev/null || skip "curl is not installed (scripts/install-deps.sh)"

start_vmm "$T/vmm.sock" --payload phases4 --phase-time 0.5s --repeat 0 --vcpu-cpu $VCPU_CPU

run() { # NAME [storm]: 40 intervals at 100 ms; prints the deadlines missed
	"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 100ms --duration 4s --metrics 0 --metrics-linger 0 \
		-o "$T/$1.hvt" --jsonl "$T/$1.jsonl" 2>"$T/$1.err" &
	local rec=$!
	BG_PIDS+=($rec)
	wait_contains "$T/$1.err" "metrics at http://" $rec
	local url
	url=$(sed -n 's/^hvmtrace record: metrics at //p' "$T/$1.err")
	if [ "${2:-}" = storm ]; then
		# four scrapers, each as fast as it is answered, until record is gone (--fail-early); each
		# counts the answers it got
		for i in 1 2 3 4; do
			(taskset -c $VCPU_CPU curl -s --fail-early "$url?n=[1-1000000]" | grep -c '^hvmtrace_info{' \
				>"$T/scrapes.$i") &
			BG_PIDS+=($!)
		done
	fi
	wait $rec || fail "$1: record failed: $(cat "$T/$1.err")"
	[ "${2:-}" = storm ] && wait "${BG_PIDS[@]: -4}"
	sed -n 's/.*intervals recorded (\([0-9]*\) deadlines missed).*/\1/p' "$T/$1.err"
}
quiet=$(run quiet)
run storm storm >"$T/storm.missed"
storm=$(cat "$T/storm.missed")
[ -n "$quiet" ] && [ -n "$storm" ] || fail "no missed-deadline counts: $(cat "$T/quiet.err" "$T/storm.err")"
scrapes=$(cat "$T"/scrapes.* | awk '{ s += $1 } END { print s + 0 }')
rate=$((scrapes / 4))
echo "missed deadlines: quiet $quiet, storm $storm; $scrapes scrapes answered in 4 s ($rate/s)"
[ "$rate" -ge 100 ] || fail "the endpoint answered only $rate scrapes a second"
[ "$storm" -le "$quiet" ] || fail "the scrape storm cost $((storm - quiet)) more missed deadlines"
# the stormy trace is as complete as the quiet one
assert_eq "intervals" "$(wc -l <"$T/quiet.jsonl")" "$(wc -l <"$T/storm.jsonl")"
