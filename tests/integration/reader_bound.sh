#!/bin/bash
# A reader's cost follows the file, not the RAM it declares (issue 13, item 8): a trace of 2 KB whose layout
# declares a 32 TiB slot (tests/tools/huge_slot_trace) is exported in every form, scored against its own
# DAMON export, plotted and turned into HTML, each within 64 MiB of resident memory (tests/tools/maxrss). Decoded sets used to be bitmaps of the
# slot: 1 GiB per set, 2 GB resident and 10-50 s per export of this file. The content is checked too: the
# runs at both ends of the huge slot, the page counts, and the raw bitmaps' size and bits (export --raw's
# output is a bit per page by definition; it is written as it goes, in bounded memory).
source "$(dirname "$0")/../lib/assert.bash"
TR=$T/huge.hvt
LIMIT_KB=65536

"$TOOLS/huge_slot_trace" -o "$TR" --intervals 2 || fail "cannot write the trace"
[ "$(stat -c %s "$TR")" -lt 4096 ] || fail "the trace is not small: $(stat -c %s "$TR") bytes"

for form in jsonl csv csv-pages damo pcm-csv; do
	bounded "$form" "$HVT" export --"$form" "$T/out.$form" "$TR"
done
# score against its own DAMON export: regions across the huge slot, the truth in runs (docs/score.md)
bounded score "$HVT" score --damon "$T/out.damo" --record-clock trace "$TR"
assert_contains "$T/score.out" "precision 1.0000  recall 1.0000"
bounded score-sample "$HVT" score --sample random:0.001 "$TR"
# raw goes through a pipe (4 GiB: a bit per page), counted and sampled on the way, never stored
"$TOOLS/maxrss" "$T/raw.rss" "$HVT" export --raw - "$TR" 2>"$T/err" | python3 -c '
import sys
at, want, got = 0, int(sys.argv[1]), b""
while True:
    b = sys.stdin.buffer.read(1 << 20)
    if not b:
        break
    if at <= want < at + len(b):
        got = b[want - at:want - at + 8]
    at += len(b)
print(at, got[::-1].hex())' $((8 + 64 + ((1 << 33) / 64 - 1) * 8)) >"$T/raw.sum"
[ "${PIPESTATUS[0]}" = 0 ] || fail "export --raw failed: $(cat "$T/err")"
[ "$(cat "$T/raw.rss")" -le $LIMIT_KB ] || fail "export --raw used $(cat "$T/raw.rss") KiB resident"
echo "  raw: $(cat "$T/raw.rss") KiB"
bounded html "$HVT" report --html "$T/r.html" "$TR"
for p in heatmap bw wss cdf; do
	bounded "plot-$p" "$HVT" plot "$p" -o "$T/$p.png" "$TR"
	[ -s "$T/$p.png" ] || fail "plot $p wrote nothing"
done

# The big slot: GFN 0x100000 (4 GiB) on, 2^33 pages. Interval k (0, 1) wrote pages k..k+2, 2^32 + 4096k
# (17 pages), 2^31 (2^20 pages) and the last page but k, and the same in the 64 MiB slot at GFN 0.
big=$((1 << 20)) np=$((1 << 33))
for k in 0 1; do
	line=$(sed -n "$((k + 1))p" "$T/out.jsonl")
	for run in "[$((big + k)),3]" "[$((big + np / 4)),1048576]" "[$((big + np / 2 + 4096 * k)),17]" \
		"[$((big + np - 1 - k)),1]" "[$k,3]" "[$((16384 - 1 - k)),1]"; do
		case "$line" in *"$run"*) ;; *) fail "interval $k: run $run missing from the JSON line" ;; esac
	done
	case "$line" in *"\"written_pages\":$((2 * (3 + 17 + 1) + 1048576))"*) ;;
	*) fail "interval $k: wrong written_pages: ${line:0:300}" ;; esac
done
grep -q "^1,written,$((big + np - 1)),1$" "$T/out.csv-pages" || fail "csv-pages lacks the big slot's last page"
[ "$(sed -n 1p "$T/out.csv-pages")" = "seq,kind,first_gfn,count" ] || fail "csv-pages header"
# the big slot is listed first in the layout, so its rows come first, as they always have
[ "$(sed -n 2p "$T/out.csv-pages")" = "1,written,$big,3" ] || fail "csv-pages: slot order changed"

# raw: magic, then per interval 64 bytes of header and slots, and per kind the bitmaps of both slots;
# interval 0's written bitmap of the big slot ends with the word of its last page (bit 63)
words=$((np / 64 + 16384 / 64))
want="$((8 + 2 * (64 + 2 * words * 8))) 8000000000000000"
[ "$(cat "$T/raw.sum")" = "$want" ] || fail "export --raw: $(cat "$T/raw.sum") (bytes, last word), not $want"

echo "ok: a $(stat -c %s "$TR")-byte trace declaring 32 TiB read by 6 exports, score, 4 plots and the HTML report, each under $((LIMIT_KB / 1024)) MiB"
