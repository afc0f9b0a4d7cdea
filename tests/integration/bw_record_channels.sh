#!/bin/bash
# `hvmtrace record` with per-channel bandwidth, end to end: fakepeer's devmem mode is a VMM whose one slot
# is "devmem" with extents on channels s0.mc0.ch1, s1.mc0.ch0 and s0.mc0.ch1 again (made-up host addresses,
# nothing mapped: a stand-in for a VM on reserved channels); the PMU is the stand-in tree
# (tests/fixtures/sysfs/standin: the kernel's software PMU posing as IMC channels, CAS reads = cpu-clock ns,
# CAS writes = context switches), so perf_event_open/read/deltas run for real but the figures are not DRAM.
# cpu-clock makes the reads checkable: a channel's read CAS over a window is that window's nanoseconds, so
# the recorded deltas must add up to the time the intervals cover.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
[ "$(id -u)" = 0 ] || skip "needs root (CPU-wide perf events at perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid))"
[ "$(nproc)" -ge 2 ] || skip "the stand-in tree needs CPUs 0 and 1"
command -v jq >/dev/null || skip "jq is not installed (scripts/install-deps.sh)"
SYSFS=tests/fixtures/sysfs/standin/sys

start_fakepeer "$T/f.sock" devmem
"$BIN/hvmtrace" record --attach "$T/f.sock" --cpu $TRACER_CPU --interval 100ms --duration 1s \
	--sysfs-root "$SYSFS" -o "$T/t.hvt" --jsonl "$T/rec.jsonl" 2>"$T/err" ||
	fail "record failed: $(cat "$T/err" "$T/f.out")"
cat "$T/err"
assert_contains "$T/err" "bandwidth from pmu-stand-in (STAND-IN: not DRAM traffic)"

# Metadata: the layout's distinct channels in order of first appearance, labelled as a stand-in.
"$BIN/hvmtrace" export --meta "$T/t.hvt" >"$T/meta.json" || fail "export --meta failed"
jq -e '.meta.bandwidth_available == true and .meta.bandwidth_source == "pmu-stand-in" and
    ([.meta.channels[].id] == ["s0.mc0.ch1", "s1.mc0.ch0"]) and
    all(.meta.channels[]; (.source | startswith("stand-in")) and .reads_writes_split == true) and
    ([.meta.channels[].socket] == [0, 1])' "$T/meta.json" >/dev/null ||
	{ cat "$T/meta.json"; fail "metadata does not list the VM's two stand-in channels"; }

# Per interval: both channels, bytes = 64 x counts, sums right, monotonic time.
n=$(wc -l <"$T/rec.jsonl")
[ "$n" -ge 9 ] && [ "$n" -le 11 ] || fail "expected about 10 intervals in 1 s at 100 ms, got $n"
jq -e -s '
  all(.[]; (.channels | length) == 2 and ([.channels[].channel] == [0, 1])
      and all(.channels[]; .read_bytes % 64 == 0 and .write_bytes % 64 == 0 and .read_bytes > 0
                           and .total_bytes == .read_bytes + .write_bytes)
      and .read_bytes == ([.channels[].read_bytes] | add)
      and .write_bytes == ([.channels[].write_bytes] | add)
      and .total_bytes == .read_bytes + .write_bytes)
  and ([.[].seq] == [range(1; length + 1)])
  and ([range(1; length) as $i | .[$i].t_start_ns >= .[$i - 1].t_end_ns and .[$i].t_end_ns > .[$i].t_start_ns]
       | all)' "$T/rec.jsonl" >/dev/null || { cat "$T/rec.jsonl"; fail "per-interval bandwidth is inconsistent"; }
# cpu-clock: each channel's read CAS (bytes / 64) per window is that window's nanoseconds. The counters'
# window runs from one read (right after a harvest) to the next, so it tracks the interval within the
# harvest's jitter; summed over the run, deltas must equal the covered time closely.
jq -e -s '
  all(.[] | select(.final | not); (.duration_s * 1e9) as $ns |
      all(.channels[]; (.read_bytes / 64 / $ns) as $r | $r > 0.8 and $r < 1.2))
  and ([.[1:][] | .duration_s * 1e9] | add) as $ns |
      all([0, 1][]; . as $c | ([$L[1:][] | .channels[$c].read_bytes / 64] | add) / $ns | . > 0.97 and . < 1.03)' \
	--argjson L "$(jq -s . "$T/rec.jsonl")" "$T/rec.jsonl" >/dev/null ||
	{
		jq -c '[.seq, .duration_s, [.channels[].read_bytes / 64]]' "$T/rec.jsonl"
		fail "stand-in read counts do not match the windows' nanoseconds"
	}

# The trace holds the same figures: export equals what record wrote; CSV sums; report shows MB/s and totals.
"$BIN/hvmtrace" export --jsonl "$T/export.jsonl" --csv "$T/t.csv" "$T/t.hvt" || fail "export failed"
cmp "$T/rec.jsonl" "$T/export.jsonl" || fail "recorded JSON Lines differ from the export"
rd=$(jq -s '[.[].read_bytes] | add' "$T/rec.jsonl")
wr=$(jq -s '[.[].write_bytes] | add' "$T/rec.jsonl")
assert_eq "CSV read_bytes sum" "$rd" "$(awk -F, 'NR > 1 { s += $14 } END { printf "%.0f", s }' "$T/t.csv")"
assert_eq "CSV write_bytes sum" "$wr" "$(awk -F, 'NR > 1 { s += $15 } END { printf "%.0f", s }' "$T/t.csv")"
assert_eq "CSV total_bytes sum" "$((rd + wr))" "$(awk -F, 'NR > 1 { s += $17 } END { printf "%.0f", s }' "$T/t.csv")"
"$BIN/hvmtrace" report "$T/t.hvt" >"$T/report" || fail "report failed"
assert_contains "$T/report" "read_MBps write_MBps" \
	"pmu-stand-in (STAND-IN: software events, not DRAM): s0.mc0.ch1, s1.mc0.ch0" \
	"DRAM bytes read                  $rd " "DRAM bytes written               $wr "
# A row's read MB/s is its bytes over its duration (cpu-clock: 64 bytes per ns on each of 2 channels).
row=$(awk '$1 == 3 { print $7 }' "$T/report")
want=$(jq -s '.[2] | .read_bytes / .duration_s / 1e6 | . * 10 | round / 10' "$T/rec.jsonl")
assert_near "report row 3 says $row read MB/s, the interval's bytes give $want" "$row" "$want" 0.15
echo "ok: $n intervals, $rd bytes 'read' and $wr 'written' on 2 stand-in channels"
