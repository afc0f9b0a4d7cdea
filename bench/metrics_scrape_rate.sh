#!/bin/bash
# Scrapes a second that `record --metrics` answers while it traces the phase payload at 100 ms for 4 s:
# four curls on the vCPU's CPU scrape as fast as they are answered (the endpoint's thread runs on the
# tracer's CPU, below the harvest). Prints the whole answers, the rate and the deadlines missed; asserts
# nothing (tests/integration/metrics_storm.sh checks that the storm costs the harvest nothing).
# usage: bench/metrics_scrape_rate.sh BUILD_DIR   (needs /dev/kvm and curl)
set -u
BUILD=${1:?usage: bench/metrics_scrape_rate.sh BUILD_DIR}
[ -c /dev/kvm ] && [ -w /dev/kvm ] || { echo "no usable /dev/kvm: skipped"; exit 0; }
command -v curl >/dev/null || { echo "curl is not installed: skipped"; exit 0; }
T=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
last=$(($(nproc) - 1))

"$BUILD/bin/hvmtrace-vmm" --listen "$T/vm.sock" --payload phases4 --phase-time 0.5s --repeat 0 --vcpu-cpu 0 \
	>/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$T/vm.sock" ] && break; sleep 0.05; done
"$BUILD/bin/hvmtrace" record --attach "$T/vm.sock" --cpu $last --interval 100ms --duration 4s --metrics 0 \
	--metrics-linger 0 -o "$T/t.hvt" 2>"$T/record.err" &
rec=$!
until grep -q "metrics at http://" "$T/record.err" || ! kill -0 $rec 2>/dev/null; do sleep 0.01; done
url=$(sed -n 's/^hvmtrace record: metrics at //p' "$T/record.err")
[ -n "$url" ] || { cat "$T/record.err"; exit 1; }
start=$(date +%s.%N)
scrapers=()
for i in 1 2 3 4; do
	taskset -c 0 curl -s --fail-early "$url?n=[1-1000000]" 2>/dev/null | grep -c '^hvmtrace_metrics_scrapes_total{' \
		>"$T/n.$i" &
	scrapers+=($!)
done
wait $rec
stop=$(date +%s.%N)
wait "${scrapers[@]}"
scrapes=$(cat "$T"/n.* | awk '{ s += $1 } END { print s + 0 }')
missed=$(sed -n 's/.*intervals recorded (\([0-9]*\) deadlines missed).*/\1/p' "$T/record.err")
awk -v n="$scrapes" -v a="$start" -v b="$stop" -v m="$missed" 'BEGIN {
	printf "%d whole answers in %.2f s: %.0f scrapes/s (4 curls on CPU 0); %s deadlines of 40 missed\n", n, b - a, n / (b - a), m }'
