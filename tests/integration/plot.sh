#!/bin/bash
# hvmtrace plot on synthetic traces whose pages are known by construction (tests/tools/synth_arrays: arrays
# a, b, c; copy phase c written and a read, add phase c written and a, b read). Each picture is read back
# as a PNG (tests/tools/check_heatmap, through cairo): its size, and in the heatmap the written band of c
# and the accessed bands of a and b at their rows and columns in their colours, with no pixel of that
# colour in the rows around them; zoomed by --range and --from/--to; SVG output; bw, wss, cdf. Bad input:
# one line and exit 2; a torn trace: drawn up to its last complete interval, said, exit 3.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/plots.bash"
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

# SVG, with its words as <text> elements (cairo draws glyphs as paths): the axes, one unit per axis, the
# colour bar's numbers and scale, the selection in the subtitle.
svg_texts() { grep -o '<text[^>]*>[^<]*</text>' "$1" | sed 's/<[^>]*>//g'; }
"$HVT" plot heatmap "$T/s.hvt" -o "$T/h.svg" >/dev/null || fail "plot heatmap svg"
grep -q '<svg' "$T/h.svg" || fail "h.svg is not SVG"
python3 -c "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])" "$T/h.svg" || fail "h.svg is not well-formed XML"
grep -q '<glyph\|id="glyph' "$T/h.svg" && fail "h.svg draws its words as glyph paths"
svg_texts "$T/h.svg" >"$T/words"
cat "$T/words"
# Words that are markup, or a control character, in a VM's name: still XML, shown as text.
"$TOOLS/synth_arrays" -o "$T/odd.hvt" --memory 512M --intervals 2 --vm-name $'a<b>&\x01c' >/dev/null ||
	fail "synth_arrays --vm-name"
"$HVT" plot heatmap "$T/odd.hvt" -o "$T/odd.svg" >/dev/null || fail "plot heatmap of odd.hvt"
python3 -c "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])" "$T/odd.svg" ||
	fail "a VM name with markup made odd.svg ill-formed"
grep -q "VM 'a&lt;b&gt;&amp;?c'" "$T/odd.svg" || fail "odd.svg does not name the VM 'a<b>&?c'"
assert_contains "$T/words" "Pages written and accessed over time" "guest-physical address (MiB)" \
	"time since the trace's start (s)" "share of a row's pages" "(linear scale)" "100 %" "slot pc.ram-low"
# the address ticks are bare numbers in the axis's one unit
grep -Eq '^(128|256|384)$' "$T/words" || fail "heatmap svg: no address tick in MiB: $(tr '\n' '|' <"$T/words")"
grep -E 'iB$' "$T/words" && fail "heatmap svg: a tick carries its own unit (one unit per axis)"
# 8 GiB: GiB for every tick, the PCI hole's start too (no "3072 MiB" beside "0 GiB").
"$HVT" plot heatmap "$T/big.hvt" -o "$T/big.svg" >/dev/null || fail "plot heatmap big svg"
svg_texts "$T/big.svg" >"$T/words"
assert_contains "$T/words" "guest-physical address (GiB)" "PCI hole, 1.00 GiB (not to scale)"
grep -qx 3 "$T/words" || fail "big.svg: the PCI hole's start is not tick 3 (GiB): $(tr '\n' '|' <"$T/words")"
grep -E '^[0-9.]+ [KMGT]?i?B$' "$T/words" && fail "big.svg: a tick in a unit of its own"
# The selection in the subtitle: intervals, their times, the GFNs of --range.
"$HVT" plot heatmap "$T/s.hvt" -o "$T/z.svg" --range "$b_first-$c_last" --from 11 --to 20 >/dev/null ||
	fail "plot heatmap svg zoomed"
svg_texts "$T/z.svg" >"$T/words"
assert_contains "$T/words" "intervals 11-20 (10.000-20.000 s) · GFNs $(printf '0x%x' "$b_first")-$c_last"
# Sparse densities 8x apart (dirty-log: 1/8 of a's pages written, 1/64 of b's, all of c), at a height that
# makes a row 256 pages (arrays lie on 2 MiB, so every row is wholly in an array or out): the shares drawn
# are exactly 1/64 to 1, two decades less a bit, so a log scale, said so with its decades; each array at
# the colour of its share on that scale (the square-root ramp drew a and b as nearly equal pinks, 46 levels
# of green apart), c the full colour, and the bar's top the written colour, its foot the palest.
"$TOOLS/synth_arrays" -o "$T/st.hvt" --memory 512M --intervals 10 --noise-written 0 --mode dirty-log \
	--stride-written 8 >/dev/null || fail "synth_arrays --stride-written"
"$HVT" plot heatmap "$T/st.hvt" -o "$T/st.svg" --height 656 >/dev/null || fail "plot heatmap stride svg"
svg_texts "$T/st.svg" >"$T/words"
assert_contains "$T/words" "(log scale)" "1.6 %" "10 %" "100 %"
grep -q 'accessed' "$T/words" && fail "dirty-log heatmap names accessed pages"
g=$("$HVT" plot heatmap "$T/st.hvt" -o "$T/st.png" --height 656) || fail "plot heatmap stride"
echo "$g"
[[ $g == *" 512 rows of 256 pages,"*"shares 0.015625-1 on a log scale" ]] || fail "stride: not rows of 256 pages, shares 1/64-1 on a log scale: $g"
# The colour of share S on the log scale 1/64..1, as plot/plot_heatmap.c mixes it with #cc1a1a.
written_at() {
	awk -v s="$1" 'BEGIN { v = 0.15 + 0.85 * log(s * 64) / log(64); split("0.8 0.1 0.1", c, " ")
		for (k = 1; k <= 3; k++) printf "%02x", int(255 * (1 - v + v * c[k]) + 0.5); print "" }'
}
near() { # "#rrggbb" "rrggbb": each channel within 1
	awk -v a="${1#\#}" -v b="$2" 'function h(x) { return index("0123456789abcdef", substr(x, 1, 1)) * 16 + index("0123456789abcdef", substr(x, 2, 1)) - 17 }
		BEGIN { for (k = 1; k <= 5; k += 2) { d = h(substr(a, k, 2)) - h(substr(b, k, 2)); if (d > 1 || d < -1) exit 1 } }'
}
"$CHECK" --png "$T/st.png" --geometry "$g" --width 1200 --height 656 --colour any \
	--band "$a_first-$a_last@0-10" --band "$b_first-$b_last@0-10" >"$T/colours" || fail "check_heatmap --colour any"
cat "$T/colours"
pa=$(awk '$2 == "1:" {print $3}' "$T/colours")
pb=$(awk '$2 == "2:" {print $3}' "$T/colours")
near "$pa" "$(written_at 0.125)" || fail "a (1/8 written) is $pa, not #$(written_at 0.125) of the log scale"
near "$pb" "$(written_at 0.015625)" || fail "b (1/64 written) is $pb, not #$(written_at 0.015625) of the log scale"
[ $((16#${pb:3:2} - 16#${pa:3:2})) -ge 90 ] || fail "a and b are not far apart in colour: $pa vs $pb"
"$CHECK" --png "$T/st.png" --geometry "$g" --width 1200 --height 656 --band "$c_first-$c_last@0-10" ||
	fail "c, wholly written, is not the full written colour on a log scale"
# The bar itself in the PNG, where the line says it is: its top pixel row the written colour, its foot
# the palest colour of the scale.
read -r bx by bh <<<"$(sed -E 's/.*colour bar x=([0-9]+) y=([0-9]+) w=12 h=([0-9]+).*/\1 \2 \3/' <<<"$g")"
top=$(png_pixel "$T/st.png" 1200 656 $((bx + 6)) "$by")
foot=$(png_pixel "$T/st.png" 1200 656 $((bx + 6)) $((by + bh - 1)))
[ "$top" = "#cc1a1a" ] || fail "the colour bar's top is $top, not the written colour #cc1a1a"
near "$foot" "$(written_at 0.015625)" || fail "the colour bar's foot is $foot, not the palest #$(written_at 0.015625)"
for k in bw wss cdf; do
	"$HVT" plot $k "$T/s.hvt" -o "$T/$k.png" --width 900 --height 600 >"$T/out" || fail "plot $k"
	assert_contains "$T/out" "wrote $T/$k.png: $k 900x600 px"
	"$CHECK" --png "$T/$k.png" --geometry "area x=0 y=0 w=1 h=1; 1 rows of 1 pages, bottom to top: 0x0-0x1@0+1; time 0-1 s" \
		--width 900 --height 600 >/dev/null || fail "$k.png is not a 900x600 PNG"
done

# Several runs side by side (wss, cdf): one colour per run, named in the legend, each line at its run's
# truth: c is 16 MiB in run 1 (mode ad; its accessed line at 48 MiB in the add phase, where this looks),
# 32 MiB in run 2 (mode dirty-log: no accessed line, and said so).
"$TOOLS/synth_arrays" -o "$T/vm-1.hvt" --memory 512M --array 16M --intervals 10 --noise-written 0 \
	--noise-accessed 0 >/dev/null || fail "synth_arrays vm-1"
"$TOOLS/synth_arrays" -o "$T/vm-2.hvt" --memory 512M --array 32M --intervals 10 --noise-written 0 \
	--mode dirty-log >/dev/null || fail "synth_arrays vm-2"
"$HVT" plot wss "$T"/vm-*.hvt -o "$T/runs.svg" >/dev/null || fail "plot wss of two runs (svg)"
svg_texts "$T/runs.svg" >"$T/words"
assert_contains "$T/words" "Working set per interval, runs side by side" "2 runs, each from its own start: vm-1.hvt (mode ad" \
	"vm-2.hvt (mode dirty-log" "vm-1.hvt: written" "vm-1.hvt: accessed (dashed)" "vm-2.hvt: written" \
	"no accessed pages in vm-2.hvt" "time since each run's start (s)"
grep -q 'vm-2.hvt: accessed' "$T/words" && fail "a dirty-log run has an accessed line"
g=$("$HVT" plot wss "$T"/vm-*.hvt -o "$T/runs.png") || fail "plot wss of two runs"
echo "$g"
read -r x1 y1 <<<"$(line_pixel "$g" 7.5 16)"
read -r x2 y2 <<<"$(line_pixel "$g" 7.5 32)"
p1=$(png_pixel "$T/runs.png" 1200 720 "$x1" "$y1")
p2=$(png_pixel "$T/runs.png" 1200 720 "$x2" "$y2")
above=$(png_pixel "$T/runs.png" 1200 720 "$x2" $((y2 - 12)))
echo "run 1 at ($x1,$y1) $p1; run 2 at ($x2,$y2) $p2; above run 2 $above"
grey() { [[ ${1:1:2} == "${1:3:2}" && ${1:3:2} == "${1:5:2}" ]]; }
grey "$p1" && fail "no run's colour where run 1's line (16 MiB written) should be: $p1"
grey "$p2" && fail "no run's colour where run 2's line (32 MiB written) should be: $p2"
[ "$p1" != "$p2" ] || fail "the two runs share a colour: $p1"
[ "$above" != "$p2" ] || fail "run 2's colour 12 px above its line: the line is not at its truth"
"$HVT" plot cdf "$T"/vm-*.hvt -o "$T/runs.svg" >/dev/null || fail "plot cdf of two runs"
svg_texts "$T/runs.svg" >"$T/words"
assert_contains "$T/words" "Write concentration, runs side by side" "vm-1.hvt, written: share of page-writes" \
	"vm-1.hvt, accessed (dashed): share of page-accesses" "vm-2.hvt, written: share of page-writes"
# heatmap and bw draw one trace, and say so; a bad trace among several: one line, exit 2, no picture.
"$TOOLS/synth_arrays" -o "$T/empty.hvt" --intervals 0 >/dev/null || fail "synth_arrays --intervals 0"
expect 2 "heatmap draws one trace (2 given); wss and cdf draw several" "$HVT" plot heatmap "$T"/vm-*.hvt -o "$T/x.png"
expect 2 "bw draws one trace (2 given)" "$HVT" plot bw "$T"/vm-*.hvt -o "$T/x.png"
expect 2 "$T/empty.hvt: the trace holds no interval" "$HVT" plot wss "$T/vm-1.hvt" "$T/empty.hvt" -o "$T/x.png"
expect 2 "cannot open" "$HVT" plot cdf "$T/vm-1.hvt" "$T/none.hvt" -o "$T/x.png"
[ ! -e "$T/x.png" ] || fail "a refused plot of several runs left $T/x.png behind"

# Bad input: one line, exit 2, nothing left behind.
"$TOOLS/synth_arrays" -o "$T/empty.hvt" --intervals 0 >/dev/null || fail "synth_arrays --intervals 0"
"$TOOLS/synth_arrays" -o "$T/dl.hvt" --intervals 4 --mode dirty-log >/dev/null || fail "synth_arrays dirty-log"
expect 2 "the trace holds no interval" "$HVT" plot heatmap "$T/empty.hvt" -o "$T/x.png"
expect 2 "outside the guest's RAM" "$HVT" plot heatmap "$T/s.hvt" -o "$T/x.png" --range 0x10000000-0x10000fff
expect 2 "select no interval" "$HVT" plot wss "$T/s.hvt" -o "$T/x.png" --from 30 --to 40
# bw without bandwidth: the cause (no bandwidth source), not the mode, which a resctrl or channel trace in
# mode dirty-log shares and which draws.
expect 2 "no DRAM bandwidth in this trace: it was recorded without a bandwidth source" "$HVT" plot bw "$T/dl.hvt" -o "$T/x.png"
grep -q 'mode' "$T/err" && fail "the bw refusal blames the mode: $(cat "$T/err")"
"$TOOLS/synth_arrays" -o "$T/dlbw.hvt" --intervals 4 --mode dirty-log --channels 2 >/dev/null || fail "synth_arrays dirty-log bw"
"$HVT" plot bw "$T/dlbw.hvt" -o "$T/dlbw.png" >/dev/null || fail "plot bw of a dirty-log trace with bandwidth"
expect 2 "cannot create /nonexistent/x.png" "$HVT" plot heatmap "$T/s.hvt" -o /nonexistent/x.png
expect 2 "the name must end in .png or .svg" "$HVT" plot heatmap "$T/s.hvt" -o "$T/x.jpg"
expect 2 "not GFN-GFN" "$HVT" plot heatmap "$T/s.hvt" -o "$T/x.png" --range 5-2
expect 2 "expected heatmap, bw, wss or cdf" "$HVT" plot pie "$T/s.hvt" -o "$T/x.png"
[ ! -e "$T/x.png" ] || fail "a refused plot left $T/x.png behind"
# Mode dirty-log: the wss picture says accessed sets are not available (it is drawn, exit 0), and wss and
# cdf name what they show, written pages, never pages touched or page-accesses.
"$HVT" plot wss "$T/dl.hvt" -o "$T/dl.png" >/dev/null || fail "plot wss dirty-log"
"$HVT" plot wss "$T/dl.hvt" -o "$T/dl.svg" >/dev/null || fail "plot wss dirty-log svg"
svg_texts "$T/dl.svg" >"$T/words"
assert_contains "$T/words" "Pages written per interval (written pages only)" "pages written in the interval (MiB)" \
	"accessed pages: not available (mode dirty-log)"
grep -q 'touched' "$T/words" && fail "dirty-log wss says pages touched: $(tr '\n' '|' <"$T/words")"
"$HVT" plot cdf "$T/dl.hvt" -o "$T/dl.svg" >/dev/null || fail "plot cdf dirty-log svg"
svg_texts "$T/dl.svg" >"$T/words"
assert_contains "$T/words" "written pages, most-written first (% of the pages ever written)" "page-writes they take (%)"
grep 'access' "$T/words" | grep -qv 'not available' && fail "dirty-log cdf names page-accesses: $(tr '\n' '|' <"$T/words")"
"$HVT" plot cdf "$T/s.hvt" -o "$T/ad.svg" >/dev/null || fail "plot cdf ad svg"
svg_texts "$T/ad.svg" >"$T/words"
assert_contains "$T/words" "page-writes (page-accesses) they take (%)" "accessed: share of page-accesses"

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
