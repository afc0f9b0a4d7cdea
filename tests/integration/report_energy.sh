#!/bin/bash
# hvmtrace report --energy and --energy-model on synthetic traces written through the trace writer
# (tests/tools/synth_trace): the bytes it prices are the trace's, the joules follow from the model's figures
# (worked out here with jq), the placement keeps the report's write-heavy pages in DRAM, a model file
# overrides what it names, a trace without bandwidth says its bytes are modelled, and bad input gets one
# line and exit 2. The apportionment's answers on traces known by construction are in tests/unit/test_energy.c.
source "$(dirname "$0")/../lib/assert.bash"
SYN=$TOOLS/synth_trace
command -v jq >/dev/null || skip "needs jq"

"$SYN" -o "$T/ad.hvt" --guest 1G --intervals 20 --runs 200 --phase 5 --bandwidth || fail "synth_trace ad"
"$SYN" -o "$T/dl.hvt" --guest 1G --intervals 12 --runs 100 --mode dirty-log || fail "synth_trace dirty-log"

# Measured bytes: the what-if prices exactly the trace's read and write bytes.
"$HVT" report --json --energy "$T/ad.hvt" >"$T/ad.json" || fail "report --json --energy"
assert_eq "bytes source" measured "$(jq -r .energy.bytes.source "$T/ad.json")"
assert_eq "read bytes" "$(jq .totals.read_bytes "$T/ad.json")" "$(jq '.energy.bytes.read | floor' "$T/ad.json")"
assert_eq "write bytes" "$(jq .totals.write_bytes "$T/ad.json")" "$(jq '.energy.bytes.write | floor' "$T/ad.json")"
assert_eq "capacity" "$(jq '.selection.ram_pages * 4096' "$T/ad.json")" "$(jq '.energy.capacity_bytes | floor' "$T/ad.json")"
assert_eq "DRAM pages of the placement = write-heavy pages" "$(jq '.classes.pages["write-heavy"]' "$T/ad.json")" \
	"$(jq .energy.placement.dram_pages "$T/ad.json")"
assert_eq "is labelled a model" "true true" "$(jq -r '"\(.energy.is_model) \(.energy.placement.is_estimate)"' "$T/ad.json")"

# Each technology's joules: bytes x pJ/B + mW/GiB x GiB x s, from the figures the output itself states.
check_joules='.energy as $e | [("dram", "mram", "pcm") as $t | $e.model[$t] as $m | $e.all[$t] as $j |
	($e.bytes.read * $m.read_pj_per_byte * 1e-12 + $e.bytes.write * $m.write_pj_per_byte * 1e-12 +
	 $m.standby_mw_per_gib * 1e-3 * $e.capacity_bytes / 1073741824 * $e.seconds) as $want |
	(($j.total_j - $want) | fabs) <= 1e-9 * $want] | all'
assert_eq "joules follow from the model" true "$(jq "$check_joules" "$T/ad.json")"
assert_eq "placement total = its DRAM part + its MRAM part" true \
	"$(jq '.energy.placement | ((.dram.total_j + .mram.total_j - .total.total_j) | fabs) <= 1e-9 * .total.total_j' "$T/ad.json")"
assert_eq "placement moves bytes, not adds them" true \
	"$(jq '.energy | (.bytes.write_heavy_write <= .bytes.write) and (.bytes.write_heavy_read <= .bytes.read)' "$T/ad.json")"

# The text says the same, and says it is a model and an estimate.
"$HVT" report --totals-only --energy "$T/ad.hvt" >"$T/ad.txt" || fail "report --energy"
assert_contains "$T/ad.txt" "energy what-if: a MODEL from published figures, not a measurement"
assert_contains "$T/ad.txt" "The placement is an ESTIMATE"
assert_contains "$T/ad.txt" "measured (the channels' read and write bytes)"
want=$(jq .energy.all.dram.total_j "$T/ad.json")
got=$(awk '/as run: all DRAM/ { print $NF }' "$T/ad.txt")
awk -v a="$want" -v b="$got" 'BEGIN { exit !((a - b) / a < 1e-3 && (b - a) / a < 1e-3) }' ||
	fail "text says DRAM total $got J, JSON $want J"
echo "ok: measured bytes, $(jq .energy.all.dram.total_j "$T/ad.json") J as DRAM"

# A selection of intervals prices only those; a torn trace is priced up to its damage and says so.
"$HVT" report --json --energy --from 5 --to 14 "$T/ad.hvt" >"$T/sel.json" || fail "report --energy --from --to"
assert_eq "seconds of 10 intervals" 10 "$(jq '.energy.seconds | round' "$T/sel.json")"
assert_eq "selected bytes" "$(jq '[.intervals[].write_bytes] | add' "$T/sel.json")" "$(jq '.energy.bytes.write | floor' "$T/sel.json")"
"$SYN" -o "$T/torn.hvt" --guest 1G --intervals 12 --runs 50 --bandwidth --torn || fail "synth_trace torn"
expect 3 "incomplete trace" "$HVT" report --totals-only --energy "$T/torn.hvt"
assert_contains "$T/out" "over 11.000 s"
assert_contains "$T/out" "INCOMPLETE TRACE"
echo "ok: selections and a torn trace"

# A model file overrides what it names and keeps the rest.
printf '{"dram": {"read_pj_per_byte": 1, "write_pj_per_byte": 2, "standby_mw_per_gib": 0}}\n' >"$T/m.json"
"$HVT" report --json --energy-model "$T/m.json" "$T/ad.hvt" >"$T/m.out" || fail "report --energy-model"
assert_eq "model source" "$T/m.json" "$(jq -r .energy.model.source "$T/m.out")"
assert_eq "DRAM joules with the file's figures" true \
	"$(jq '.energy | ((.all.dram.total_j - (.bytes.read * 1e-12 + .bytes.write * 2e-12)) | fabs) <= 1e-9 * .all.dram.total_j' "$T/m.out")"
assert_eq "MRAM figures kept" "$(jq .energy.model.mram "$T/ad.json" | jq -c .)" "$(jq -c .energy.model.mram "$T/m.out")"
echo "ok: --energy-model"

# Without bandwidth (and in mode dirty-log without accessed sets): bytes from the page model, no reads.
"$HVT" report --json --energy "$T/dl.hvt" >"$T/dl.json" || fail "report --json --energy (dirty-log)"
assert_eq "page model" page-model "$(jq -r .energy.bytes.source "$T/dl.json")"
assert_eq "no reads" "null false null" "$(jq -r '"\(.energy.bytes.read) \(.energy.reads_included) \(.energy.all.dram.read_j)"' "$T/dl.json")"
assert_eq "4096 bytes per written page per interval" "$(jq '[.intervals[].written] | add * 4096' "$T/dl.json")" \
	"$(jq '.energy.bytes.write | floor' "$T/dl.json")"
"$HVT" report --totals-only --energy "$T/dl.hvt" >"$T/dl.txt" || fail "report --energy (dirty-log)"
assert_contains "$T/dl.txt" "MODELLED, no bandwidth in the trace: 4096 bytes per written page per interval"
assert_contains "$T/dl.txt" "no read estimate"
echo "ok: page model without bandwidth"

# Bad input: one line naming the file and the key, exit 2.
printf '{"dram": {"read_pj_per_byte": 1, "refresh": 3}}' >"$T/bad1.json"
expect 2 "$T/bad1.json: dram: unknown member \"refresh\"" "$HVT" report --energy-model "$T/bad1.json" "$T/ad.hvt"
[ "$(wc -l <"$T/err")" = 1 ] || fail "more than one line: $(cat "$T/err")"
[ ! -s "$T/out" ] || fail "a report was printed despite the bad model"
printf '{"mram": {"write_pj_per_byte": "lots"}}' >"$T/bad2.json"
expect 2 "$T/bad2.json: mram: \"write_pj_per_byte\" is not a number" \
	"$HVT" report --energy-model "$T/bad2.json" "$T/ad.hvt"
printf '{"mram": {"write_pj_per_byte": -3}}' >"$T/bad3.json"
expect 2 "mram: \"write_pj_per_byte\" = -3 is out of range (at least 0)" \
	"$HVT" report --energy-model "$T/bad3.json" "$T/ad.hvt"
expect 2 "$T/none.json" "$HVT" report --energy-model "$T/none.json" "$T/ad.hvt"
expect 2 "cannot be combined with --range" "$HVT" report --energy --range 0-100 "$T/ad.hvt"
expect 2 "not of --html" "$HVT" report --energy --html "$T/r.html" "$T/ad.hvt"
[ ! -e "$T/r.html" ] || fail "--html wrote its file despite --energy"
echo "report_energy: all checks passed"
