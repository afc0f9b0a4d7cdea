#!/bin/bash
# The pictures on a synthetic 1-hour trace of a 16 GiB guest with accessed and written sets (3,600 intervals
# of 1 s, about 130 MB, written through the trace writer by tests/tools/synth_arrays: arrays of 1 GiB,
# 2,500 written and 20,000 read random pages per interval, 4 channels). Prints: `plot heatmap`'s time
# (goal under 5 s), `report --html`'s time and file size (goal under 50 MB), and the time headless Chromium
# takes from navigation to the drawn page (goal under 3 s). Measures; asserts nothing.
# usage: bench/pictures.sh BUILD_DIR
set -u
BUILD=${1:?usage: bench/pictures.sh BUILD_DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
HVT=$BUILD/bin/hvmtrace
SYNTH=$BUILD/tests/tools/synth_arrays
[ -x "$SYNTH" ] || { echo "no $SYNTH (make bench builds it)"; exit 1; }
T=$(mktemp -d)
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT

start=$(date +%s.%N)
"$SYNTH" -o "$T/1h-16g.hvt" --memory 16G --intervals 3600 --channels 4 --noise-written 2500 \
	--noise-accessed 20000 >/dev/null || exit 1
printf 'synthetic trace: %d bytes, %.1f s to write\n' "$(stat -c %s "$T/1h-16g.hvt")" \
	"$(awk "BEGIN { print $(date +%s.%N) - $start }")"

# secs COMMAND...: wall seconds of one run
secs() {
	local s
	s=$(date +%s.%N)
	"$@" >/dev/null || return 1
	awk "BEGIN { print $(date +%s.%N) - $s }"
}
for run in 1 2 3; do
	printf 'plot heatmap, run %d: %.2f s (goal < 5 s)\n' $run "$(secs "$HVT" plot heatmap "$T/1h-16g.hvt" -o "$T/h.png")"
done
for run in 1 2; do
	printf 'report --html, run %d: %.2f s\n' $run "$(secs "$HVT" report "$T/1h-16g.hvt" --html "$T/r.html")"
done
printf 'report --html: %d bytes (%.1f MB; goal < 50 MB)\n' "$(stat -c %s "$T/r.html")" \
	"$(awk "BEGIN { print $(stat -c %s "$T/r.html") / 1e6 }")"
if command -v chromium >/dev/null && command -v python3 >/dev/null; then
	mkdir -p "$T/profile" "$T/shots"
	user=()
	[ "$(id -u)" = 0 ] && user=(--user nobody) && chown nobody "$T/profile"
	chmod 644 "$T/r.html"
	for run in 1 2 3; do
		printf 'headless Chromium, run %d: ' $run
		python3 "$ROOT/tests/tools/check_html.py" --open-only --html "$T/r.html" --shots "$T/shots" \
			--profile "$T/profile" "${user[@]}" | sed 's/$/ (goal < 3 s)/'
	done
else
	echo "headless Chromium: not installed (scripts/install-deps.sh): skipped"
fi
