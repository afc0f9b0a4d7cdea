#!/bin/bash
# Runs the libFuzzer harnesses of FUZZ_BUILD (default build/fuzz; `make fuzzers`) one after another, each for
# SECONDS from its seed corpus tests/fuzz/corpus/NAME plus what earlier runs found (FUZZ_BUILD/corpus/NAME),
# and prints one line per harness: executions, time, rate, corpus size, findings. A crash, leak, timeout
# (one input over 10 s) or memory blow-up (over 2 GiB) is a finding: its input is kept in
# FUZZ_BUILD/findings/NAME/ and the script exits 1.
# FUZZ_RUNS=N ends a harness after N inputs if that comes first (the long runs: 10000000).
# FUZZ_JOBS=N runs N harnesses at a time (default 1); the lines still come in NAME order.
# Usage: tests/fuzz/run.sh [FUZZ_BUILD [SECONDS [NAME…]]]   (NAME: attach, trace_file, …)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
B=${1:-build/fuzz}
SECS=${2:-60}
shift $(($# > 2 ? 2 : $#))
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for s in tests/fuzz/fuzz_*.c; do
		names+=("$(basename "$s" .c | sed 's/^fuzz_//')")
	done
fi

jobs=${FUZZ_JOBS:-1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# One harness: its line on stdout, exit 1 when it found something or could not run.
run_one() {
	local name=$1 bin corpus findings log tmp start rc secs execs files bytes nfind
	bin=$B/fuzz/fuzz_$name
	if [ ! -x "$bin" ]; then
		echo "fuzz_$name: not built ($bin; make fuzzers)" >&2
		return 1
	fi
	corpus=$B/corpus/$name
	findings=$B/findings/$name
	log=$B/logs/$name.log
	mkdir -p "$corpus" "$findings" "$(dirname "$log")"
	# the harnesses write their files again for every input: a tmpfs keeps that cheap
	tmp=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
	start=$(date +%s%N)
	TMPDIR=$tmp "$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 ${FUZZ_RUNS:+-runs=$FUZZ_RUNS} \
		-artifact_prefix="$findings/" "$corpus" "tests/fuzz/corpus/$name" >"$log" 2>&1
	rc=$?
	secs=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
	rm -rf "$tmp"
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	files=$(find "$corpus" -type f | wc -l)
	bytes=$(du -sb "$corpus" | cut -f1)
	nfind=$(find "$findings" -type f | wc -l)
	printf 'fuzz_%s: %s executions in %.0f s (%s/s), corpus %s inputs (%s bytes), %s finding(s)%s\n' \
		"$name" "${execs:-?}" "$secs" "$(awk -v n="${execs:-0}" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')" \
		"$files" "$bytes" "$nfind" "$([ $rc -ne 0 ] && echo ", FAILED (exit $rc; log: $log)")"
	if [ $rc -ne 0 ]; then
		grep -E 'ERROR|SUMMARY|runtime error|^==[0-9]+==|Test unit written' "$log" | head -10 | sed 's/^/    /'
		return 1
	fi
}

failed=0
for i in "${!names[@]}"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
	{ run_one "${names[$i]}" >"$out/$i" 2>&1 || touch "$out/$i.failed"; } &
done
wait
for i in "${!names[@]}"; do
	cat "$out/$i"
	[ -e "$out/$i.failed" ] && failed=1
done
exit $failed
