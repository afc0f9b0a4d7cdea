# The pictures of a trace of the array program (tests/guest/array.c), checked against the guest's own
# account of where c lies (its console, as stamp_lines recorded it): `hvmtrace plot heatmap` read back as a
# PNG must show every pixel row made only of c's pages written, in every column inside the two phases
# (one interval of margin either side), both over all RAM and zoomed to c with --range. The pictures are
# kept in $BUILD/test-logs/plots/. And pixels read back: png_pixel, line_pixel. Sourced by tests after
# assert.bash.

# check_array_heatmap TRACE STAMPED-CONSOLE
check_array_heatmap() {
	local trace=$1 console=$ROOT/$BUILD/test-logs/plots/console t0 copy fin from to lo hi g bands=() first count keep=$ROOT/$BUILD/test-logs/plots
	mkdir -p "$keep"
	tr -d '\r' <"$2" >"$console" # a serial console ends its lines with CR LF
	t0=$("$BIN/hvmtrace" export --jsonl - --no-pages "$trace" | head -1 | jq -r .t_start_ns)
	copy=$(awk '$2 == "HVT" && $3 == "PHASE" && $4 == "copy" {print $1; exit}' "$console")
	fin=$(awk '$2 == "HVT" && $3 == "PHASE" && $4 == "done" {print $1; exit}' "$console")
	[ -n "$t0" ] && [ -n "$copy" ] && [ -n "$fin" ] || fail "heatmap: no trace start or no phase stamps"
	from=$(awk -v a="$copy" -v t="$t0" 'BEGIN { printf "%.3f", (a - t) / 1e9 + 1 }')
	to=$(awk -v a="$fin" -v t="$t0" 'BEGIN { printf "%.3f", (a - t) / 1e9 - 1 }')
	while read -r first count; do
		bands+=(--band "$first-$((first + count - 1))@$from-$to")
	done < <(awk '$2 == "HVT" && $3 == "C-RUN" {print $4, $5}' "$console" | sort -k2,2nr | head -200)
	[ ${#bands[@]} -gt 0 ] || fail "heatmap: the console lists no run of c"
	lo=$(awk '$2 == "HVT" && $3 == "C-RUN" {print $4}' "$console" | sort -n | head -1)
	hi=$(awk '$2 == "HVT" && $3 == "C-RUN" {print $4 + $5 - 1}' "$console" | sort -n | tail -1)
	echo "heatmap: c in ${#bands[@]} runs (the 200 longest checked), GFN $lo-$hi, phases $from-$to s"
	g=$("$BIN/hvmtrace" plot heatmap "$trace" -o "$keep/heatmap.png") || fail "plot heatmap"
	echo "$g"
	"$TOOLS/check_heatmap" --png "$keep/heatmap.png" --geometry "$g" --width 1200 --height 720 "${bands[@]}" ||
		fail "heatmap: c is not drawn written at its rows and columns"
	g=$("$BIN/hvmtrace" plot heatmap "$trace" -o "$keep/heatmap-c.png" --range "$lo-$hi") || fail "plot heatmap --range"
	echo "$g"
	"$TOOLS/check_heatmap" --png "$keep/heatmap-c.png" --geometry "$g" --width 1200 --height 720 "${bands[@]}" ||
		fail "heatmap zoomed to c: c is not drawn written at its rows and columns"
	for k in wss cdf; do
		"$BIN/hvmtrace" plot $k "$trace" -o "$keep/$k.png" >/dev/null || fail "plot $k"
	done
}

# png_pixel PNG WIDTH HEIGHT X Y: the colour of one pixel, "#rrggbb" (read back through cairo by
# check_heatmap, which also checks the picture's size).
png_pixel() {
	"$TOOLS/check_heatmap" --png "$1" --width "$2" --height "$3" --colour any \
		--geometry "area x=$4 y=$5 w=1 h=1; 1 rows of 1 pages, bottom to top: 0x0-0x1@0+1; time 0-1 s" \
		--band 0x0-0x0@0-1 | awk '$1 == "band" {print $3}'
}

# line_pixel "PLOT-STDOUT" T V: the pixel (x y) of data point (T, V) of a line chart, from the scales
# `hvmtrace plot wss|cdf|bw` printed.
line_pixel() {
	sed -E 's/.*area x=([0-9]+) y=([0-9]+) w=([0-9]+) h=([0-9]+); x ([0-9.e+-]+)-([0-9.e+-]+); y ([0-9.e+-]+)-([0-9.e+-]+).*/\1 \2 \3 \4 \5 \6 \7 \8/' <<<"$1" |
		awk -v t="$2" -v v="$3" '{ printf "%d %d\n", $1 + (t - $5) / ($6 - $5) * $3, $2 + $4 - (v - $7) / ($8 - $7) * $4 }'
}
