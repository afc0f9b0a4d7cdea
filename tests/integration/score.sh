#!/bin/bash
# hvmtrace score (docs/score.md): a DAMON record against the trace's exact sets, each figure checked
# against tests/tools/score_expect.py, which computes it page by page with Python sets from the trace's own
# CSV exports, apart from score's code:
#  - the round trip: the trace's own export --damo (uncapped, so its regions are exact pages) scores
#    precision, recall and hot overlap 1 and WSS error 0, on its own clock (--record-clock trace) and on
#    the record's (the default); at DAMON's cap of 1,000 regions, on random pages, what the merges cost;
#  - hvmtrace-damon 1 records with known misses and false hits, and one moved by --offset;
#  - a dirty-log trace: written pages only, precision not known;
#  - --sample, the sampling tracker made from the trace's own sets: exact when it looks at every page,
#    every:N and random:F:SEED against the same model in Python;
#  - a trace recorded from tests/tools/fakepeer whose layout changes mid-trace (a slot plugged in at 1 TiB):
#    its own export is exact there too, and the plugged slot is RAM;
#  - the refusals: a record of another run (no overlap), regions outside the guest's RAM, bad lines, bad
#    JSON, each one line naming the file and the line or the snapshot.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
command -v python3 >/dev/null || skip "needs python3"
EXPECT=(python3 "$ROOT/tests/tools/score_expect.py")

# what score --json says, in score_expect.py's lines
said() {
	python3 -c '
import json, sys
o = json.load(sys.stdin)
f = lambda v: "null" if v is None else "%.6f" % v
for w in o["windows"]:
    print(w["snapshot"], w["intervals"], w["damon_pages"], w["true_pages"], w["both_pages"], w["hot_k"], w["hot_both"])
a = o["overall"]
print("overall", f(a["precision"]), f(a["recall"]), f(a["hot_overlap"]), f(a["wss_error"]))'
}

# check NAME TRACE RECORD KIND HOT CLOCK OFFSET_NS [score options]: score's figures are the expected ones
check() {
	local name=$1 trace=$2 record=$3 kind=$4 hot=$5 clock=$6 offset=$7
	shift 7
	"$HVT" export --csv "$T/iv.csv" --csv-pages "$T/pages.csv" "$trace" || fail "$name: export --csv"
	"${EXPECT[@]}" "$T/iv.csv" "$T/pages.csv" "$record" "$kind" "$hot" "$clock" "$offset" >"$T/want" ||
		fail "$name: score_expect.py"
	"$HVT" score "$trace" --damon "$record" --json --hot "$hot" --record-clock "$clock" "$@" >"$T/score.json" ||
		fail "$name: score exited $?"
	said <"$T/score.json" >"$T/got" || fail "$name: score's JSON"
	assert_eq "$name" "$(cat "$T/want")" "$(cat "$T/got")"
	echo "ok: $name: $(tail -n 1 "$T/got")"
}

# a read and c written in every interval, b read from interval 21, 1 s intervals; 20 random pages written
# and 30 read in each
"$TOOLS/synth_arrays" -o "$T/a.hvt" --memory 512M --intervals 40 --noise-written 20 --noise-accessed 30 \
	>"$T/truth" || fail "synth_arrays"
read -r _ _ a n <<<"$(grep '^array a' "$T/truth")"
read -r _ _ b _ <<<"$(grep '^array b' "$T/truth")"
read -r _ _ c _ <<<"$(grep '^array c' "$T/truth")"
a=$((a)) b=$((b)) c=$((c)) n=$((n))

# ---- the round trip ----
"$HVT" export --damo "$T/exact.damo" --damo-max-regions 100000 "$T/a.hvt" || fail "export --damo"
for clock in trace record; do
	check "round trip, --record-clock $clock" "$T/a.hvt" "$T/exact.damo" accessed 10 "$clock" 0
	assert_eq "round trip, --record-clock $clock: overall" "overall 1.000000 1.000000 1.000000 0.000000" \
		"$(tail -n 1 "$T/got")"
done
"$HVT" score "$T/a.hvt" --damon "$T/exact.damo" >"$T/text" || fail "score, text"
assert_contains "$T/text" "against $T/exact.damo (damo json_compressed, 4 snapshots)" \
	"overall: 4 of 4 snapshots scored, 40 of 40 intervals in a window" \
	"precision 1.0000  recall 1.0000  hot-10% overlap 1.0000  WSS error +0.0000"
# plain JSON (damo's json format) reads the same
python3 -c 'import sys, zlib; sys.stdout.buffer.write(zlib.decompress(open(sys.argv[1], "rb").read()))' \
	"$T/exact.damo" >"$T/exact.json"
"$HVT" score "$T/a.hvt" --damon "$T/exact.json" >"$T/text2" || fail "score, plain JSON"
assert_contains "$T/text2" "(damo json, 4 snapshots)" "precision 1.0000  recall 1.0000"
# DAMON's cap merges the random pages into their neighbours: precision falls, recall stays near 1
"$HVT" export --damo "$T/capped.damo" --damo-max-regions 50 "$T/a.hvt" || fail "export --damo, capped"
check "export --damo-max-regions 50" "$T/a.hvt" "$T/capped.damo" accessed 25 trace 0
[ "$(tail -n 1 "$T/got")" != "overall 1.000000 1.000000 1.000000 0.000000" ] ||
	fail "a record capped at 50 regions scored as exact"

# ---- known misses and false hits, on a clock of the guest's own ----
# windows of 10 s ending at guest times G+10 s ... G+40 s: a with nr_accesses 10, the first half of c with
# 5 (the second half missed), 100 pages past c that nobody touched with 1 (false hits), and in the
# windows of the add phase b's first quarter with 3
G=5000000000
{
	echo "hvmtrace-damon 1"
	echo "# written by score.sh"
	echo "aggr_us 10000000"
	for w in 1 2 3 4; do
		t=$((G + w * 10000000000))
		echo "$t $((a * 4096)) $(((a + n) * 4096)) 10"
		[ "$w" -le 2 ] || echo "$t $((b * 4096)) $(((b + n / 4) * 4096)) 3"
		echo "$t $((c * 4096)) $(((c + n / 2) * 4096)) 5"
		echo "$t $(((c + n / 2) * 4096)) $(((c + n) * 4096)) 0"
		echo "$t $(((c + n) * 4096)) $(((c + n + 100) * 4096)) 1"
	done
} >"$T/wrong.txt"
check "misses and false hits" "$T/a.hvt" "$T/wrong.txt" accessed 10 record 0
# the windows must be the ones meant (the figures are not only equal, they are these)
assert_eq "window 0: DAMON's pages" "$((n + n / 2 + 100))" "$(sed -n 1p "$T/got" | cut -d' ' -f3)"
check "misses and false hits, --offset 3s" "$T/a.hvt" "$T/wrong.txt" accessed 10 record 3000000000 --offset 3s
check "misses and false hits, --offset -2500ms, --hot 50" "$T/a.hvt" "$T/wrong.txt" accessed 50 record \
	-2500000000 --offset -2500ms
# without aggr_us: a window starts at the previous snapshot's time, the first as long as the second
grep -v '^aggr_us' "$T/wrong.txt" >"$T/wrong-noaggr.txt"
check "no aggr_us line" "$T/a.hvt" "$T/wrong-noaggr.txt" accessed 10 record 0

# ---- --sample: a sampling tracker made from the trace's sets ----
# check_sample NAME TRACE KIND SPEC WINDOW HOT: score --sample SPEC --window WINDOW is the model's
check_sample() {
	local name=$1 trace=$2 kind=$3 spec=$4 window=$5 hot=$6
	"$HVT" export --csv "$T/iv.csv" --csv-pages "$T/pages.csv" "$trace" || fail "$name: export --csv"
	"${EXPECT[@]}" "$T/iv.csv" "$T/pages.csv" "sample:$spec:$window:131072" "$kind" "$hot" trace 0 >"$T/want" ||
		fail "$name: score_expect.py"
	"$HVT" score "$trace" --sample "$spec" --window "$window" --hot "$hot" --json >"$T/score.json" ||
		fail "$name: score exited $?"
	said <"$T/score.json" >"$T/got" || fail "$name: score's JSON"
	assert_eq "$name" "$(cat "$T/want")" "$(cat "$T/got")"
	echo "ok: $name: $(tail -n 1 "$T/got")"
}
for spec in every:1 random:1; do
	check_sample "--sample $spec" "$T/a.hvt" accessed "$spec" 10 10
	assert_eq "--sample $spec: exact" "overall 1.000000 1.000000 1.000000 0.000000" "$(tail -n 1 "$T/got")"
done
check_sample "--sample every:64 --window 7" "$T/a.hvt" accessed every:64 7 10
check_sample "--sample random:0.01:7 --window 10 --hot 30" "$T/a.hvt" accessed random:0.01:7 10 30
check_sample "--sample random:0.25:3 --window 3" "$T/a.hvt" accessed random:0.25:3 3 10
[ "$(tail -n 1 "$T/got")" != "overall 1.000000 1.000000 1.000000 0.000000" ] || fail "sampling a page in 4 scored as exact"
"$HVT" score "$T/a.hvt" --sample every:16 >"$T/text4" || fail "score --sample, text"
assert_contains "$T/text4" "against sampling the first page of every 16, windows of 10 intervals" \
	"overall: 4 of 4 windows scored" "pages: sampled"
expect 2 "--sample 'random:2': not every:N (N >= 1) or random:F[:SEED] (0 < F <= 1)" \
	"$HVT" score "$T/a.hvt" --sample random:2
expect 2 "give --damon RECORD, --sample SPEC or --dirty-rate FILE (one of them)" \
	"$HVT" score "$T/a.hvt" --sample every:2 --damon "$T/exact.damo"

# ---- a dirty-log trace: written pages only ----
"$TOOLS/synth_arrays" -o "$T/d.hvt" --mode dirty-log --memory 512M --intervals 40 --noise-written 20 \
	>/dev/null || fail "synth_arrays --mode dirty-log"
check "dirty-log trace" "$T/d.hvt" "$T/wrong.txt" written 10 record 0
assert_eq "dirty-log: no precision" "null" "$(tail -n 1 "$T/got" | cut -d' ' -f2)"
"$HVT" score "$T/d.hvt" --damon "$T/wrong.txt" >"$T/text3" || fail "score, dirty-log"
assert_contains "$T/text3" "(written pages)" "a dirty-log trace knows written pages only" "precision -"

# ---- a recorded trace whose layout changes: fakepeer plugs 4 GiB in at 1 TiB before the 4th harvest ----
start_fakepeer "$T/f.sock" hotplug 4G
"$BIN/hvmtrace" record --attach "$T/f.sock" --interval 100ms --duration 1s --max-guest-ram 8G -o "$T/h.hvt" \
	2>"$T/h.err" || fail "record of the hot-plug: $(cat "$T/h.err")"
"$HVT" export --damo "$T/h.damo" --damo-aggr 200ms "$T/h.hvt" || fail "export --damo of the hot-plug"
check "hot-plug round trip" "$T/h.hvt" "$T/h.damo" written 10 trace 0
assert_eq "hot-plug round trip: recall" "1.000000" "$(tail -n 1 "$T/got" | cut -d' ' -f3)"
{ echo "hvmtrace-damon 1"; echo "aggr_us 100000"; echo "100000000 $((1 << 40)) $(((1 << 40) + 4096)) 1"; } >"$T/plugged.txt"
"$HVT" score "$T/h.hvt" --damon "$T/plugged.txt" >/dev/null || fail "a region in the plugged slot was refused"
{ echo "hvmtrace-damon 1"; echo "aggr_us 100000"; echo "100000000 $(((1 << 40) + (4 << 30))) $(((1 << 40) + (4 << 30) + 4096)) 1"; } >"$T/past.txt"
expect 2 "$T/past.txt line 3: region 0x10100000000-0x10100001000 is outside the guest's RAM" \
	"$HVT" score "$T/h.hvt" --damon "$T/past.txt"

# ---- refusals ----
expect 2 "do not overlap $T/a.hvt (0 to 40.000 s): a record of another run" \
	"$HVT" score "$T/a.hvt" --damon "$T/wrong.txt" --offset 100s
expect 2 "do not overlap" "$HVT" score "$T/a.hvt" --damon "$T/exact.damo" --record-clock trace --offset -1h
{ echo "hvmtrace-damon 1"; echo "aggr_us 1000"; echo "100 0x1000 0x2000 1"; echo "100 0x20000000 0x20001000 1"; } >"$T/out-of-ram.txt"
expect 2 "$T/out-of-ram.txt line 4: region 0x20000000-0x20001000 is outside the guest's RAM (0x0-0x20000000)" \
	"$HVT" score "$T/a.hvt" --damon "$T/out-of-ram.txt"
{ echo "hvmtrace-damon 1"; echo "aggr_us 1000"; echo "100 0x1000 0x1800 1"; } >"$T/unaligned.txt"
expect 2 "$T/unaligned.txt line 3: region 0x1000-0x1800 is not whole pages of 4096 bytes" \
	"$HVT" score "$T/a.hvt" --damon "$T/unaligned.txt"
{ echo "hvmtrace-damon 1"; echo "100 0x1000 0x2000 1"; echo "100 0x1000 zz 1"; } >"$T/junk.txt"
expect 2 "$T/junk.txt line 3: not a region (TIME_NS START END NR_ACCESSES" \
	"$HVT" score "$T/a.hvt" --damon "$T/junk.txt"
{ echo "hvmtrace-damon 1"; echo "100 0x1000 0x3000 1"; echo "100 0x2000 0x4000 1"; } >"$T/overlap.txt"
expect 2 "$T/overlap.txt line 3: region 0x2000-0x4000 overlaps or comes before the region before it" \
	"$HVT" score "$T/a.hvt" --damon "$T/overlap.txt"
{ echo "hvmtrace-damon 1"; echo "200 0x1000 0x3000 1"; echo "100 0x4000 0x5000 1"; } >"$T/back.txt"
expect 2 "$T/back.txt line 3: time 100 comes before the previous snapshot's 200" \
	"$HVT" score "$T/a.hvt" --damon "$T/back.txt"
{ echo "hvmtrace-damon 1"; echo "100 0x1000 0x3000 1"; } >"$T/lone.txt"
expect 2 "$T/lone.txt: one snapshot and no aggr_us line" "$HVT" score "$T/a.hvt" --damon "$T/lone.txt"
{ echo "hvmtrace-damon 1"; echo "aggr_us 1000"; echo "0 0x1000 0x2000 1"; } >"$T/zero.txt"
expect 2 "$T/zero.txt line 3: time 0 leaves its window empty" "$HVT" score "$T/a.hvt" --damon "$T/zero.txt"
echo "damon 1" >"$T/header.txt"
expect 2 "$T/header.txt line 1: not a DAMON record (\"hvmtrace-damon 1\" expected)" \
	"$HVT" score "$T/a.hvt" --damon "$T/header.txt"
echo '[{"snapshots": [{"start_time": 0, "end_time": 10, "regions": [{"start": 4096, "end": "x", "nr_accesses": 1}]}]}]' >"$T/bad.json"
expect 2 "$T/bad.json: record[0]: snapshots[0]: regions[0]: \"end\"" "$HVT" score "$T/a.hvt" --damon "$T/bad.json"
printf '[{"snapshots": [\n{"start_time": 0,\n "end_time": 10 "regions": []}]}]' >"$T/syntax.json"
expect 2 "$T/syntax.json line 3: not damo's JSON" "$HVT" score "$T/a.hvt" --damon "$T/syntax.json"
echo '[{"snapshots": []}, {"snapshots": []}]' >"$T/two.json"
expect 2 "$T/two.json: 2 records (monitoring targets)" "$HVT" score "$T/a.hvt" --damon "$T/two.json"
printf 'x\234junk' >"$T/z.bin"
expect 2 "$T/z.bin: a zlib stream (damo's json_compressed) that does not decompress" \
	"$HVT" score "$T/a.hvt" --damon "$T/z.bin"
expect 2 "give --damon RECORD, --sample SPEC or --dirty-rate FILE" "$HVT" score "$T/a.hvt"
expect 2 "--record-clock and --offset are for --damon's record" "$HVT" score "$T/a.hvt" --sample every:2 --offset 1s
expect 2 "--window is for --sample" "$HVT" score "$T/a.hvt" --damon "$T/exact.damo" --window 3
expect 2 "--offset" "$HVT" score "$T/a.hvt" --damon "$T/wrong.txt" --offset 3parsecs
echo "ok: score"
