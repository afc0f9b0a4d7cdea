#!/bin/bash
# `hvmtrace bw` end to end on a real kernel PMU: the stand-in tree (tests/fixtures/sysfs/standin) presents
# the software PMU as uncore_imc_0..1 on two "sockets" (CPUs 0 and 1), with CAS reads = cpu-clock (ns) and
# CAS writes = context-switches. perf_event_open, read, deltas and scaling all run for real; the figures
# are labelled as a stand-in, not DRAM. cpu-clock gives an independent check: a channel's read "CAS" delta
# is the nanoseconds that elapsed in its window. Nothing here is timed: on a busy machine bw may be
# scheduled late between reading its counters and stamping the window, so a window's count is held to its
# duration loosely and the three windows' sum tightly (the skew is only at their two ends).
source "$(dirname "$0")/../lib/assert.bash"
[ "$(id -u)" = 0 ] || skip "needs root (CPU-wide perf events at perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid))"
[ "$(nproc)" -ge 2 ] || skip "the stand-in tree needs CPUs 0 and 1"
command -v jq >/dev/null || skip "jq is not installed (scripts/install-deps.sh)"
ROOTDIR=tests/fixtures/sysfs/standin/sys

"$BIN/hvmtrace" bw --sysfs-root "$ROOTDIR" -n 3 --interval 100ms --jsonl "$T/bw.jsonl" --csv "$T/bw.csv" \
	>"$T/table" 2>"$T/err" || fail "bw failed: $(cat "$T/err")"
cat "$T/err"
assert_contains "$T/err" "STAND-IN"
assert_contains "$T/table" "STAND-IN: software events, not DRAM"
[ "$(wc -l <"$T/bw.jsonl")" = 3 ] || fail "expected 3 JSON lines, got $(wc -l <"$T/bw.jsonl")"
# CSV: header + 3 intervals x (4 channels + 2 sockets + system)
[ "$(wc -l <"$T/bw.csv")" = $((1 + 3 * 7)) ] || fail "unexpected CSV row count: $(wc -l <"$T/bw.csv")"
grep -q '^3,.*,system,system,' "$T/bw.csv" || fail "no system row for interval 3 in the CSV"

jq -e '.source | startswith("stand-in")' "$T/bw.jsonl" >/dev/null || fail "lines not labelled as a stand-in"
# Per line: 4 channels with the expected ids; bytes = 64 x CAS; sockets and system are sums of channels;
# windows of --interval 100ms, not the default 1 s; the cpu-clock "reads" of each channel match the
# window's duration within half of it, and over the three windows within 10 %.
jq -e -s '
  (map(.seq) == [1,2,3]) and
  all(.[]; ([.channels[].id] == ["s0.mc0.ch0","s0.mc0.ch1","s1.mc0.ch0","s1.mc0.ch1"])
     and all(.channels[]; .read_bytes == 64 * .read_cas and .write_bytes == 64 * .write_cas and .counted
                         and .running == 1)
     and .read_bytes == ([.channels[].read_bytes] | add)
     and .write_bytes == ([.channels[].write_bytes] | add)
     and ([.sockets[].read_bytes] | add) == .read_bytes
     and .duration_s < 0.5
     and (.duration_s as $d | all(.channels[]; (.read_cas / ($d * 1e9)) as $r | $r > 0.5 and $r < 1.5))) and
  (([.[].duration_s] | add) as $d | all(.[-1].channels[]; (.read_cas_total / ($d * 1e9)) as $r | $r > 0.9 and $r < 1.1))' \
	"$T/bw.jsonl" >/dev/null || { cat "$T/bw.jsonl"; fail "JSON Lines figures are not consistent"; }
# Monotonic and delta-correct: the running totals grow, and each total is the sum of the deltas so far.
jq -e -s '. as $L | [range(0; $L[0].channels | length)] | all(. as $i |
    [$L[] | .channels[$i].read_cas_total] as $tot | [$L[] | .channels[$i].read_cas] as $d |
    [$L[] | .channels[$i].write_cas_total] as $wtot | [$L[] | .channels[$i].write_cas] as $wd |
    ($tot == ($tot | sort)) and ($tot[0] < $tot[2]) and ($wtot == ($wtot | sort)) and
    ($tot[0] == $d[0]) and (($tot[2] - $tot[0]) == ($d[1] + $d[2])) and
    ($wtot[0] == $wd[0]) and (($wtot[2] - $wtot[0]) == ($wd[1] + $wd[2])))' "$T/bw.jsonl" >/dev/null ||
	{ cat "$T/bw.jsonl"; fail "totals are not monotonic or deltas do not add up"; }

# JSON Lines on standard output replaces the table; SIGINT ends an open-ended run cleanly.
"$BIN/hvmtrace" bw --sysfs-root "$ROOTDIR" --interval 50ms --jsonl - >"$T/stdout.jsonl" 2>"$T/err2" &
pid=$!
BG_PIDS+=("$pid")
wait_until "3 lines of bw --jsonl -" "$pid" awk 'END { exit NR < 3 }' "$T/stdout.jsonl"
kill -INT "$pid"
wait "$pid" || fail "bw did not exit 0 on SIGINT: $(cat "$T/err2")"
n=$(wc -l <"$T/stdout.jsonl")
[ "$n" -ge 3 ] || fail "expected several lines before SIGINT, got $n"
jq -e . "$T/stdout.jsonl" >/dev/null || fail "standard output is not pure JSON Lines"
echo "ok: 3 intervals of $(jq -s '[.[].duration_s] | add' "$T/bw.jsonl") s; $n lines until SIGINT"
