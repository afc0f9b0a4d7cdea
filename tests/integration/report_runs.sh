#!/bin/bash
# hvmtrace report with several traces: the runs side by side (docs/analyses.md, "Comparing runs"). Three
# synthetic runs whose pages are known by construction (tests/tools/synth_arrays, no noise: array c of N
# pages written in every interval, a read in the copy phase, a and b in the add phase): each column must
# hold that run's truth, in the order given (a shell glob of a domain's traces, as libvirt names them); --json
# must hold, per run, exactly what `report TRACE --json` says of it alone. What a comparison does not do,
# and a bad trace among good ones: one line, exit 2, nothing written.
source "$(dirname "$0")/../lib/assert.bash"

mk() { # name array-size mode channels
	"$TOOLS/synth_arrays" -o "$T/$1" --memory 512M --array "$2" --intervals 10 --noise-written 0 \
		--noise-accessed 0 --mode "$3" --channels "$4" >"$T/$1.truth" || fail "synth_arrays $1"
}
mk vm-demo-1.hvt 16M ad 2
mk vm-demo-2.hvt 32M dirty-log 0
mk vm-demo-3.hvt 8M ad 0
pages() { printf "%d\n" "$(awk '$1 == "array" && $2 == "c" {print $4}' "$T/$1.truth")"; }

"$HVT" report "$T"/vm-demo-*.hvt >"$T/cmp" || fail "report of three traces"
cat "$T/cmp"
# The order given: run N is the Nth trace of the glob.
for n in 1 2 3; do
	grep -q "^run $n  *$T/vm-demo-$n.hvt: " "$T/cmp" || fail "run $n is not vm-demo-$n.hvt"
done
col() { # ROW RUN: the figure in that row of $T/cmp (the side-by-side table, not the ratios below it)
	awk -v r="$1" -v k="$2" -v n="$(grep -c '^run [0-9]' "$T/cmp")" '/^ratio to run 1/ {exit}
		index($0, r) == 1 {print $(NF - n + k)}' "$T/cmp"
}
for n in 1 2 3; do
	c=$(pages vm-demo-$n.hvt)
	assert_eq "run $n: distinct pages ever written" "$c" "$(col 'distinct pages ever written' $n)"
	assert_eq "run $n: page-writes" "$((c * 10))" "$(col 'page-writes' $n)"
	assert_eq "run $n: intervals" 10 "$(col 'intervals' $n)"
done
# Each later run against the first: c of 32 MiB and 8 MiB against 16 MiB.
ratio() { awk -v r="$1" -v k="$2" '/^ratio to run 1/ {on = 1} on && index($0, r) == 1 {print $(NF - 2 + k - 1)}' "$T/cmp"; }
assert_eq "run 2 / run 1: distinct pages ever written" 2.000 "$(ratio 'distinct pages ever written' 2)"
assert_eq "run 3 / run 1: page-writes" 0.500 "$(ratio 'page-writes' 3)"
assert_eq "run 2 / run 1: mean accessed (dirty-log)" n/a "$(ratio 'mean accessed pages/interval' 2)"
# Accessed: a + c in the copy phase, a + b + c in the add phase: mean 2.5 c; none in mode dirty-log.
assert_eq "run 1: mean accessed" "$(awk -v c="$(pages vm-demo-1.hvt)" 'BEGIN {printf "%.1f", 2.5 * c}')" \
	"$(col 'mean accessed pages/interval' 1)"
assert_eq "run 2 (dirty-log): mean accessed" n/a "$(col 'mean accessed pages/interval' 2)"
assert_eq "run 3 (no channels): DRAM MB" n/a "$(col 'DRAM MB, reads + writes' 3)"
[ "$(col 'DRAM MB, reads + writes' 1)" != n/a ] || fail "run 1 has channels: its DRAM bytes are missing"

# --json: each run's object is the single report's, in order; with a selection, too.
for sel in "" "--from 6 --to 10"; do
	# shellcheck disable=SC2086
	"$HVT" report --json $sel "$T/vm-demo-3.hvt" "$T/vm-demo-1.hvt" >"$T/cmp.json" || fail "report --json $sel"
	assert_eq "runs in --json" 2 "$(jq '.runs | length' "$T/cmp.json")"
	k=0
	for t in vm-demo-3.hvt vm-demo-1.hvt; do
		# shellcheck disable=SC2086
		"$HVT" report --json $sel "$T/$t" >"$T/one.json" || fail "report --json $t"
		jq -e --slurpfile one "$T/one.json" ".runs[$k] == \$one[0]" "$T/cmp.json" >/dev/null ||
			fail "--json $sel: run $((k + 1)) differs from report $t alone"
		k=$((k + 1))
	done
done
assert_eq "--from 6: intervals of run 1" 5 "$(jq '.runs[0].totals.intervals' "$T/cmp.json")"

# One trace is what it always was: no comparison.
"$HVT" report "$T/vm-demo-1.hvt" >"$T/one" || fail "report of one trace"
grep -q '^runs ' "$T/one" && fail "a single trace's report became a comparison"

# A torn trace among them: compared up to its damage, said on stderr and in its run line, exit 3.
size=$(stat -c %s "$T/vm-demo-1.hvt")
head -c $((size - 600)) "$T/vm-demo-1.hvt" >"$T/torn.hvt"
rc=0
"$HVT" report "$T/torn.hvt" "$T/vm-demo-3.hvt" >"$T/cmp" 2>"$T/err" || rc=$?
assert_eq "exit status of a comparison with a torn trace" 3 "$rc"
assert_contains "$T/err" "$T/torn.hvt: incomplete trace"
grep -q "^run 1  *$T/torn.hvt: .*INCOMPLETE" "$T/cmp" || fail "the torn run is not marked INCOMPLETE: $(cat "$T/cmp")"
n=$(col 'intervals' 1)
[ "$n" -ge 1 ] && [ "$n" -lt 10 ] || fail "the torn run: expected fewer than 10 intervals, got '$n'"

# What a comparison does not do, and bad input among good traces: one line, exit 2, no output file.
expect 2 "--html takes one trace (2 given)" "$HVT" report "$T/vm-demo-1.hvt" "$T/vm-demo-2.hvt" --html "$T/x.html"
expect 2 "--energy takes one trace (2 given)" "$HVT" report "$T/vm-demo-1.hvt" "$T/vm-demo-2.hvt" --energy
expect 2 "--pages takes one trace" "$HVT" report "$T/vm-demo-1.hvt" "$T/vm-demo-2.hvt" --pages
echo junk >"$T/junk.hvt"
expect 2 "$T/junk.hvt" "$HVT" report "$T/vm-demo-1.hvt" "$T/junk.hvt" -o "$T/x.txt"
expect 2 "No such file" "$HVT" report "$T/vm-demo-1.hvt" "$T/none.hvt" -o "$T/x.txt"
[ "$(wc -l <"$T/err")" = 1 ] || fail "a missing trace among several: more than one line: $(cat "$T/err")"
expect 2 "select no interval" "$HVT" report "$T/vm-demo-1.hvt" "$T/vm-demo-2.hvt" --from 30 --to 40
[ ! -e "$T/x.txt" ] && [ ! -e "$T/x.html" ] || fail "a refused comparison left a file behind"
# An output that is one of the traces read: refused, the trace kept (one trace, or several; -o or --html).
cp "$T/vm-demo-2.hvt" "$T/keep.hvt"
expect 2 "-o $T/vm-demo-2.hvt is a trace being read; refusing to overwrite it" "$HVT" report "$T/vm-demo-1.hvt" "$T/vm-demo-2.hvt" -o "$T/vm-demo-2.hvt"
expect 2 "-o $T/./vm-demo-2.hvt is a trace being read" "$HVT" report "$T/vm-demo-2.hvt" -o "$T/./vm-demo-2.hvt"
expect 2 "--html $T/vm-demo-2.hvt is a trace being read" "$HVT" report "$T/vm-demo-2.hvt" --html "$T/vm-demo-2.hvt"
cmp -s "$T/keep.hvt" "$T/vm-demo-2.hvt" || fail "a refused report overwrote the trace it read"
args=()
for _ in $(seq 17); do args+=("$T/vm-demo-1.hvt"); done
expect 2 "more than 16 TRACEs" "$HVT" report "${args[@]}"
echo "ok: runs compared"
