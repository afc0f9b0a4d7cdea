#!/bin/bash
# hvmtrace report's analyses and export's forms for other tools, on synthetic traces written through the
# trace writer (tests/tools/synth_trace): text and JSON agree, "not available" is null in mode dirty-log,
# bad input gets one line and exit 2, a torn trace is analysed up to its damage and says so (exit 3), and
# the --damo, --pcm-csv and --raw forms hold what the report counts. The analyses' answers on traces known
# by construction are checked in tests/unit/test_analysis.c.
source "$(dirname "$0")/../lib/assert.bash"
SYN=$TOOLS/synth_trace
command -v jq >/dev/null || skip "needs jq"

"$SYN" -o "$T/ad.hvt" --guest 4G --intervals 40 --runs 300 --phase 10 --bandwidth || fail "synth_trace ad"
"$SYN" -o "$T/dl.hvt" --guest 1G --intervals 20 --runs 100 --mode dirty-log || fail "synth_trace dirty-log"

# Text and JSON give the same figures.
"$HVT" report "$T/ad.hvt" >"$T/ad.txt" || fail "report"
"$HVT" report --json --regions "$T/ad.hvt" >"$T/ad.json" || fail "report --json"
ever=$(jq .totals.pages_ever_written "$T/ad.json")
grep -q "distinct pages ever written      $ever " "$T/ad.txt" || fail "text and JSON differ on pages ever written ($ever)"
assert_eq "intervals in JSON" 40 "$(jq '.intervals | length' "$T/ad.json")"
assert_eq "histogram sums to RAM pages" "$(jq .selection.ram_pages "$T/ad.json")" "$(jq '.write_frequency.histogram | add' "$T/ad.json")"
assert_eq "class pages sum to RAM pages" "$(jq .selection.ram_pages "$T/ad.json")" \
	"$(jq '[.classes.pages[] | select(. != null)] | add' "$T/ad.json")"
assert_eq "2048 hot pages written in every interval are write-heavy, at least" true \
	"$(jq '.classes.pages["write-heavy"] >= 2048' "$T/ad.json")"
echo "ok: text and JSON agree ($ever pages ever written)"

# Selections: an interval range and a GFN range.
"$HVT" report --json --from 5 --to 14 --range 0x0-0x3ffff "$T/ad.hvt" >"$T/sel.json" || fail "report with a selection"
assert_eq "intervals selected" 10 "$(jq .selection.intervals "$T/sel.json")"
assert_eq "pages selected" 262144 "$(jq .selection.pages "$T/sel.json")"
"$HVT" report --json --from 10s --to 20s "$T/ad.hvt" >"$T/time.json" || fail "report with a time range"
assert_eq "intervals in 10s-20s" "11 20" "$(jq -r '"\(.selection.first_seq) \(.selection.last_seq)"' "$T/time.json")"
echo "ok: selections"

# --no-windows: everything but the sliding windows, which are null (said so in the text).
"$HVT" report --json --regions --no-windows "$T/ad.hvt" >"$T/nowin.json" || fail "report --no-windows"
assert_eq "--no-windows: only the windows differ" "$(jq -S 'del(.working_set.window, .working_set.window_written,
	.working_set.window_accessed, .intervals[].window_written, .intervals[].window_accessed)' "$T/ad.json")" \
	"$(jq -S 'del(.working_set.window, .working_set.window_written, .working_set.window_accessed,
	.intervals[].window_written, .intervals[].window_accessed)' "$T/nowin.json")"
assert_eq "--no-windows: windows null" true "$(jq '[.working_set.window, .working_set.window_written,
	.working_set.window_accessed, .intervals[].window_written, .intervals[].window_accessed] | all(. == null)' \
	"$T/nowin.json")"
assert_eq "without --no-windows: windows there" true "$(jq '[.intervals[].window_accessed] | all(. > 0)' "$T/ad.json")"
"$HVT" report --no-windows "$T/ad.hvt" >"$T/nowin.txt" || fail "report --no-windows (text)"
assert_contains "$T/nowin.txt" "sliding windows                  not computed (--no-windows)"
expect 2 "--no-windows leaves out" "$HVT" report --window 3 --no-windows "$T/ad.hvt"
echo "ok: --no-windows"

# Mode dirty-log: accessed figures are null, never 0.
"$HVT" report --json "$T/dl.hvt" >"$T/dl.json" || fail "report of the dirty-log trace"
assert_eq "accessed per interval" true "$(jq '[.intervals[].accessed] | all(. == null)' "$T/dl.json")"
assert_eq "accessed working set" null "$(jq .working_set.accessed "$T/dl.json")"
assert_eq "read-mostly" null "$(jq '.classes.pages["read-mostly"]' "$T/dl.json")"
assert_eq "accessed phases" null "$(jq .phases.accessed "$T/dl.json")"
"$HVT" report "$T/dl.hvt" >"$T/dl.txt" || fail "report (text) of the dirty-log trace"
assert_contains "$T/dl.txt" "accessed                         not available (mode dirty-log"
echo "ok: dirty-log says not available"

# Bad input: one line, exit 2.
"$SYN" -o "$T/empty.hvt" --intervals 0 || fail "synth_trace empty"
expect 2 "holds no intervals" "$HVT" report "$T/empty.hvt"
expect 2 "outside the guest's RAM" "$HVT" report --range 0x10000000-0x10000010 "$T/ad.hvt"
expect 2 "select no interval" "$HVT" report --from 1000s "$T/ad.hvt"
expect 2 "neither an interval number nor a time" "$HVT" report --from 3x "$T/ad.hvt"
expect 2 "cannot create" "$HVT" report -o /nonexistent-dir/r.txt "$T/ad.hvt"
expect 2 "--pcm-csv needs bandwidth" "$HVT" export --pcm-csv "$T/p.csv" "$T/dl.hvt"
[ ! -e "$T/p.csv" ] || fail "export --pcm-csv created its output before refusing"
[ "$(wc -l <"$T/err")" = 1 ] || fail "more than one line: $(cat "$T/err")"

# A torn trace: analysed up to the damage, and the output says so.
"$SYN" -o "$T/torn.hvt" --guest 1G --intervals 12 --runs 50 --torn || fail "synth_trace torn"
expect 3 "incomplete trace" "$HVT" report "$T/torn.hvt"
assert_contains "$T/out" "INCOMPLETE TRACE"
assert_contains "$T/out" "intervals                        11 "
"$HVT" report --json "$T/torn.hvt" >"$T/torn.json" 2>/dev/null
assert_eq "torn: complete" false "$(jq .trace.complete "$T/torn.json")"
assert_eq "torn: intervals" 11 "$(jq .selection.intervals "$T/torn.json")"

# --damo, a window per interval and no cap: damo's record format holds (tests/tools/damo_record.py), and the
# touched bytes of each snapshot are the interval's accessed pages (export_damo.sh checks the rest).
"$HVT" export --damo "$T/d.damo" --damo-aggr 1s --damo-max-regions 100000000 "$T/ad.hvt" || fail "export --damo"
python3 "$ROOT/tests/tools/damo_record.py" "$T/d.damo" snapshots >"$T/d.snap" || fail "$(cat "$T/d.snap")"
assert_eq "--damo touched pages per interval" "$(jq -r '.intervals[].accessed' "$T/ad.json")" \
	"$(awk '{ print $4 / 4096 }' "$T/d.snap")"
echo "ok: --damo ($(wc -l <"$T/d.snap") snapshots)"

# --pcm-csv: two header rows, a row per interval, Memory = Read + Write, MB = 10^6 bytes.
"$HVT" export --pcm-csv "$T/p.csv" "$T/ad.hvt" || fail "export --pcm-csv"
assert_eq "header 1" ",,SKT0,SKT0,SKT0,SKT0,SKT0,SKT0,SKT0,System,System,System" "$(sed -n 1p "$T/p.csv")"
assert_eq "header 2" "Date,Time,Ch0Read,Ch0Write,Ch1Read,Ch1Write,Mem Read (MB/s),Mem Write (MB/s),Memory (MB/s),Read,Write,Memory" "$(sed -n 2p "$T/p.csv")"
assert_eq "rows" 42 "$(wc -l <"$T/p.csv")"
want=$(jq -r '.intervals[0] | ((.read_bytes + .write_bytes) / 1e6 | . * 100 | round / 100)' "$T/ad.json")
got=$(sed -n 3p "$T/p.csv" | awk -F, '{ printf "%g", $NF + 0 }')
awk -v a="$want" -v b="$got" 'BEGIN { exit !((a - b) < 0.02 && (b - a) < 0.02) }' || fail "first row's Memory $got MB/s, the trace's bytes give $want"
echo "ok: --pcm-csv"

# --raw: the bitmaps hold the report's written and accessed counts.
"$HVT" export --raw "$T/r.raw" "$T/ad.hvt" || fail "export --raw"
python3 - "$T/r.raw" >"$T/raw.counts" <<'PY' || fail "reading --raw"
import struct, sys
b = open(sys.argv[1], 'rb').read()
assert b[:8] == b'HVTRAW1\n'
o = 8
while o < len(b):
    seq, ts, te, kinds, nslots = struct.unpack_from('<QQQII', b, o); o += 32
    npages = []
    for _ in range(nslots):
        gfn, n = struct.unpack_from('<QQ', b, o); o += 16; npages.append(n)
    counts = []
    for k in (1, 2):
        if kinds & k:
            c = 0
            for n in npages:
                w = (n + 63) // 64
                c += sum(bin(x).count('1') for x in struct.unpack_from('<%dQ' % w, b, o)); o += 8 * w
            counts.append(str(c))
    print(seq, *counts)
PY
jq -r '.intervals[] | "\(.seq) \(.written) \(.accessed)"' "$T/ad.json" >"$T/raw.want"
cmp -s "$T/raw.want" "$T/raw.counts" || { diff "$T/raw.want" "$T/raw.counts" | head; fail "--raw bitmaps differ from the report"; }
echo "ok: --raw"
echo "report_analyses: all checks passed"
