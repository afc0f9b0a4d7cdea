#!/bin/sh
# Figures for issue 11's speed goals (printed, not asserted): a synthetic 1-hour trace of a 16 GiB guest with
# accessed and written sets (3,600 intervals, two bandwidth channels; tests/tools/synth_trace), then the time
# of `report` with every analysis, of the same pass with only decoding (the floor), the rate of
# `export --jsonl`, and the size and time of `export --damo` (issue 23: at most 10 times the trace). Also
# the stress case without locality between intervals, and the shape of a kernel build (issue 25: synth_trace
# --shape kbuild, eight channels), with `report --no-windows`, `plot heatmap` and `report --html`. Each line
# gives wall seconds, the CPU seconds (user + system: the machine may be shared) and the peak resident memory
# (tests/tools/maxrss).
set -u
build=${1:?usage: bench/report_speed.sh BUILD_DIR}
hvt=$build/bin/hvmtrace
syn=$build/tests/tools/synth_trace
maxrss=$build/tests/tools/maxrss
dir=$(mktemp -d /tmp/hvt-bench-report.XXXXXX)
trap 'rm -rf "$dir"' EXIT
for t in "$syn" "$maxrss"; do
	[ -x "$t" ] || { echo "report_speed: no $t (make bench-parts builds it)" >&2; exit 1; }
done

secs() { # COMMAND...: wall seconds, the output discarded
	start=$(date +%s.%N)
	"$@" >/dev/null 2>&1
	awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.2f", a - b }'
}

# costs COMMAND...: wall and CPU (user + system) seconds and peak resident MB, the output discarded
costs() {
	start=$(date +%s.%N)
	"$maxrss" -c "$dir/cpu" "$dir/rss" "$@" >/dev/null 2>&1
	rc=$?
	awk -v a="$(date +%s.%N)" -v b="$start" -v cpu="$(cat "$dir/cpu")" -v kb="$(cat "$dir/rss")" -v rc=$rc \
		'BEGIN { split(cpu, c, " "); printf "%.2f s (CPU %.2f s), %.0f MB%s", a - b, c[1] + c[2],
			kb * 1024 / 1e6, rc ? " (exit " rc ")" : "" }'
}

for kind in locality no-locality kbuild; do
	case $kind in
	kbuild) "$syn" -o "$dir/t.hvt" --shape kbuild --bandwidth || exit 1 ;;
	no-locality) "$syn" -o "$dir/t.hvt" --guest 16G --intervals 3600 --runs 17000 --bandwidth --no-locality || exit 1 ;;
	*) "$syn" -o "$dir/t.hvt" --guest 16G --intervals 3600 --runs 17000 --bandwidth || exit 1 ;;
	esac
	size=$(stat -c %s "$dir/t.hvt")
	if [ $kind = kbuild ]; then
		echo "trace (kernel build shape): 3600 intervals, 16 GiB guest, 8 channels, $((size / 1000000)) MB"
	else
		echo "trace ($kind): 3600 intervals, 16 GiB guest, $((size / 1000000)) MB"
	fi
	echo "  report, every analysis (text):      $(costs "$hvt" report "$dir/t.hvt") (goal: under 2 s)"
	echo "  report --json --pages --regions:    $(costs "$hvt" report --json --pages --regions "$dir/t.hvt")"
	if [ $kind = kbuild ]; then # issue 25's goals: 2 s and 100 MB for report (1 s without the windows), 3 s
		# for the heatmap and the HTML
		echo "  report --no-windows:                $(costs "$hvt" report --no-windows "$dir/t.hvt") (goal: 1 s)"
		echo "  report --pages --regions --histogram --energy: $(costs "$hvt" report --pages --regions \
			--histogram --energy "$dir/t.hvt")"
		echo "  plot heatmap:                       $(costs "$hvt" plot heatmap "$dir/t.hvt" -o "$dir/t.png") (goal: 3 s)"
		echo "  report --html:                      $(costs "$hvt" report "$dir/t.hvt" --html "$dir/t.html") (goal: 3 s)"
	fi
	echo "  export --raw (decoding to bitmaps): $(secs "$hvt" export --raw /dev/null "$dir/t.hvt") s"
	t=$(secs "$hvt" export --damo "$dir/t.damo" "$dir/t.hvt")
	out=$(stat -c %s "$dir/t.damo")
	echo "  export --damo (defaults): $((out / 1000)) kB ($(awk -v o="$out" -v s="$size" 'BEGIN { printf "%.2f", o / s }') x the trace) in $t s (goal: at most 10 x)"
	rm -f "$dir/t.damo"
	[ $kind = locality ] || continue
	t=$(secs "$hvt" export --jsonl "$dir/t.jsonl" "$dir/t.hvt")
	out=$(stat -c %s "$dir/t.jsonl")
	echo "  export --jsonl: $((out / 1000000)) MB in $t s = $(awk -v o="$out" -v t="$t" 'BEGIN { printf "%.0f", o / 1e6 / t }') MB/s (goal: 48 MB/s, 3x 16)"
	rm -f "$dir/t.jsonl"
done
