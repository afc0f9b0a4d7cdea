#!/bin/bash
# The last intervals reach a scraper: when the run ends (here the VM: fakepeer's guest stops after N
# harvests and sends its final interval), record --metrics keeps its endpoint up, and in the registry, until
# a scrape has taken the final figures, then exits; a scrape after the VM's end sees as many intervals as
# the trace holds (the endpoint used to close with the run: 9 of 411 intervals never scraped at 100 ms).
# --metrics-linger bounds the wait (0: none); a signal ends it. No timing is asserted: the wait is 1h, and
# what ends it is observed.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
command -v curl >/dev/null || skip "curl is not installed (scripts/install-deps.sh)"
/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null ||
	skip "python3-prometheus-client is not installed (scripts/install-deps.sh)"
export HVMTRACE_RUN_DIR=$T/run
CHECK=$ROOT/tests/tools/check_openmetrics.py

expect 2 "--metrics-linger needs --metrics" "$HVT" record --attach "$T/no.sock" --metrics-linger 5s
expect 2 "'soon' is not a duration (e.g. 15s, 500ms) or 0" "$HVT" record --attach "$T/no.sock" --metrics 0 --metrics-linger soon

# record NAME HARVESTS [record options]: fakepeer's VM that stops after HARVESTS, traced with --metrics 0
recorder() {
	local name=$1 n=$2
	shift 2
	start_fakepeer "$T/$name.sock" slow-bye "$n"
	: >"$T/$name.err"
	"$HVT" record --attach "$T/$name.sock" --interval 100ms --metrics 0 -o "$T/$name.hvt" "$@" 2>"$T/$name.err" &
	REC=$!
	BG_PIDS+=($REC)
	wait_contains "$T/$name.err" "metrics at http://127.0.0.1:" $REC
	URL=$(sed -n 's/^hvmtrace record: metrics at //p' "$T/$name.err")
}

# The VM ends; the endpoint stays, and so does its registry entry, with the final figures.
recorder a 8 --metrics-linger 1h
wait_contains "$T/a.err" "serving the final figures until a scrape takes them (at most 3600s" $REC
assert_contains "$T/a.err" "the VMM said bye: fakepeer's guest stopped"
grep -qx "$URL" "$T"/run/record-$REC.url || fail "the registry no longer names the lingering endpoint"
n=$("$HVT" export --no-pages "$T/a.hvt" | wc -l)
[ "$n" -ge 9 ] || fail "the trace holds $n intervals; fakepeer answers 8 and the final one"
curl -sf "$URL" >"$T/text" || fail "no scrape after the VM's end: $(cat "$T/a.err")"
# one answer of the final figures was sent whole: record ends
wait $REC || fail "record failed: $(cat "$T/a.err")"
assert_contains "$T/a.err" "hvmtrace record: metrics: the final figures were scraped"
"$CHECK" --format text --expect hvmtrace_intervals_total="$n" "$T/text" ||
	fail "the scrape after the VM's end does not hold the trace's $n intervals"
[ ! -e "$T/run/record-$REC.url" ] || fail "the registry entry outlived record"
echo "ok: a scrape after the VM's end saw all $n intervals; record then ended"

# The same in OpenMetrics, which Prometheus asks for.
recorder b 3 --metrics-linger 1h
wait_contains "$T/b.err" "serving the final figures" $REC
nb=$("$HVT" export --no-pages "$T/b.hvt" | wc -l)
curl -sf -H 'Accept: application/openmetrics-text; version=1.0.0' "$URL" >"$T/om" || fail "no OpenMetrics scrape after the VM's end"
wait $REC || fail "record failed: $(cat "$T/b.err")"
"$CHECK" --format openmetrics --expect hvmtrace_intervals_total="$nb" "$T/om" || fail "OpenMetrics: not the trace's $nb intervals"

# A run ended by a signal lingers too (the intervals since the last scrape are as lost otherwise): the
# signal that ended it is not taken as the end of the wait.
recorder s 1000000 --metrics-linger 1h
counted() { curl -sf "$URL" | grep -q '^hvmtrace_intervals_total{vm="fake"} [1-9]'; }
wait_until "no interval recorded" $REC counted
kill -INT $REC
wait_contains "$T/s.err" "serving the final figures" $REC
ns=$("$HVT" export --no-pages "$T/s.hvt" | wc -l)
curl -sf "$URL" >"$T/s.text" || fail "no scrape after SIGINT: $(cat "$T/s.err")"
wait $REC || fail "record failed: $(cat "$T/s.err")"
assert_contains "$T/s.err" "the final figures were scraped"
"$CHECK" --format text --expect hvmtrace_intervals_total="$ns" "$T/s.text" || fail "not the trace's $ns intervals after SIGINT"

# A signal ends the wait; nothing else is lost (the trace was closed before).
recorder c 3 --metrics-linger 1h
wait_contains "$T/c.err" "serving the final figures" $REC
kill -INT $REC
wait $REC || fail "record stopped while lingering exited non-zero: $(cat "$T/c.err")"
assert_contains "$T/c.err" "stopped before a scrape took the final figures"
"$HVT" report "$T/c.hvt" >/dev/null || fail "the trace of a stopped linger is not complete"

# --metrics-linger 0: the endpoint closes with the run.
recorder d 3 --metrics-linger 0
wait $REC || fail "record failed: $(cat "$T/d.err")"
grep -q "serving the final figures" "$T/d.err" && fail "--metrics-linger 0 lingered"
echo "ok: the final figures are served until scraped; a signal or --metrics-linger 0 ends that"
