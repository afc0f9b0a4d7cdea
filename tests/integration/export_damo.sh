#!/bin/bash
# hvmtrace export --damo (docs/analyses.md, "Exports for other tools"), checked without damo (its format as
# damo's source reads it: tests/tools/damo_record.py; the real damo runs in export_damo_tool.sh):
#  - DAMON's semantics on a trace known by construction (tests/tools/synth_arrays: a read and c written in
#    every interval, b read from interval 21): nr_accesses counts the intervals of a window, age the windows
#    since it changed, equal neighbours merge, page 0 is a region of its own;
#  - --damo-aggr, --damo-max-regions and --from/--to/--range, and the refusals;
#  - on a trace with thousands of runs per interval (tests/tools/synth_trace), at DAMON's cap of 1,000
#    regions: each snapshot's working set (regions with nr_accesses >= 1, what `damo report wss` sums) is
#    report's within 2 % and its accesses (damo's heat) within 1 %; uncapped, the working set is exact; the
#    file is at most 10 times the trace (the sizes are printed);
#  - a layout that changes mid-trace (tests/tools/fakepeer plugs a slot in at 1 TiB): the snapshots after it
#    tile the new slot too, and its page written in interval 4 counts there.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
command -v jq >/dev/null || skip "needs jq"
command -v python3 >/dev/null || skip "needs python3"
DR=(python3 "$ROOT/tests/tools/damo_record.py")

"$TOOLS/synth_arrays" -o "$T/a.hvt" --memory 512M --intervals 40 --noise-written 0 --noise-accessed 0 \
	>"$T/truth" || fail "synth_arrays"
read -r _ _ a n <<<"$(grep '^array a' "$T/truth")"
read -r _ _ b _ <<<"$(grep '^array b' "$T/truth")"
read -r _ _ c _ <<<"$(grep '^array c' "$T/truth")"
a=$((a)) b=$((b)) c=$((c)) n=$((n)) end=$((512 << 8))

"$HVT" export --damo "$T/a.damo" "$T/a.hvt" || fail "export --damo"
if command -v file >/dev/null; then # damo picks its reader by what file(1) says
	assert_eq "file(1) on the record" "zlib compressed data" "$(file -b "$T/a.damo")"
fi
assert_eq "record" "records 1 snapshots 4 regions_max 8 sample_us 1000000 aggr_us 10000000" \
	"$("${DR[@]}" "$T/a.damo" check)"
# windows 1-2 (copy): a and c in all 10 intervals; 3-4 (add): b too, its age restarting at 0
quiet() { echo "0-1:0:$1 1-$a:0:$1"; }
want=$(for k in 0 1; do
	echo "$(quiet $k) $a-$((a + n)):10:$k $((a + n))-$c:0:$k $c-$((c + n)):10:$k $((c + n))-$end:0:$k"
done
for k in 2 3; do
	echo "$(quiet $k) $a-$((a + n)):10:$k $((a + n))-$b:0:$k $b-$((b + n)):10:$((k - 2))" \
		"$((b + n))-$c:0:$k $c-$((c + n)):10:$k $((c + n))-$end:0:$k"
done)
assert_eq "regions (first-end:nr_accesses:age, pages)" "$want" "$("${DR[@]}" "$T/a.damo" regions)"
echo "ok: DAMON's nr_accesses and age, equal neighbours merged, page 0 alone"

# A window of 4 s is 4 intervals: 10 snapshots, nr_accesses up to 4; 2.5 s rounds to 3 intervals (14
# snapshots, the last of one interval). A window shorter than an interval is refused, nothing written.
"$HVT" export --damo "$T/w4.damo" --damo-aggr 4s "$T/a.hvt" || fail "--damo-aggr 4s"
assert_eq "--damo-aggr 4s" "records 1 snapshots 10 regions_max 8 sample_us 1000000 aggr_us 4000000" \
	"$("${DR[@]}" "$T/w4.damo" check)"
assert_eq "nr_accesses of a, --damo-aggr 4s" "4 4 4 4 4 4 4 4 4 4" \
	"$("${DR[@]}" "$T/w4.damo" regions | awk '{ split($3, f, ":"); printf "%s ", f[2] }' | xargs)"
"$HVT" export --damo "$T/w3.damo" --damo-aggr 2500ms "$T/a.hvt" || fail "--damo-aggr 2500ms"
assert_eq "--damo-aggr 2500ms" "records 1 snapshots 14 regions_max 8 sample_us 1000000 aggr_us 3000000" \
	"$("${DR[@]}" "$T/w3.damo" check)"
assert_eq "the last window: one interval" "1" \
	"$("${DR[@]}" "$T/w3.damo" regions | tail -n 1 | awk '{ split($3, f, ":"); print f[2] }')"
expect 2 "--damo-aggr 100.000 ms is shorter than" "$HVT" export --damo "$T/x.damo" --damo-aggr 100ms "$T/a.hvt"
expect 2 "--damo-max-regions" "$HVT" export --damo "$T/x.damo" --damo-max-regions 0 "$T/a.hvt"
[ ! -e "$T/x.damo" ] || fail "a refused export left its output behind"

# The selection: intervals 19-22 (one window), GFNs from 8 pages before b to 8 pages into it.
"$HVT" export --damo "$T/s.damo" --from 19 --to 22 --range "$((b - 8))-$((b + 7))" "$T/a.hvt" ||
	fail "export --damo with a selection"
assert_eq "selection: regions" "$((b - 8))-$b:0:0 $b-$((b + 8)):2:0" "$("${DR[@]}" "$T/s.damo" regions)"
read -r t0 t1 _ <<<"$("${DR[@]}" "$T/s.damo" snapshots)"
assert_eq "selection: the window's time" "$("$HVT" export --jsonl - --from 19 --to 22 "$T/a.hvt" |
	jq -s -r '"\(.[0].t_start_ns) \(.[-1].t_end_ns)"')" "$t0 $t1"
echo "ok: --damo-aggr, --from/--to/--range, refusals"

# The cap: at most N regions; each page 0's region stays.
"$HVT" export --damo "$T/c.damo" --damo-max-regions 5 "$T/a.hvt" || fail "--damo-max-regions 5"
assert_eq "--damo-max-regions 5" "records 1 snapshots 4 regions_max 5 sample_us 1000000 aggr_us 10000000" \
	"$("${DR[@]}" "$T/c.damo" check)"

# Thousands of runs per interval: the default cap merges, and the working set and the heat stay the trace's.
"$TOOLS/synth_trace" -o "$T/t.hvt" --guest 4G --intervals 300 --runs 4000 --phase 100 || fail "synth_trace"
"$HVT" export --damo "$T/t.damo" "$T/t.hvt" || fail "export --damo of the synth_trace trace"
"${DR[@]}" "$T/t.damo" check >"$T/t.check" || fail "$(cat "$T/t.check")"
read -r _ _ _ snaps _ rmax _ <<<"$(cat "$T/t.check")"
assert_eq "snapshots" 30 "$snaps"
[ "$rmax" -le 1000 ] || fail "$rmax regions in a snapshot, over DAMON's 1000"
"$HVT" report --json --window 10 "$T/t.hvt" >"$T/t.json" || fail "report --json"
jq -r '[.intervals[]] | _nwise(10) | "\(.[-1].window_accessed * 4096) \(map(.accessed) | add)"' "$T/t.json" \
	>"$T/t.want"
"${DR[@]}" "$T/t.damo" snapshots | awk '{ print $4, $5 }' >"$T/t.got"
paste -d ' ' "$T/t.want" "$T/t.got" | awk '
	function err(want, got) { return (got > want ? got - want : want - got) / want }
	{ w = err($1, $3); h = err($2, $4); if (w > mw) mw = w; if (h > mh) mh = h }
	END { printf "  working set off by %.2f %% at most, accesses by %.2f %% (%d snapshots)\n", 100 * mw, 100 * mh, NR
	      exit !(NR == 30 && mw < 0.02 && mh < 0.01) }' || fail "damo's working set or heat differs from report's"
trace=$(stat -c %s "$T/t.hvt") out=$(stat -c %s "$T/t.damo")
echo "  size: trace $trace bytes, --damo $out bytes ($(awk -v a="$out" -v b="$trace" 'BEGIN { printf "%.2f", a / b }') x)"
[ "$out" -le $((10 * trace)) ] || fail "--damo is more than 10 times the trace"
# uncapped, the working set is exact
"$HVT" export --damo "$T/u.damo" --damo-max-regions 10000000 "$T/t.hvt" || fail "export --damo uncapped"
assert_eq "uncapped: working set per window" "$(awk '{ print $1 }' "$T/t.want")" \
	"$("${DR[@]}" "$T/u.damo" snapshots | awk '{ print $4 }')"
echo "ok: at the cap, damo's working set and heat are report's"

# A layout change: fakepeer plugs 4 GiB in at 1 TiB before the 4th harvest and writes its 5th page there.
start_fakepeer "$T/f.sock" hotplug 4G
"$BIN/hvmtrace" record --attach "$T/f.sock" --interval 100ms --duration 1s --max-guest-ram 8G -o "$T/h.hvt" \
	2>"$T/h.err" || fail "record of the hot-plug: $(cat "$T/h.err")"
"$HVT" export --damo "$T/h.damo" --damo-aggr 200ms "$T/h.hvt" || fail "export --damo of the hot-plug"
"${DR[@]}" "$T/h.damo" regions >"$T/h.regions" || fail "$(cat "$T/h.regions")"
assert_eq "the plugged slot, before and after" "0 1" \
	"$(awk '{ print ($0 ~ / 268435456-/) ? 1 : 0 }' "$T/h.regions" | sed -n '1p;$p' | xargs)"
grep -q " 268435460-268435461:1:" "$T/h.regions" || fail "the page written in the plugged slot: $(cat "$T/h.regions")"
echo "ok: a layout change mid-trace"
