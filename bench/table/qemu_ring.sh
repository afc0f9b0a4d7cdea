#!/bin/bash
# Table section 1, QEMU rows: the patched QEMU's harvest per interval in mode dirty-log and in mode dirty-ring
# (-accel kvm,dirty-ring-size=65536, the largest ring KVM allows) for microvm guests of 4 GiB to 256 GiB whose
# array payload writes the 16384 pages of a 64 MiB array per pass (1.6 % of 4 GiB, 0.1 % of 64 GiB), next to
# the time one copy of the guest's bitmap takes; the tracer's share of a core at 1 s and 100 ms. Every figure
# comes from the trace `record` wrote (harvest_us: from the tracer's request to QEMU's answer).
# usage: bench/table/qemu_ring.sh BUILD_DIR OUT   (appends Markdown rows to OUT)
# QEMU_SIZES overrides the guest sizes (default 4G 64G 256G 1024G: guest RAM is a sparse file on /dev/shm, of
# which the payload touches about 200 MiB), QEMU_MODES the modes (default dirty-log dirty-ring, and past
# 256 GiB dirty-ring only: dirty-log's harvest of 256 GiB already takes longer than the 100 ms runs'
# intervals). HVMTRACE_QEMU_DIR=DIR measures a QEMU built elsewhere (tests/lib/qemu.bash).
set -u
BUILD=${1:?usage: qemu_ring.sh BUILD_DIR OUT}
OUT=${2:?}
HERE=$(dirname "$0")
ROOT=$(cd "$HERE/../.." && pwd)
TOOLS=$BUILD/tests/tools
SIZES=${QEMU_SIZES:-4G 64G 256G 1024G}
row() { printf '| 1 | %s | %s | %s | %s | %s |\n' "$@" >>"$OUT"; }

qdir=${HVMTRACE_QEMU_DIR:-}
[ -n "$qdir" ] || qdir=$("$ROOT/scripts/build-qemu.sh" --check 2>/dev/null) || {
	row "QEMU, dirty-log and dirty-ring" "not measured: the patched QEMU is not built (make qemu)" "" "" ""
	exit 0
}
T=$(mktemp -d)
SHM=$(mktemp -d /dev/shm/hvmtrace-bench.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null; done; rm -rf "$T" "$SHM"' EXIT
ARRAY=64M
source "$HERE/qemu_array.bash"
status=0
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }

# measure SIZE MODE ACCEL: QEMU with SIZE of RAM running the array payload, recorded at 1 s and 100 ms in
# MODE; sets S1 and S2 to trace_stats.py's lines for both, or fails. QEMU quits (or is killed) before it
# returns.
measure() {
	local size=$1 mode=$2 accel=$3 d=$T/$1-$2
	# Trace once the payload's first pass made the array resident: the rows show the steady state, not the
	# first touches.
	qemu_array_start "$1-$2" "$size" "$accel" || { echo "qemu_ring: $QEMU_ERR" >&2; return 1; }
	local iv dur ok=1
	for iv in 1s 100ms; do
		[ $iv = 1s ] && dur=4s || dur=1500ms
		"$BUILD/bin/hvmtrace" record -q --attach "$SOCK" --mode "$mode" --cpu 1 --interval $iv --duration $dur \
			-o "$d/$iv.hvt" 2>"$d/rec-$iv.err" || { ok=0; cat "$d/rec-$iv.err" >&2; }
	done
	"$TOOLS/qmp" "$QMP" '{"execute":"quit"}' >/dev/null
	wait $QEMU_PID 2>/dev/null
	rm -f "$SHM/$1-$2" # the guest's RAM, a few hundred MiB of /dev/shm
	[ $ok = 1 ] && S1=$("$HERE/trace_stats.py" "$BUILD/bin/hvmtrace" "$d/1s.hvt") &&
		S2=$("$HERE/trace_stats.py" "$BUILD/bin/hvmtrace" "$d/100ms.hvt")
}

for size in $SIZES; do
	case $size in *G) ;; *) echo "qemu_ring: QEMU_SIZES: $size is not a size in GiB (4G ...)" >&2; exit 2 ;; esac
	copy=$("$BUILD/bench/bitmap_copy" "$size") || { status=1; row "QEMU $size" "failed: bench/bitmap_copy failed" "" "" ""; continue; }
	copy_ns=$(field ns "$copy")
	total=$((${size%G} << 18))
	for mode in ${QEMU_MODES:-dirty-log dirty-ring}; do
		accel=kvm
		[ $mode = dirty-ring ] && accel=kvm,dirty-ring-size=65536
		case="QEMU microvm ${size%G} GiB, array payload (16384 pages per pass), $mode"
		if [ -z "${QEMU_MODES:-}" ] && [ $mode = dirty-log ] && [ ${size%G} -gt 256 ]; then
			row "$case" "not measured: dirty-log's harvest follows the guest's size, and at 256 GiB already takes longer than a 100 ms interval (the row above); QEMU_MODES=dirty-log runs it" "" "" ""
			continue
		fi
		echo "qemu_ring: $case" >&2
		if ! measure "$size" $mode $accel; then
			status=1
			row "$case" "failed: a run it depends on failed (stderr above)" "" "" ""
			continue
		fi
		s1=$S1 s2=$S2
		awk -v c="$case" -v copy="$copy_ns" -v total="$total" \
			-v h1="$(field harvest_us "$s1")" -v c1="$(field tracer_cpu_us "$s1")" -v w1="$(field written "$s1")" \
			-v d1="$(field duration_s "$s1")" -v h2="$(field harvest_us "$s2")" -v c2="$(field tracer_cpu_us "$s2")" \
			-v w2="$(field written "$s2")" -v d2="$(field duration_s "$s2")" -v out="$OUT" 'BEGIN {
			us = h1 + c1
			printf "| 1 | %s | harvest %.0f µs + tracer CPU %.0f µs = %.0f µs per 1 s interval | bitmap copy %.1f µs | %.0f× | harvest %.0f µs at 100 ms; tracer %.2f %% / %.2f %% of a core at 1 s / 100 ms (harvest %.2f %% / %.2f %%); written per interval %d (%.3f %%) at 1 s, %d at 100 ms |\n", \
				c, h1, c1, us, copy / 1e3, us * 1e3 / copy, h2, 100 * c1 / (d1 * 1e6), 100 * c2 / (d2 * 1e6), \
				100 * h1 / (d1 * 1e6), 100 * h2 / (d2 * 1e6), w1, 100 * w1 / total, w2 >> out }'
	done
done
exit $status
