#!/bin/bash
# plot heatmap --color-by owner (docs/plots.md, docs/attribution.md): a synthetic array run (tests/tools/
# synth_arrays: array c written in every interval, every page of it) with two owners snapshots in the trace,
# after interval 1 and after interval 5. The first gives c's first half to array[100] and its third quarter
# to other[101]; the second c's first half to array[100] and its third quarter to third[102]; nobody has
# the fourth. By docs/attribution.md's rule, c's third quarter is other[101]'s in interval 1 (the first
# snapshot alone), changed owner in 2-5 (the two disagree), third[102]'s in 6-10 (the second alone). The
# picture is read back (tests/tools/check_heatmap): each band's pixels are exactly the colour the legend
# (the plot's "owner #rrggbb PAGES LABEL" lines) gives its owner; the legend's page counts are export's;
# --top 1 greys the others; the SVG's words; refusals: a trace without snapshots (export's sentence), no
# hvmtrace beside hvmtrace-plot, --by without --color-by, --color-by for another kind.
source "$(dirname "$0")/../lib/assert.bash"
command -v python3 >/dev/null || skip "needs python3"
CHECK=$TOOLS/check_heatmap
SNAP=(python3 "$ROOT/tests/tools/owners_snap.py")

"$TOOLS/synth_arrays" -o "$T/plain.hvt" --memory 256M --array 8M --intervals 10 --noise-written 0 \
	--noise-accessed 0 >"$T/truth" || fail "synth_arrays"
read -r _ _ c n <<<"$(grep '^array c' "$T/truth")"
c=$((c)) n=$((n)) q=$((n / 4))
hex() { printf '0x%x' "$1"; }
half="$(hex $c)-$(hex $((c + 2 * q - 1)))" third="$(hex $((c + 2 * q)))-$(hex $((c + 3 * q - 1)))"
fourth="$(hex $((c + 3 * q)))-$(hex $((c + n - 1)))"
snapshot() { # $1: the owner of the third quarter
	cat <<EOF2
{"time_ns": 7, "owners": [
 {"type": "process", "pid": 100, "name": "array", "cgroup": "/a", "runs": [[$c, $((2 * q))]]},
 {"type": "process", "pid": $1, "cgroup": "/b", "runs": [[$((c + 2 * q)), $q]]}
]}
EOF2
}
snapshot '101, "name": "other"' | "${SNAP[@]}" encode >"$T/1.snap" || fail "encode 1"
snapshot '102, "name": "third"' | "${SNAP[@]}" encode >"$T/2.snap" || fail "encode 2"
"$TOOLS/synth_arrays" -o "$T/o.hvt" --memory 256M --array 8M --intervals 10 --noise-written 0 \
	--noise-accessed 0 --owners "1:$T/1.snap,5:$T/2.snap" >/dev/null || fail "synth_arrays --owners"

out=$("$HVT" plot heatmap "$T/o.hvt" -o "$T/o.png" --color-by owner) || fail "plot --color-by owner exited $?"
echo "$out"
g=$(head -1 <<<"$out")
colour() { # the legend's colour of owner $1
	local c
	c=$(awk -v o="$1" '$1 == "owner" && $4 == o { print $2 }' <<<"$out")
	[ -n "$c" ] || fail "the legend has no owner $1: $out"
	echo "$c"
}
pages() { awk -v o="$1" '$1 == "owner" && $4 == o { print $3 }' <<<"$out"; }
array=$(colour 'array[100]') other=$(colour 'other[101]') thrd=$(colour 'third[102]')
changed=$(colour changed) none=$(colour no)
[ "$(printf '%s\n' "$array" "$other" "$thrd" "$changed" "$none" | sort -u | wc -l)" = 5 ] ||
	fail "owners share a colour: $array $other $thrd $changed $none"
check() { "$CHECK" --png "$T/o.png" --geometry "$g" --width 1200 --height 720 "$@" || fail "check_heatmap $*"; }
check --band "$half@0-10" --colour "$array"
check --band "$third@0-1" --colour "$other"
check --band "$third@1-5" --colour "$changed"
check --band "$third@5-10" --colour "$thrd"
check --band "$fourth@0-10" --colour "$none"
# the checker can fail: the band of array[100] is not other[101]'s colour
"$CHECK" --png "$T/o.png" --geometry "$g" --width 1200 --height 720 --band "$half@0-10" --colour "$other" \
	>/dev/null 2>&1 && fail "check_heatmap accepted array[100]'s band in other[101]'s colour"

# the legend's pages: every page of c in every interval, each owner's as the rule has it
assert_eq "array[100]'s pages" $((10 * 2 * q)) "$(pages 'array[100]')"
assert_eq "other[101]'s pages" "$q" "$(pages 'other[101]')"
assert_eq "changed owner's pages" $((4 * q)) "$(pages changed)"
assert_eq "third[102]'s pages" $((5 * q)) "$(pages 'third[102]')"
assert_eq "no process's pages" $((10 * q)) "$(pages no)"

# --top 1: array[100] keeps its hue, the others are "other owners"
out=$("$HVT" plot heatmap "$T/o.hvt" -o "$T/o.png" --color-by owner --top 1) || fail "--top 1 exited $?"
g=$(head -1 <<<"$out")
assert_eq "--top 1: array[100]'s colour" "$array" "$(colour 'array[100]')"
others=$(colour other)
[ "$(pages other)" = $((6 * q)) ] || fail "--top 1: other owners' pages: $out"
check --band "$half@0-10" --colour "$array"
check --band "$third@0-1" --colour "$others"
check --band "$third@5-10" --colour "$others"

# --by kind: none of these owners is a kind; the selection passes to export: --from 6 draws only 6-10
out=$("$HVT" plot heatmap "$T/o.hvt" -o "$T/o.png" --color-by owner --from 6 --range "$third") ||
	fail "--from 6 --range exited $?"
[[ $out == *"time 5.000-10.000 s"* ]] || fail "--from 6: $out"
assert_eq "--from 6 --range: third[102]'s pages" $((5 * q)) "$(pages 'third[102]')"
[ -z "$(pages 'array[100]')" ] || fail "--range: array[100] outside it has pages: $out"

# SVG: the words as <text>; by cgroup, other[101] and third[102] are both /b's: no changed owner
"$HVT" plot heatmap "$T/o.hvt" -o "$T/o.svg" --color-by owner --by cgroup >/dev/null || fail "svg exited $?"
for w in "by cgroup, owners from the trace's snapshots" "owners (pages written)" "/a  $((10 * 2 * q))" \
	"/b  $((10 * q))" "no process  $((10 * q))"; do
	grep -qF ">$w</text>" "$T/o.svg" || fail "the SVG has no <text> '$w'"
done
grep -qF "changed owner" "$T/o.svg" && fail "by cgroup, the SVG has a changed owner"

# --owners FILE passes through to export
out=$("$HVT" plot heatmap "$T/plain.hvt" -o "$T/p.png" --color-by owner --owners "$T/1.snap") ||
	fail "--owners exited $?"
assert_eq "--owners: other[101]'s pages" $((10 * q)) "$(pages 'other[101]')"

# refusals
expect 2 "holds no owners snapshots" "$HVT" plot heatmap "$T/plain.hvt" -o "$T/x.png" --color-by owner
[ -e "$T/x.png" ] && fail "a refused picture left its file"
expect 2 "--by needs --color-by owner" "$HVT" plot heatmap "$T/o.hvt" -o "$T/x.png" --by kind
expect 2 "--color-by owner colours a heatmap, not wss" "$HVT" plot wss "$T/o.hvt" -o "$T/x.png" --color-by owner
mkdir "$T/alone" && cp "$BIN/hvmtrace-plot" "$T/alone/"
expect 2 "--color-by owner needs hvmtrace beside hvmtrace-plot: $T/alone/hvmtrace" \
	"$T/alone/hvmtrace-plot" heatmap "$T/o.hvt" -o "$T/x.png" --color-by owner
echo "ok: plot heatmap --color-by owner"
