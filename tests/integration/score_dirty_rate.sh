#!/bin/bash
# hvmtrace score --dirty-rate (docs/score.md): QEMU's calc-dirty-rate replies against the trace's written
# pages over the same window.
#  - replies built to be exactly right (a trace whose truths are whole MiB/s: array c, 8192 pages, written in
#    every 1 s interval and nothing else) score error 0 in each mode, also moved there by --offset;
#  - replies with known errors score exactly those, per measurement, per mode and overall;
#  - on a trace with random pages written, each measurement's distinct and summed pages are the ones
#    Python's sets give from the trace's own CSV exports, apart from score's code;
#  - refusals, one line naming the file and the line: a measurement outside the trace or partly outside,
#    one that takes no interval, a status other than measured, a failed measurement, bad JSON, a QMP error,
#    an unknown mode, a missing field, no reply at all.
source "$(dirname "$0")/../lib/assert.bash"
command -v python3 >/dev/null || skip "needs python3"

W=1795000000 # synth_arrays' intervals start at this wall-clock second, 1 s each
"$TOOLS/synth_arrays" -o "$T/c.hvt" --mode dirty-log --memory 512M --intervals 10 --noise-written 0 \
	>"$T/truth" || fail "synth_arrays"
grep -q '^array c 0x14000 0x2000$' "$T/truth" || fail "synth_arrays' array c moved: $(cat "$T/truth")"

# reply MODE START_S CALC CALC_UNIT RATE [extra members]: one query-dirty-rate reply as QMP tools print it
reply() {
	local unit=${4:+, \"calc-time-unit\": \"$4\"}
	echo "{\"return\": {\"status\": \"measured\", \"sample-pages\": 512, \"dirty-rate\": $5, \"mode\": \"$1\", \"start-time\": $2, \"calc-time\": $3$unit${6:-}}}"
}

# what score --json says: a line per measurement, then one per mode and the overall one
said() {
	python3 -c '
import json, sys
o = json.load(sys.stdin)
f = lambda v: "null" if v is None else "%.6f" % v
for m in o["measurements"]:
    print(m["line"], m["mode"], m["intervals"], m["distinct_pages"], m["summed_pages"], f(m["true_mib_s"]), m["qemu_mib_s"], f(m["error"]))
for k, g in list(o["modes"].items()) + [("overall", o["overall"])]:
    print(k, g["measurements"], f(g["sum_error"]), f(g["mean_abs_error"]), f(g["min_error"]), f(g["max_error"]))'
}

# ---- exactly right: c's 8192 pages (32 MiB) in every interval ----
# page-sampling over 4 s: 8192 distinct pages, 8 MiB/s; dirty-bitmap over 2 s (ms): 16 MiB/s; dirty-ring
# over 4 s: 4 x 8192 pages summed, 32 MiB/s. The greeting, calc-dirty-rate's acknowledgement and a reply
# queried again are skipped.
{
	echo '{"QMP": {"version": {"qemu": {"micro": 13, "minor": 0, "major": 10}}, "capabilities": []}}'
	echo '{"return": {}}'
	reply page-sampling $((W + 2)) 4 second 8
	reply page-sampling $((W + 2)) 4 second 8
	echo
	reply dirty-bitmap $((W + 0)) 2000 millisecond 16
	reply dirty-ring $((W + 5)) 4 "" 32 ', "vcpu-dirty-rate": [{"id": 0, "dirty-rate": 20}, {"id": 1, "dirty-rate": 12}]'
} >"$T/exact.jsonl"
"$HVT" score "$T/c.hvt" --dirty-rate "$T/exact.jsonl" --json >"$T/exact.json" || fail "score --dirty-rate exited $?"
said <"$T/exact.json" >"$T/got"
assert_eq "exactly right" "3 page-sampling 4 8192 32768 8.000000 8 0.000000
6 dirty-bitmap 2 8192 16384 16.000000 16 0.000000
7 dirty-ring 4 8192 32768 32.000000 32 0.000000
page-sampling 1 0.000000 0.000000 0.000000 0.000000
dirty-bitmap 1 0.000000 0.000000 0.000000 0.000000
dirty-ring 1 0.000000 0.000000 0.000000 0.000000
overall 3 0.000000 0.000000 0.000000 0.000000" "$(cat "$T/got")"
echo "ok: exactly right: $(tail -n 1 "$T/got")"
# the windows are the ones meant: page-sampling's is 2.5 to 6.5 s on the trace's clock (start-time + 0.5 s)
assert_eq "page-sampling's window" "2500000000 6500000000 4000000000" \
	"$(python3 -c 'import json, sys; m = json.load(sys.stdin)["measurements"][0]; print(m["start_ns"], m["end_ns"], m["span_ns"])' <"$T/exact.json")"
"$HVT" score "$T/c.hvt" --dirty-rate "$T/exact.jsonl" >"$T/text" || fail "score --dirty-rate, text"
assert_contains "$T/text" "against QEMU's calc-dirty-rate in $T/exact.jsonl (3 measurements)" \
	"overall          3 measurements: error of the sums +0.0000, mean |error| 0.0000"
# the same replies 2 s later, moved back by --offset -2s
python3 -c '
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line) if line.strip() else None
    r = o.get("return") if o else None
    if r and "start-time" in r:
        r["start-time"] += 2
    print(json.dumps(o) if o else "")' "$T/exact.jsonl" >"$T/later.jsonl"
"$HVT" score "$T/c.hvt" --dirty-rate "$T/later.jsonl" --offset -2s --json | said >"$T/got2" ||
	fail "score --dirty-rate --offset -2s"
assert_eq "--offset -2s" "$(cat "$T/got")" "$(cat "$T/got2")"
expect 2 "$T/later.jsonl line 7: the measurement's window" "$HVT" score "$T/c.hvt" --dirty-rate "$T/later.jsonl"

# ---- known errors: +50 %, -50 %, +25 % ----
{
	reply page-sampling $((W + 2)) 4 second 12
	reply dirty-bitmap $((W + 0)) 2000 millisecond 8
	reply dirty-ring $((W + 5)) 4000 millisecond 40
} >"$T/wrong.jsonl"
"$HVT" score "$T/c.hvt" --dirty-rate "$T/wrong.jsonl" --json | said >"$T/got" || fail "score, known errors"
# overall: QEMU's MiB 48 + 16 + 160 = 224 against 32 + 32 + 128 = 192: +1/6; mean |error| (0.5+0.5+0.25)/3
assert_eq "known errors" "1 page-sampling 4 8192 32768 8.000000 12 0.500000
2 dirty-bitmap 2 8192 16384 16.000000 8 -0.500000
3 dirty-ring 4 8192 32768 32.000000 40 0.250000
page-sampling 1 0.500000 0.500000 0.500000 0.500000
dirty-bitmap 1 -0.500000 0.500000 -0.500000 -0.500000
dirty-ring 1 0.250000 0.250000 0.250000 0.250000
overall 3 0.166667 0.416667 -0.500000 0.500000" "$(cat "$T/got")"
echo "ok: known errors: $(tail -n 1 "$T/got")"

# ---- random pages: distinct and summed against Python's sets ----
"$TOOLS/synth_arrays" -o "$T/n.hvt" --mode dirty-log --memory 512M --intervals 12 --noise-written 300 --seed 7 \
	>/dev/null || fail "synth_arrays, noise"
"$HVT" export --csv "$T/iv.csv" --csv-pages "$T/pages.csv" "$T/n.hvt" || fail "export --csv"
{
	reply page-sampling $((W + 1)) 3 second 10
	reply page-sampling $((W + 3)) 1500 millisecond 10
	reply dirty-bitmap $((W + 4)) 7 second 10
	reply dirty-ring $((W + 6)) 5 second 10
} >"$T/noise.jsonl"
python3 - "$T/iv.csv" "$T/pages.csv" "$T/noise.jsonl" >"$T/want" <<'EOF' || fail "the expectation"
import csv, datetime, json, sys
ivs = {}
for r in csv.DictReader(open(sys.argv[1])):
    wall = datetime.datetime.strptime(r["wall_start"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    lo = int(wall.timestamp()) * 10**9 + wall.microsecond * 1000
    ivs[r["seq"]] = (lo, lo + int(r["t_end_ns"]) - int(r["t_start_ns"]), set())
for r in csv.DictReader(open(sys.argv[2])):
    if r["kind"] == "written":
        ivs[r["seq"]][2].update(range(int(r["first_gfn"]), int(r["first_gfn"]) + int(r["count"])))
for n, line in enumerate(open(sys.argv[3]), 1):
    r = json.loads(line)["return"]
    lo = r["start-time"] * 10**9 + 5 * 10**8
    hi = lo + r["calc-time"] * (10**6 if r.get("calc-time-unit") == "millisecond" else 10**9)
    taken = [v for v in ivs.values() if lo <= (v[0] + v[1]) // 2 < hi]
    distinct = set().union(*[v[2] for v in taken])
    summed = sum(len(v[2]) for v in taken)
    pages = summed if r["mode"] == "dirty-ring" else len(distinct)
    print(n, r["mode"], len(taken), len(distinct), summed, "%.6f" % (pages * 4096 / 1048576 / ((hi - lo) / 1e9)))
EOF
"$HVT" score "$T/n.hvt" --dirty-rate "$T/noise.jsonl" --json | said | head -n 4 | cut -d' ' -f1-6 >"$T/got" ||
	fail "score, random pages"
assert_eq "random pages" "$(cat "$T/want")" "$(cat "$T/got")"
echo "ok: random pages: $(tr '\n' ';' <"$T/got")"

# ---- refusals ----
reply page-sampling $((W + 20)) 1 second 8 >"$T/after.jsonl"
expect 2 "$T/after.jsonl line 1: the measurement's window (2026-11-18T11:07:00.500000Z, 20.500 to 21.500 s on the trace's clock) is not inside $T/c.hvt (0 to 10.000 s)" \
	"$HVT" score "$T/c.hvt" --dirty-rate "$T/after.jsonl"
{ reply page-sampling $((W + 2)) 1 second 8; reply dirty-bitmap $((W + 8)) 2 second 8; } >"$T/partly.jsonl"
expect 2 "$T/partly.jsonl line 2: the measurement's window" "$HVT" score "$T/c.hvt" --dirty-rate "$T/partly.jsonl"
reply page-sampling $((W + 2)) 300 millisecond 8 >"$T/short.jsonl"
expect 2 "$T/short.jsonl line 1: the measurement's window (2026-11-18T11:06:42.600000Z, 0.300 s long) holds no interval's midpoint" \
	"$HVT" score "$T/c.hvt" --dirty-rate "$T/short.jsonl" --offset 100ms
"$HVT" score "$T/c.hvt" --dirty-rate "$T/short.jsonl" >/dev/null || fail "a 300 ms window over a midpoint was refused"
{ reply page-sampling $((W + 2)) 1 second 8; echo '{"return": {"status": "measuring", "sample-pages": 512, "mode": "page-sampling", "start-time": 1, "calc-time": 1}}'; } >"$T/measuring.jsonl"
expect 2 "$T/measuring.jsonl line 2: return: \"status\" = \"measuring\": not a finished measurement" \
	"$HVT" score "$T/c.hvt" --dirty-rate "$T/measuring.jsonl"
reply page-sampling $((W + 2)) 1 second -1 >"$T/failed.jsonl"
expect 2 "$T/failed.jsonl line 1: return: \"dirty-rate\" = -1: QEMU's measurement failed" \
	"$HVT" score "$T/c.hvt" --dirty-rate "$T/failed.jsonl"
{ reply page-sampling $((W + 2)) 1 second 8; echo; echo '{"return": {"status": "measured",'; } >"$T/cut.jsonl"
expect 2 "$T/cut.jsonl line 3: not a QMP reply (one JSON object a line): the object does not end on its line" \
	"$HVT" score "$T/c.hvt" --dirty-rate "$T/cut.jsonl"
echo '{"return": {}} x' >"$T/after-object.jsonl"
expect 2 "$T/after-object.jsonl line 1: not a QMP reply (one JSON object a line)" \
	"$HVT" score "$T/c.hvt" --dirty-rate "$T/after-object.jsonl"
echo '[1, 2]' >"$T/array.jsonl"
expect 2 "$T/array.jsonl line 1: not a QMP reply (a JSON object expected, got an array)" \
	"$HVT" score "$T/c.hvt" --dirty-rate "$T/array.jsonl"
echo '{"error": {"class": "GenericError", "desc": "mode dirty-ring is not enabled, use other method instead."}}' >"$T/error.jsonl"
expect 2 "$T/error.jsonl line 1: a QMP error, not a measurement: mode dirty-ring is not enabled" \
	"$HVT" score "$T/c.hvt" --dirty-rate "$T/error.jsonl"
reply page-guessing $((W + 2)) 1 second 8 >"$T/mode.jsonl"
expect 2 "$T/mode.jsonl line 1: return: \"mode\" = \"page-guessing\" is not a mode" \
	"$HVT" score "$T/c.hvt" --dirty-rate "$T/mode.jsonl"
echo '{"status": "measured", "dirty-rate": 8, "calc-time": 1}' >"$T/nostart.jsonl"
expect 2 "$T/nostart.jsonl line 1: missing \"start-time\"" "$HVT" score "$T/c.hvt" --dirty-rate "$T/nostart.jsonl"
reply page-sampling $((W + 2)) 1 fortnight 8 >"$T/unit.jsonl"
expect 2 "$T/unit.jsonl line 1: return: \"calc-time-unit\" = \"fortnight\" is not a unit" \
	"$HVT" score "$T/c.hvt" --dirty-rate "$T/unit.jsonl"
reply page-sampling $((W + 2)) 0 second 8 >"$T/zero.jsonl"
expect 2 "$T/zero.jsonl line 1: return: \"calc-time\"" "$HVT" score "$T/c.hvt" --dirty-rate "$T/zero.jsonl"
# the bounds: start-time past 2106 is refused; the last second allowed, moved 30 years either way, is
# only outside (no overflow: the sanitizer build would abort)
reply page-sampling 4294967296 1 second 8 >"$T/far.jsonl"
expect 2 "$T/far.jsonl line 1: return: \"start-time\" = 4294967296 is out of range" \
	"$HVT" score "$T/c.hvt" --dirty-rate "$T/far.jsonl"
reply page-sampling 4294967295 1 second 8 >"$T/last.jsonl"
expect 2 "$T/last.jsonl line 1: the measurement's window" "$HVT" score "$T/c.hvt" --dirty-rate "$T/last.jsonl" \
	--offset 1000000000s
expect 2 "$T/last.jsonl line 1: the measurement's window" "$HVT" score "$T/c.hvt" --dirty-rate "$T/last.jsonl" \
	--offset -1000000000s
printf '{"return": {}}\n\n' >"$T/none.jsonl"
expect 2 "$T/none.jsonl: no query-dirty-rate reply" "$HVT" score "$T/c.hvt" --dirty-rate "$T/none.jsonl"
expect 2 "--record-clock, --window and --hot are not for --dirty-rate" \
	"$HVT" score "$T/c.hvt" --dirty-rate "$T/exact.jsonl" --hot 20
expect 2 "give --damon RECORD, --sample SPEC or --dirty-rate FILE (one of them)" \
	"$HVT" score "$T/c.hvt" --dirty-rate "$T/exact.jsonl" --sample every:2
echo "ok: score --dirty-rate"
