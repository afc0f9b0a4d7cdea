#!/bin/bash
# record --metrics, scraped by a real Prometheus (Debian's): the endpoint passes promtool and strict
# OpenMetrics and Prometheus-text parsers, answers only GET of its one path, binds to loopback unless told
# otherwise, and what Prometheus stored from one scrape equals the sums of the trace's first N intervals, N
# being that scrape's interval count.
# The VMM is fakepeer's devmem VM (page i of harvest i written) with the stand-in PMU tree for per-channel
# bytes (see bw_record_channels.sh).
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
[ "$(id -u)" = 0 ] || skip "needs root (CPU-wide perf events for the stand-in channels)"
[ "$(nproc)" -ge 2 ] || skip "the stand-in tree needs CPUs 0 and 1"
for c in prometheus promtool curl jq ss; do
	command -v $c >/dev/null || skip "$c is not installed (scripts/install-deps.sh)"
done
/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null ||
	skip "python3-prometheus-client is not installed (scripts/install-deps.sh)"
TOOLS_PY=$ROOT/tests/tools

# A bad --metrics is a usage error, before anything is attached.
expect 2 "--metrics: '1.2.3' is not a numeric IPv4 or IPv6 address" "$BIN/hvmtrace" record --attach "$T/no.sock" --metrics 1.2.3:5
expect 2 "--metrics: '99999' is not a port number (0-65535)" "$BIN/hvmtrace" record --attach "$T/no.sock" --metrics 99999

start_fakepeer "$T/f.sock" devmem
"$BIN/hvmtrace" record --attach "$T/f.sock" --cpu $TRACER_CPU --interval 200ms --metrics 0 \
	--sysfs-root tests/fixtures/sysfs/standin/sys -o "$T/t.hvt" --jsonl "$T/rec.jsonl" 2>"$T/rec.err" &
REC=$!
BG_PIDS+=($REC)
wait_contains "$T/rec.err" "metrics at http://127.0.0.1:" $REC
url=$(sed -n 's/^hvmtrace record: metrics at //p' "$T/rec.err")
port=${url##*:}
port=${port%/metrics}

# Loopback only, unless told.
ss -Hltn "sport = :$port" | awk '{ print $4 }' >"$T/listen"
assert_eq "listening on" "127.0.0.1:$port" "$(cat "$T/listen")"

# Both text formats, each read by a strict parser: promtool and prometheus_client's for the Prometheus one,
# prometheus_client's OpenMetrics parser for OpenMetrics (tests/tools/check_openmetrics.py; each family's
# TYPE once: the gauge of the last interval once shared hvmtrace_written_pages with the counter's family).
# promtool 2.42 reads only the Prometheus format: on OpenMetrics it must find no error, and its only
# findings are the counters' _total samples, which it does not tie to their family's HELP.
curl -sf "$url" >"$T/text" || fail "GET $url failed"
promtool check metrics <"$T/text" || fail "promtool check metrics: not clean"
curl -sf -D "$T/om.h" -H 'Accept: application/openmetrics-text; version=1.0.0' "$url" >"$T/om" || fail "GET (OpenMetrics) failed"
assert_contains "$T/om.h" "application/openmetrics-text; version=1.0.0"
[ "$(tail -n 1 "$T/om")" = "# EOF" ] || fail "the OpenMetrics text does not end with # EOF"
promtool check metrics <"$T/om" >"$T/om.lint" 2>&1
grep -v '^hvmtrace_[a-z_]*_total no help text$' "$T/om.lint" >"$T/om.other" &&
	fail "promtool check metrics on OpenMetrics: $(cat "$T/om.other")"
"$TOOLS_PY"/check_openmetrics.py --format openmetrics "$T/om" || fail "OpenMetrics: refused by a strict parser"
"$TOOLS_PY"/check_openmetrics.py --format text "$T/text" || fail "Prometheus text: refused by a strict parser"
assert_contains "$T/om" "# TYPE hvmtrace_dram_read_bytes counter"
assert_contains "$T/text" "# TYPE hvmtrace_dram_read_bytes_total counter"
assert_contains "$T/text" 'hvmtrace_dram_read_bytes_total{vm="fake",socket="1",channel="s1.mc0.ch0"}'

# Nothing but GET of /metrics.
code() { curl -s -o /dev/null -w '%{http_code} %header{allow}' "$@"; }
assert_eq "POST" "405 GET" "$(code -X POST -d x "$url")"
assert_eq "HEAD" "405 GET" "$(code -I "$url")"
assert_eq "PUT" "405 GET" "$(code -X PUT -d x "$url")"
assert_eq "other path" "404 " "$(code "${url%/metrics}/")"
assert_eq "other path" "404 " "$(code "${url}x")"

# A real Prometheus on loopback scrapes it every second.
pport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$T/prom.yml" <<EOY
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: hvmtrace
    static_configs:
      - targets: ["127.0.0.1:$port"]
EOY
prometheus --config.file="$T/prom.yml" --storage.tsdb.path="$T/tsdb" --web.listen-address="127.0.0.1:$pport" \
	>"$T/prom.log" 2>&1 &
BG_PIDS+=($!)
api="http://127.0.0.1:$pport/api/v1"
q() { curl -sf --data-urlencode "query=$1" ${2:+--data-urlencode "time=$2"} "$api/query"; }
# two scrapes stored
scraped() { [ "$(q 'count_over_time(hvmtrace_intervals_total[5m])' | jq -r '.data.result[0].value[1] // 0')" -ge 2 ] 2>/dev/null; }
wait_until "Prometheus did not scrape twice ($(tail -n 3 "$T/prom.log"))" "${BG_PIDS[-1]}" scraped
assert_eq "up" 1 "$(q 'up{job="hvmtrace"}' | jq -r '.data.result[0].value[1]')"
# one instant: every series from the same (latest) scrape
at=$(q 'time()' | jq -r '.data.result[0]')
q '{job="hvmtrace",__name__=~"hvmtrace_.*"}' "$at" >"$T/q.json" || fail "query failed"
kill -INT $REC
wait $REC || fail "record failed: $(cat "$T/rec.err")"
val() { jq -r --arg n "$1" --arg c "${2:-}" '.data.result[] | select(.metric.__name__ == $n and ($c == "" or .metric.channel == $c)) | .value[1]' "$T/q.json"; }
n=$(val hvmtrace_intervals_total)
[ "$n" -ge 2 ] || fail "Prometheus holds $n intervals"
first() { jq -s --argjson n "$n" ".[:\$n] | $1" "$T/rec.jsonl"; }
assert_eq "written pages" "$(first '[.[].written_pages] | add')" "$(val hvmtrace_written_pages_total)"
assert_eq "last interval's pages" "$(first '.[-1].written_pages')" "$(val hvmtrace_last_interval_written_pages)"
assert_eq "missed deadlines" "$(first '[.[].missed_deadlines] | add')" "$(val hvmtrace_missed_deadlines_total)"
assert_eq "harvests counted" "$n" "$(val hvmtrace_harvest_duration_seconds_count)"
assert_eq "s0.mc0.ch1 read bytes" "$(first '[.[].channels[0].read_bytes] | add')" "$(val hvmtrace_dram_read_bytes_total s0.mc0.ch1)"
assert_eq "s1.mc0.ch0 write bytes" "$(first '[.[].channels[1].write_bytes] | add')" "$(val hvmtrace_dram_write_bytes_total s1.mc0.ch0)"
cpu=$(first '[.[].tracer_cpu_us] | add / 1e6')
prom_cpu=$(val hvmtrace_tracer_cpu_seconds_total)
assert_near "tracer CPU: the trace says $cpu s, Prometheus $prom_cpu s" "$cpu" "$prom_cpu" 1e-6
[ "$(val hvmtrace_trace_written_bytes_total)" -gt 0 ] || fail "no trace bytes reported"
[ "$(val hvmtrace_trace_written_bytes_total)" -le "$(stat -c %s "$T/t.hvt")" ] || fail "more trace bytes than the file has"
echo "ok: Prometheus stored $n intervals, $(val hvmtrace_written_pages_total) pages written, as in the trace"
