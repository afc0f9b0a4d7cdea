#!/bin/bash
# reader_outputs.sh BIN TRACES OUT: every output the trace readers make (report text, --json and its
# analyses, --html, --energy; export in every format; plot of every kind as PNG and SVG) for each trace in
# the folder TRACES, with the selections every command takes, written under OUT with each command's exit
# status. Two builds' OUT folders are compared with `diff -r` to show that a change of the code left every
# output byte-identical (issue 21); what is wall clock (the HTML's generation time) is masked here.
set -u
BIN=$1 TRACES=$2 OUT=$3
mkdir -p "$OUT"
H=$BIN/hvmtrace

# run NAME CMD...: standard output to OUT/NAME.out, standard error and exit status to OUT/NAME.err
run() {
	local name=$1
	shift
	"$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
	echo "exit $?" >>"$OUT/$name.err"
}

for t in "$TRACES"/*.hvt; do
	n=$(basename "$t" .hvt)
	run "$n.report" "$H" report "$t"
	run "$n.report-totals" "$H" report --totals-only "$t"
	run "$n.report-json" "$H" report --json --pages --regions --histogram "$t"
	run "$n.report-sel" "$H" report --json --from 2 --to 5 --range 0x10-0x4000 "$t"
	run "$n.report-time" "$H" report --from 100ms --to 2s "$t"
	run "$n.report-energy" "$H" report --energy "$t"
	run "$n.report-window" "$H" report --window 3 --phase-span 2 --phase-change 0.2 "$t"
	# every analysis at once, with thresholds off their defaults (issue 25: the per-page counts)
	run "$n.report-all" "$H" report --pages --regions --histogram --energy --window 4 --write-heavy 0.3 \
		--read-mostly 0.2 --read-mostly-write 0.2 --cold 0.1 "$t"
	run "$n.report-all-json" "$H" report --json --pages --regions --histogram --energy --window 4 \
		--write-heavy 0.3 --read-mostly 0.2 --read-mostly-write 0.2 --cold 0.1 "$t"
	run "$n.report-all-range" "$H" report --json --pages --regions --histogram --range 0x3ff-0x1000ff "$t"
	run "$n.report-two" "$H" report "$t" "$t"
	run "$n.report-two-json" "$H" report --json --window 3 "$t" "$t"
	run "$n.report-html" "$H" report "$t" --html "$OUT/$n.html"
	run "$n.report-html-sel" "$H" report "$t" --from 2 --to 4 --html "$OUT/$n-sel.html"
	run "$n.export-jsonl" "$H" export --jsonl - "$t"
	run "$n.export-nopages" "$H" export --jsonl - --no-pages "$t"
	run "$n.export-csv" "$H" export --csv - "$t"
	run "$n.export-pages" "$H" export --csv-pages - "$t"
	run "$n.export-damo" "$H" export --damo - "$t"
	run "$n.export-pcm" "$H" export --pcm-csv - "$t"
	run "$n.export-raw" "$H" export --raw - "$t"
	run "$n.export-meta" "$H" export --meta "$t"
	for kind in heatmap bw wss cdf; do
		for ext in png svg; do
			run "$n.plot-$kind-$ext" "$H" plot "$kind" "$t" -o "$OUT/$n-$kind.$ext"
		done
		run "$n.plot-$kind-sel" "$H" plot "$kind" "$t" -o "$OUT/$n-$kind-sel.png" --from 2 --to 6 \
			--range 0x0-0x7fff
	done
done
# What differs between two runs of the same build: the output folder's name in messages, and wall clock
# (the HTML display's generation time).
sed -i "s|$OUT/|OUT/|g" "$OUT"/*.out "$OUT"/*.err
for f in "$OUT"/*.html; do
	[ -f "$f" ] && sed -i -E 's/"generated":"[^"]*"/"generated":"-"/g' "$f"
done
exit 0
