#!/bin/bash
# hvmtrace export of a selection (--from/--to/--range, the grammar report and plot take, docs/formats.md):
# on a synthetic trace whose pages are known by construction (tests/tools/synth_arrays: arrays a, b, c;
# copy phase, seqs 1-10: c written, a read; add phase, seqs 11-20: c written, a and b read), every form holds
# only the selected intervals, and its page runs and counts cut exactly to the range, while bandwidth stays
# the VM's; report --json of the same selection counts the same pages. Bad selections: one line, exit 2,
# nothing left behind.
source "$(dirname "$0")/../lib/assert.bash"
command -v jq >/dev/null || skip "needs jq"
command -v python3 >/dev/null || skip "needs python3"

"$TOOLS/synth_arrays" -o "$T/s.hvt" --memory 512M --intervals 20 --noise-written 0 --noise-accessed 0 \
	--channels 2 >"$T/truth" || fail "synth_arrays"
read -r _ _ a_first n <<<"$(grep '^array a' "$T/truth")"
read -r _ _ b_first _ <<<"$(grep '^array b' "$T/truth")"
read -r _ _ c_first _ <<<"$(grep '^array c' "$T/truth")"
a_last=$((a_first + n - 1)) b_first=$((b_first)) c_first=$((c_first))
"$HVT" export --jsonl "$T/all.jsonl" "$T/s.hvt" || fail "export of the whole trace"

# Seqs 9-12 (both phases) and GFNs c-4 .. c+3: the last 4 pages before c (nothing) and c's first 4.
lo=$((c_first - 4)) hi=$((c_first + 3))
sel=(--from 9 --to 12 --range "$lo-$hi")
"$HVT" export --jsonl "$T/sel.jsonl" "${sel[@]}" "$T/s.hvt" || fail "export --jsonl ${sel[*]}"
assert_eq "seqs" "9 10 11 12" "$(jq -r .seq "$T/sel.jsonl" | xargs)"
for k in written accessed; do
	assert_eq "$k runs, cut to the range" "[[$c_first,4]]" "$(jq -c ".$k" "$T/sel.jsonl" | sort -u)"
	assert_eq "${k}_pages" 4 "$(jq ".${k}_pages" "$T/sel.jsonl" | sort -u)"
	assert_eq "${k}_bytes" 16384 "$(jq ".${k}_bytes" "$T/sel.jsonl" | sort -u)"
done
bw='[.seq, .read_bytes, .write_bytes, .total_bytes, .channels]'
assert_eq "bandwidth: the VM's" "$(jq -c "select(.seq >= 9 and .seq <= 12) | $bw" "$T/all.jsonl")" \
	"$(jq -c "$bw" "$T/sel.jsonl")"
"$HVT" report --json "${sel[@]}" "$T/s.hvt" >"$T/sel.json" || fail "report --json ${sel[*]}"
assert_eq "report counts the same pages" "$(jq -c '[.intervals[].written]' "$T/sel.json")" \
	"$(jq -s -c '[.[].written_pages]' "$T/sel.jsonl")"

# A range across the end of a and the start of b: a's two pages read in both phases, b's only in the add
# phase; nothing written. A time selection: the intervals overlapping [8.5 s, 10.5 s) are seqs 9-11.
"$HVT" export --jsonl - --from 8.5s --to 10.5s --range "0x$(printf %x $((a_last - 1)))-$((b_first + 1))" \
	"$T/s.hvt" >"$T/ab.jsonl" 2>"$T/err" || fail "export across a and b: $(cat "$T/err")"
assert_eq "seqs of 8.5s-10.5s" "9 10 11" "$(jq -r .seq "$T/ab.jsonl" | xargs)"
assert_eq "written" "[] [] []" "$(jq -c .written "$T/ab.jsonl" | xargs)"
assert_eq "accessed" "[[$((a_last - 1)),2]] [[$((a_last - 1)),2]] [[$((a_last - 1)),2],[$b_first,2]]" \
	"$(jq -c .accessed "$T/ab.jsonl" | xargs)"
"$HVT" export --jsonl - --from 0s "$T/s.hvt" | cmp -s - "$T/all.jsonl" || fail "--from 0s is not the whole trace"

# CSV: the rows of the selected intervals, counts cut; the page runs cut.
"$HVT" export --csv - --csv-pages "$T/pages.csv" "${sel[@]}" "$T/s.hvt" >"$T/sel.csv" || fail "export --csv"
assert_eq "csv: seq,written_pages,accessed_pages" "9,4,4 10,4,4 11,4,4 12,4,4" \
	"$(awk -F, 'NR > 1 {print $1 "," $10 "," $12}' "$T/sel.csv" | xargs)"
want=$(for s in 9 10 11 12; do echo "$s,written,$c_first,4 $s,accessed,$c_first,4"; done | xargs)
assert_eq "csv-pages" "$want" "$(tail -n +2 "$T/pages.csv" | xargs)"

# pcm-memory's CSV: a row per selected interval after its two header rows.
"$HVT" export --pcm-csv - "${sel[@]}" "$T/s.hvt" >"$T/sel.pcm" || fail "export --pcm-csv"
assert_eq "pcm-csv rows" 6 "$(wc -l <"$T/sel.pcm")"

# damo: one window of the 4 intervals; the regions tile the range (its 8 pages), not the slot: before c
# untouched, c's 4 pages touched in all 4 intervals.
"$HVT" export --damo "$T/sel.damo" "${sel[@]}" "$T/s.hvt" || fail "export --damo"
assert_eq "damo regions (first-end:nr_accesses:age)" "$lo-$c_first:0:0 $c_first-$((hi + 1)):4:0" \
	"$(python3 "$ROOT/tests/tools/damo_record.py" "$T/sel.damo" regions)"

# raw: one slot, the range, and its bitmaps: bits 4-7 (c's first 4 pages) written and accessed.
"$HVT" export --raw "$T/sel.raw" "${sel[@]}" "$T/s.hvt" || fail "export --raw"
python3 - "$T/sel.raw" "$lo" <<'EOF' >"$T/raw.txt" || fail "export --raw: $(cat "$T/raw.txt")"
import struct, sys
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"HVTRAW1\n", d[:8]
at, out = 8, []
while at < len(d):
    seq, _, _, kinds, nslots = struct.unpack_from("<QQQII", d, at)
    at += 32
    slots = [struct.unpack_from("<QQ", d, at + 16 * i) for i in range(nslots)]
    at += 16 * nslots
    words = []
    for k in (1, 2):
        if kinds & k:
            for first, npages in slots:
                nw = (npages + 63) // 64
                words += list(struct.unpack_from("<%dQ" % nw, d, at))
                at += 8 * nw
    out.append("%d:%s:%s" % (seq, ",".join("%d+%d" % (f - int(sys.argv[2]), p) for f, p in slots),
                             ",".join("%x" % w for w in words)))
print(" ".join(out))
EOF
assert_eq "raw: seq:slots:words" "9:0+8:f0,f0 10:0+8:f0,f0 11:0+8:f0,f0 12:0+8:f0,f0" "$(cat "$T/raw.txt")"
echo "ok: every form of export holds the selection, cut to the range"

# Bad selections: one line, exit 2, no output left behind.
expect 2 "lies outside the guest's RAM" "$HVT" export --jsonl "$T/x.jsonl" --range 0x10000000-0x10000fff "$T/s.hvt"
expect 2 "--from/--to select no interval: the trace covers 0-20.000 s, intervals 1-20" \
	"$HVT" export --jsonl "$T/x.jsonl" --csv "$T/x.csv" --from 30 "$T/s.hvt"
expect 2 "is not GFN-GFN with first <= last" "$HVT" export --range 5-2 "$T/s.hvt"
expect 2 "is neither an interval number nor a time" "$HVT" export --to 1.5 "$T/s.hvt"
[ ! -e "$T/x.jsonl" ] && [ ! -e "$T/x.csv" ] || fail "a refused export left its output behind"
# An empty trace without a selection is still exported (nothing), as before.
"$TOOLS/synth_arrays" -o "$T/empty.hvt" --intervals 0 >/dev/null || fail "synth_arrays --intervals 0"
"$HVT" export --jsonl "$T/empty.jsonl" "$T/empty.hvt" || fail "export of an empty trace"
[ ! -s "$T/empty.jsonl" ] || fail "export of an empty trace wrote intervals"

# A torn trace: a selection before the damage is exported whole, and the trace still said incomplete.
size=$(stat -c %s "$T/s.hvt")
head -c $((size / 2)) "$T/s.hvt" >"$T/torn.hvt"
rc=0
"$HVT" export --jsonl "$T/torn.jsonl" --from 2 --to 3 "$T/torn.hvt" 2>"$T/err" || rc=$?
assert_eq "exit status of export of a torn trace" 3 "$rc"
assert_contains "$T/err" "incomplete trace"
assert_eq "seqs of the torn trace" "2 3" "$(jq -r .seq "$T/torn.jsonl" | xargs)"
echo "ok: bad selections refused, a torn trace's selection exported"
