#!/bin/bash
# hvmtrace plot on synthetic traces whose pages are known by construction (tests/tools/synth_arrays: arrays
# a, b, c; copy phase c written and a read, add phase c written and a, b read). Each picture is read back
# as a PNG (tests/tools/check_heatmap, through cairo): its size, and in the heatmap the written band of c
# and the accessed bands of a and b at their rows and columns in their colours, with no pixel of that
# colour in the rows around them; zoomed by --range and --from/--to; SVG output; bw, wss, cdf. Bad input:
# one line and exit 2; a torn trace: drawn up to its last complete interval, said, exit 3.
source "$(dirname "$0")/../lib/assert.bash"
CHECK=$TOOLS/check_heatmap

"$TOOLS/synth_arrays" -o "$T/s.hvt" --memory 512M --intervals 20 --noise-written 0 --noise-accessed 0 \
	--channels 2 >"$T/truth" || fail "synth_arrays"
read -r _ _ a_first n <<<"$(grep '^array a' "$T/truth")"
read -r _ _ b_first _ <<<"$(grep '^array b' "$T/truth")"
read -r _ _ c_first _ <<<"$(grep '^array c' "$T/truth")"
a_last=$(printf '0x%x' $((a_first + n - 1)))
b_last=$(printf '0x%x' $((b_first + n - 1)))
c_last=$(printf '0x%x' $((c_first + n - 1)))

# heatmap: geometry $1, then check_heatmap arguments
check() {
	"$CHECK" --png "$T/h.png" --geometry "$1" "${@:2}" || fail "heatmap: check_heatmap ${*:2}"
}
g=$("$HVT" plot heatmap "$T/s.hvt" -o "$T/h.png") || fail "plot heatmap"
echo "$g"
check "$g" --width 1200 --height 720 --band "$c_first-$c_last@0-20" --colour written --outside
check "$g" --width 1200 --height 720 --band "$a_first-$a_last@0-20" --colour accessed
check "$g" --width 1200 --height 720 --band "$b_first-$b_last@0-10" --colour white
check "$g" --width 1200 --height 720 --band "$b_first-$b_last@10-20" --colour accessed
# The same checker fails a picture where c is not where the trace has it (it can fail).
"$CHECK" --png "$T/h.png" --geometry "$g" --width 1200 --height 720 --band "$b_first-$b_last@0-20" >/dev/null 2>&1 &&
	fail "check_heatmap accepted b's rows as written"

# Zoom: --range around c (fewer pages per row), --from/--to the add phase only, another size.
g=$("$HVT" plot heatmap "$T/s.hvt" -o "$T/h.png" --range "$b_first-$c_last" --from 11 --to 20 --width 800 --height 500) ||
	fail "plot heatmap zoomed"
echo "$g"
[[ $g == *"time 10.000-20.000 s"* ]] || fail "--from 11 --to 20 did not select the add phase: $g"
check "$g" --width 800 --height 500 --band "$c_first-$c_last@10-20" --colour written --outside
check "$g" --width 800 --height 500 --band "$b_first-$b_last@10-20" --colour accessed
g=$("$HVT" plot heatmap "$T/s.hvt" -o "$T/h.png" --from 5s --to 10s) || fail "plot heatmap --from 5s"
[[ $g == *"time 5.000-10.000 s"* ]] || fail "--from 5s --to 10s: $g"
check "$g" --width 1200 --height 720 --band "$b_first-$b_last@5-10" --colour white

# Above the PCI hole: an 8 GiB guest puts b and c in pc.ram-high; the hole is squeezed into a band.
"$TOOLS/synth_arrays" -o "$T/big.hvt" --memory 8G --array 64M --intervals 10 --noise-written 0 --noise-accessed 0 \
	>"$T/truth-big" || fail "synth_arrays 8G"
read -r _ _ c8 n8 <<<"$(grep '^array c' "$T/truth-big")"
g=$("$HVT" plot heatmap "$T/big.hvt" -o "$T/h.png") || fail "plot heatmap 8G"
echo "$g"
[[ $g == *" gap:0xc0000-0x100000@"* ]] || fail "the PCI hole (GFN 0xc0000-0x100000) is not a squeezed gap: $g"
check "$g" --width 1200 --height 720 --band "$c8-$(printf '0x%x' $((c8 + n8 - 1)))@0-10" --colour written --outside
# A range from inside the PCI hole: the hole below the RAM is squeezed as one between slots is (the one
# address axis of report --html too, lib/analysis/gfn_bins.c); a range wholly in it selects no RAM.
g=$("$HVT" plot heatmap "$T/big.hvt" -o "$T/h.png" --range 0xf0000-0x13ffff) || fail "plot heatmap from the hole"
echo "$g"
[[ $g == *"bottom to top: gap:0xf0000-0x100000@0+"*" 0x100000-0x140000@"* ]] ||
	fail "--range 0xf0000-0x13ffff: the hole below the RAM is not squeezed: $g"
expect 2 "holds no guest RAM (it lies in a hole)" "$HVT" plot heatmap "$T/big.hvt" -o "$T/x.png" --range 0xc0000-0xc0fff

# SVG, and the other kinds.
"$HVT" plot heatmap "$T/s.hvt" -o "$T/h.svg" >/dev/null || fail "plot heatmap svg"
grep -q '<svg' "$T/h.svg" || fail "h.svg is not SVG"
for k in bw wss cdf; do
	"$HVT" plot $k "$T/s.hvt" -o "$T/$k.png" --width 900 --height 600 >"$T/out" || fail "plot $k"
	assert_contains "$T/out" "wrote $T/$k.png: $k 900x600 px"
	"$CHECK" --png "$T/$k.png" --geometry "area x=0 y=0 w=1 h=1; 1 rows of 1 pages, bottom to top: 0x0-0x1@0+1; time 0-1 s" \
		--width 900 --height 600 >/dev/null || fail "$k.png is not a 900x600 PNG"
done

# Bad input: one line, exit 2, nothing left behind.
"$TOOLS/synth_arrays" -o "$T/empty.hvt" --intervals 0 >/dev/null || fail "synth_arrays --intervals 0"
"$TOOLS/synth_arrays" -o "$T/dl.hvt" --intervals 4 --mode dirty-log >/dev/null || fail "synth_arrays dirty-log"
expect 2 "the trace holds no interval" "$HVT" plot heatmap "$T/empty.hvt" -o "$T/x.png"
expect 2 "outside the guest's RAM" "$HVT" plot heatmap "$T/s.hvt" -o "$T/x.png" --range 0x10000000-0x10000fff
expect 2 "select no interval" "$HVT" plot wss "$T/s.hvt" -o "$T/x.png" --from 30 --to 40
expect 2 "no DRAM bandwidth in this trace" "$HVT" plot bw "$T/dl.hvt" -o "$T/x.png"
expect 2 "cannot create /nonexistent/x.png" "$HVT" plot heatmap "$T/s.hvt" -o /nonexistent/x.png
expect 2 "the name must end in .png or .svg" "$HVT" plot heatmap "$T/s.hvt" -o "$T/x.jpg"
expect 2 "not GFN-GFN" "$HVT" plot heatmap "$T/s.hvt" -o "$T/x.png" --range 5-2
expect 2 "expected heatmap, bw, wss or cdf" "$HVT" plot pie "$T/s.hvt" -o "$T/x.png"
[ ! -e "$T/x.png" ] || fail "a refused plot left $T/x.png behind"
# Mode dirty-log: the wss picture says accessed sets are not available (it is drawn, exit 0).
"$HVT" plot wss "$T/dl.hvt" -o "$T/dl.png" >/dev/null || fail "plot wss dirty-log"

# A torn trace (the writer killed: no index, the last record cut): drawn up to the last whole interval,
# the one report also ends at. The cut: the first, from the end, that leaves report 19 intervals.
size=$(stat -c %s "$T/s.hvt")
for cut in $(seq 50 50 3000); do
	head -c $((size - cut)) "$T/s.hvt" >"$T/torn.hvt"
	"$HVT" report --totals-only "$T/torn.hvt" 2>/dev/null | grep -q 'intervals  *19 ' && break
done
rc=0
g=$("$HVT" plot heatmap "$T/torn.hvt" -o "$T/h.png" 2>"$T/err") || rc=$?
assert_eq "exit status of plot on a torn trace (cut $cut bytes)" 3 "$rc"
assert_contains "$T/err" "incomplete trace"
[[ $g == *"time 0.000-19.000 s"* ]] || fail "torn trace: expected 19 intervals drawn: $g"
check "$g" --width 1200 --height 720 --band "$c_first-$c_last@0-19" --colour written
echo "ok: plots checked"
