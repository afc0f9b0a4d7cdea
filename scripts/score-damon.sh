#!/bin/bash
# make score: how wrong is DAMON? Boots the built-in Linux guest (scripts/guest-workloads.sh: Debian's 6.12
# kernel, under TCG in the patched QEMU) running the array program, then the build-like load, with DAMON
# recording inside it
# (tests/guest/damon-record.sh: paddr, through sysfs and the damon_aggregated tracepoint), traces the same
# run with `hvmtrace record` (mode dirty-log: the written pages, exactly), then scores the record against
# the trace with `hvmtrace score` (docs/score.md). A dirty-log trace scores DAMON's recall of the written
# pages and its working set against theirs; precision needs mode ad (not under TCG).
#   scripts/score-damon.sh [BUILD]   (BUILD: a build directory with bin/, tests/tools/ and guest/; default build)
#   DAMON="S,A,MIN,MAX ..."  DAMON's attributes, one run per set: sampling and aggregation interval (us),
#                            minimum and maximum regions (default: DAMON's defaults 5000,100000,10,1000,
#                            then at most 20 regions (fewer than it keeps unbounded here), then 20 ms
#                            sampling and 1 s aggregation)
#   INTERVAL=DUR             the trace's interval (default 20ms: a few per aggregation window)
#   SIZE=BYTES PHASE=SECS    the array program's arrays and phases (default 32 MiB, 6 s)
#   LOADS="array build"      the workloads, each with every attribute set: the array program, and the
#                            build-like load (tests/guest/buildload.c: make, cc1, as, ld) for BUILD_SECS
#                            (default 12) seconds with 2 parallel compilations
#   OUT=DIR                  where the traces, records, consoles and scores go (default score-out)
# Clocks: the guest writes a trace marker and then prints "HVT DAMON-SYNC start" on its console, which the
# host stamps with its CLOCK_MONOTONIC (tests/tools/stamp_lines), five times 50 ms apart; the record's
# times (the guest's CLOCK_MONOTONIC) are moved by the smallest difference (--record-clock trace --offset). The same is done at the end,
# and the two offsets' difference is printed: the alignment's error, drift and console latency together.
# Each run's table is printed as it ends (and kept in OUT/run-S-A-MIN-MAX/), with the same windows split
# into the array c and the rest (scripts/score-damon-split.py: which misses are the workload's, which the
# kernel's and the recorder's own), then a summary: one line per
# set with its overall figures, DAMON's and the written pages per window as means.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
DAMON=${DAMON:-5000,100000,10,1000 5000,100000,10,20 20000,1000000,10,1000}
INTERVAL=${INTERVAL:-20ms}
SIZE=${SIZE:-$((32 << 20))}
PHASE=${PHASE:-6}
LOADS=${LOADS:-array build}
BUILD_SECS=${BUILD_SECS:-12}
OUT=${OUT:-score-out}
die() {
	echo "score-damon: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] || die "run as root (the guest's initramfs needs /dev/console)"
for f in bin/hvmtrace tests/tools/stamp_lines guest/array guest/buildload; do
	[ -x "$build/$f" ] || die "$build/$f is not built (make score builds it)"
done
qemu_dir=$(scripts/build-qemu.sh --check) || die "the patched QEMU is not built: make qemu"
{ read -r kernel; read -r initrd; } < <(scripts/guest-workloads.sh "$build")
grep -q '^CONFIG_DAMON_PADDR=y' "$(dirname "$kernel")/config" &&
	grep -q '^CONFIG_DAMON_SYSFS=y' "$(dirname "$kernel")/config" ||
	die "the guest kernel $(dirname "$kernel") lacks CONFIG_DAMON_PADDR or CONFIG_DAMON_SYSFS"
mkdir -p "$OUT"

# sync_offset CONSOLE RECORD NAME: the guest->host clock offset at the sync point NAME: the smallest of
# (host stamp - guest time) over its repetitions, the k-th console line ("NS HVT DAMON-SYNC NAME") paired
# with the k-th marker in the record ("# sync NAME NS"): a line's latency only adds. Empty if either is
# missing.
sync_offset() {
	awk -v n="$3" '{ sub(/\r$/, "") }
		FILENAME == ARGV[1] && $2 == "HVT" && $3 == "DAMON-SYNC" && $4 == n { h[++nh] = $1 }
		FILENAME == ARGV[2] && $1 == "#" && $2 == "sync" && $3 == n { g[++ng] = $4 }
		END {
			k = nh < ng ? nh : ng
			for (i = 1; i <= k; i++)
				if (i == 1 || h[i] - g[i] < best) best = h[i] - g[i]
			if (k) printf "%.0f\n", best
		}' "$1" "$2"
}

one_run() { # LOAD ATTRS
	local load=$1 attrs=$2 d=$OUT/run-$1-${2//,/-} qemu rc=0 run
	rm -rf "$d"
	mkdir -p "$d"
	case $load in
	array)
		run="hvt.run=array hvt.size=$SIZE hvt.phase=$PHASE"
		echo "== DAMON sample,aggr(us),min,max = $attrs: array of $SIZE bytes, ${PHASE}s copy then ${PHASE}s add"
		;;
	build)
		run="hvt.run=build hvt.seconds=$BUILD_SECS hvt.jobs=2"
		echo "== DAMON sample,aggr(us),min,max = $attrs: build-like load, ${BUILD_SECS}s, 2 compilations at a time"
		;;
	*) die "LOADS: '$load': expected array or build" ;;
	esac
	nice timeout 600 "$qemu_dir/qemu-system-x86_64" -L "$qemu_dir/optionrom" -L /usr/share/seabios -M pc \
		-accel tcg -cpu max -m 512M -smp 1 -kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 quiet panic=-1 $run hvt.damon=$attrs" \
		-no-reboot -nic none -display none -monitor none -serial stdio -serial "file:$d/damon.raw" \
		-object "hvmtrace,id=t0,path=$d/vm.sock" 2>"$d/qemu.err" </dev/null \
		> >(nice "$build/tests/tools/stamp_lines" >"$d/console") &
	qemu=$!
	for _ in $(seq 600); do [ -S "$d/vm.sock" ] && break; sleep 0.05; done
	[ -S "$d/vm.sock" ] || { kill "$qemu" 2>/dev/null; die "QEMU did not start: $(cat "$d/qemu.err")"; }
	nice "$build/bin/hvmtrace" record --attach "$d/vm.sock" --interval "$INTERVAL" -q -o "$d/trace.hvt" \
		2>"$d/record.err" || rc=$?
	wait "$qemu" || true
	[ $rc = 0 ] || die "hvmtrace record failed: $(tail -n1 "$d/record.err")"
	sleep 0.2 # the console's stamper drains its pipe
	grep -q 'HVT EXIT 0' "$d/console" || die "the guest's run failed (see $d/console)"
	tr -d '\r' <"$d/damon.raw" >"$d/damon.rec"
	local off off_end snaps
	off=$(sync_offset "$d/console" "$d/damon.rec" start) off_end=$(sync_offset "$d/console" "$d/damon.rec" end)
	[ -n "$off" ] && [ -n "$off_end" ] || die "a sync point is missing in $d/console or $d/damon.rec"
	snaps=$(awk '$1 ~ /^[0-9]/ { t[$1] = 1 } END { print length(t) }' "$d/damon.rec")
	echo "   $snaps snapshots, $(grep -c '^[0-9]' "$d/damon.rec") regions; guest->host offset $off ns at the start," \
		"$((off_end - off)) ns more at the end (the alignment's error: drift, console latency)"
	local o=${off}ns
	[ $off != 0 ] || o=0
	nice "$build/bin/hvmtrace" score "$d/trace.hvt" --damon "$d/damon.rec" --record-clock trace --offset "$o" \
		>"$d/score.txt" || die "hvmtrace score failed"
	nice "$build/bin/hvmtrace" score "$d/trace.hvt" --damon "$d/damon.rec" --record-clock trace --offset "$o" \
		--json >"$d/score.json"
	cat "$d/score.txt"
	# the split by array c: the array program's only
	[ "$load" != array ] || nice python3 scripts/score-damon-split.py "$d" "$build/bin/hvmtrace" | tee "$d/split.txt"
	echo
}

for attrs in $DAMON; do
	[[ $attrs =~ ^[0-9]+,[0-9]+,[0-9]+,[0-9]+$ ]] || die "DAMON set '$attrs': expected S,A,MIN,MAX (us, us, regions, regions)"
done
for load in $LOADS; do
	for attrs in $DAMON; do
		one_run "$load" "$attrs"
	done
done

# One line per attribute set: the overall figures of each run (score.json's "overall").
echo "== summary (written pages: recall, hot overlap and the working set's error against them; DAMON's"
echo "   working set holds the pages it saw read too, so wss_err > 0 is expected)"
printf '%-6s %-22s %6s %10s %12s %12s %8s %8s %9s\n' load "sample,aggr,min,max" windows "ivs/window" \
	damon_pages written recall hot wss_err
for load in $LOADS; do for attrs in $DAMON; do
	jq -r --arg a "$attrs" '.overall as $o | [$a, $o.windows, ((.intervals - .intervals_outside) / $o.windows),
		($o.damon_pages / $o.windows), ($o.true_pages / $o.windows), $o.recall, $o.hot_overlap, $o.wss_error]
		| "\(.[0]) \(.[1]) \(.[2]) \(.[3]) \(.[4]) \(.[5]) \(.[6]) \(.[7])"' "$OUT/run-$load-${attrs//,/-}/score.json" |
		while read -r a w i d t r h e; do
			printf '%-6s %-22s %6d %10.1f %12.0f %12.0f %8.4f %8.4f %+9.4f\n' "$load" "$a" "$w" "$i" "$d" "$t" \
				"$r" "$h" "$e"
		done
done; done
