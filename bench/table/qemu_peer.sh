#!/bin/bash
# Table section 3: the peer, QEMU's own `calc-dirty-rate` (QMP), on the guest and load hvmtrace traces, under
# the patched QEMU (-M microvm under KVM, the PVH phase payload running the array program: every pass writes
# the 16384 pages of a 64 MiB array with its pass number). Its modes dirty-bitmap, page-sampling and, where
# KVM offers a dirty ring, dirty-ring; the rate each reports next to hvmtrace's exact written pages/s, and
# each one's CPU cost next to hvmtrace's.
#   - page-sampling runs while `record` traces at 1 s: the same seconds.
#   - dirty-bitmap runs with no tracer attached: the patched QEMU refuses it while one is (the two would
#     clear each other's dirty bits: docs/hardware-notes.md §11.2). The load is steady, so hvmtrace's rate
#     of the seconds before is the reference.
#   - dirty-ring needs QEMU started with a dirty ring (-accel kvm,dirty-ring-size=N): a second QEMU, traced
#     at 1 s around the measurement when the hvmtrace object works with the ring.
# Cost: CPU time (perf stat task-clock) of QEMU's threads other than its vCPUs during a measurement, minus
# the same over an equal window without one; hvmtrace's is record's CPU plus what attaching added to QEMU's
# non-vCPU threads (its harvest thread), per second.
# Error: each measurement's query-dirty-rate reply is saved and scored by `hvmtrace score --dirty-rate`
# (docs/score.md) against a trace: page-sampling's against the trace of the same seconds; dirty-bitmap's
# and dirty-ring's, taken untraced, moved by --offset onto a whole interval of the trace beside them (the
# load is steady). BENCH_KEEP=DIR keeps the replies, the traces and score's JSON there.
# usage: bench/table/qemu_peer.sh BUILD_DIR OUT   (appends Markdown rows to OUT)
set -u
BUILD=${1:?usage: qemu_peer.sh BUILD_DIR OUT}
OUT=${2:?}
HERE=$(dirname "$0")
ROOT=$(cd "$HERE/../.." && pwd)
TOOLS=$BUILD/tests/tools
ARRAY=64M
WINDOW=1.5 # seconds of each CPU measurement; a 1 s calc-dirty-rate fits inside
row() { printf '| 3 | %s | %s | %s | %s | %s |\n' "$@" >>"$OUT"; }

qdir=$("$ROOT/scripts/build-qemu.sh" --check 2>/dev/null) || {
	row "calc-dirty-rate, every mode" "not measured: the patched QEMU is not built (make qemu)" "" "" ""
	exit 0
}
command -v perf >/dev/null || {
	row "calc-dirty-rate, every mode" "not measured: perf (linux-perf) is not installed; it measures the CPU cost" "" "" ""
	exit 0
}
T=$(mktemp -d)
SHM=$(mktemp -d /dev/shm/hvmtrace-bench.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null; done; rm -rf "$T" "$SHM"' EXIT
fail() {
	echo "qemu_peer: $*" >&2
	row "calc-dirty-rate" "failed: $*" "" "" ""
	exit 1
}

source "$HERE/qemu_array.bash"

# start_qemu NAME [ACCEL OPTIONS]: QEMU with 4 GiB, the array payload running a second past its first pass;
# sets QEMU_PID, QMP, SOCK.
start_qemu() {
	qemu_array_start "$1" 4G "kvm$2" || fail "$QEMU_ERR"
	sleep 1
}

stop_qemu() {
	"$TOOLS/qmp" "$QMP" '{"execute":"quit"}' >/dev/null
	wait $QEMU_PID 2>/dev/null
}

# cpu_ms [COMMAND...]: "OTHER HVT": ms of CPU over $WINDOW s, while COMMAND runs (started with the
# window), of QEMU's hvmtrace thread (HVT) and of its threads but that and the vCPUs (OTHER: the main loop,
# and calc-dirty-rate's thread, whose time perf counts into the thread that created it).
cpu_ms() {
	local f=$T/perf.$RANDOM
	perf stat -e task-clock --per-thread -p $QEMU_PID -x, -o "$f" -- sleep $WINDOW &
	local p=$!
	sleep 0.05
	[ $# -gt 0 ] && "$@"
	wait $p || fail "perf stat on QEMU failed: $(cat "$f")"
	[ -n "${PERF_KEEP:-}" ] && cat "$f" >&2
	# perf names every thread by the process's name; QEMU names its threads (-name debug-threads=on).
	local names
	names=$(for c in /proc/$QEMU_PID/task/*/comm; do printf '%s=%s\n' "$(basename "$(dirname "$c")")" "$(cat "$c")"; done)
	awk -F, -v names="$names" 'BEGIN { n = split(names, l, "\n"); for (i = 1; i <= n; i++) { k = index(l[i], "="); name[substr(l[i], 1, k - 1)] = substr(l[i], k + 1) } }
		$4 == "task-clock" && $2 ~ /^[0-9.]+$/ {
		tid = $1; sub(/.*-/, "", tid)
		if (name[tid] == "hvmtrace") hvt += $2; else if (name[tid] !~ /^CPU [0-9]+\/KVM$/) other += $2 }
		END { printf "%.1f %.1f", other, hvt }' "$f"
}

# calc MODE [ARGS]: runs calc-dirty-rate for 1 s and waits for its result; sets RATE (MiB/s) and saves the
# measured reply, with calc-time in ms, to $T/MODE.jsonl.
calc() {
	local r
	r=$("$TOOLS/qmp" "$QMP" "{\"execute\":\"calc-dirty-rate\",\"arguments\":{\"calc-time\":1,\"mode\":\"$1\"${2:-}}}") ||
		fail "calc-dirty-rate $1: $r"
	grep -q '"error"' <<<"$r" && fail "calc-dirty-rate $1: $r"
	for _ in $(seq 100); do
		r=$("$TOOLS/qmp" "$QMP" '{"execute":"query-dirty-rate","arguments":{"calc-time-unit":"millisecond"}}')
		grep -q '"status": *"measured"' <<<"$r" && break
		sleep 0.05
	done
	RATE=$(sed -n 's/.*"dirty-rate": *\([0-9]*\).*/\1/p' <<<"$r")
	[ -n "$RATE" ] || fail "calc-dirty-rate $1 gave no rate: $r"
	grep '"status": *"measured"' <<<"$r" >"$T/$1.jsonl"
}

# score_rate TRACE MODE: "TRUE_MIB_S ERROR INTERVALS" of $T/MODE.jsonl by hvmtrace score --dirty-rate against TRACE;
# a measurement outside the trace is moved (--offset) onto its second-to-last interval (the last may be cut
# short), its window starting a quarter of that interval in, so that it holds that interval's midpoint.
score_rate() {
	local trace=$1 rep=$T/$2.jsonl off
	off=$("$BUILD/bin/hvmtrace" export --csv - "$trace" | python3 -c '
import csv, datetime, json, sys
rows = list(csv.DictReader(sys.stdin))
wall = lambda r: datetime.datetime.strptime(r["wall_start"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
r = json.loads(open(sys.argv[1]).read())["return"]
lo, hi = r["start-time"] + 0.5, r["start-time"] + 0.5 + r["calc-time"] / 1e3
if wall(rows[0]) <= lo and hi <= wall(rows[-1]) + float(rows[-1]["duration_s"]):
    print("0")
else:
    iv = rows[-2] if len(rows) > 1 else rows[-1]
    print("%dms" % round((wall(iv) + float(iv["duration_s"]) / 4 - lo) * 1e3))' "$rep") ||
		fail "the window of $2's measurement"
	"$BUILD/bin/hvmtrace" score "$trace" --dirty-rate "$rep" --offset "$off" --json >"$T/$2.score.json" ||
		fail "hvmtrace score --dirty-rate of $2's measurement"
	if [ -n "${BENCH_KEEP:-}" ]; then
		mkdir -p "$BENCH_KEEP" && cp "$rep" "$T/$2.score.json" "$trace" "$BENCH_KEEP/"
	fi
	python3 -c 'import json, sys; m = json.load(sys.stdin)["measurements"][0]; print("%.3f %.6f %d" % (m["true_mib_s"], m["error"], m["intervals"]))' <"$T/$2.score.json"
}

# record_bg NAME: record at 1 s in the background until killed; sets REC.
record_bg() {
	"$BUILD/bin/hvmtrace" record -q --attach "$SOCK" --cpu 1 --interval 1s -o "$T/$1.hvt" 2>"$T/$1.err" &
	REC=$!
	pids+=($!)
	for _ in $(seq 200); do grep -q 'attached to VM' "$T/$1.err" && break; sleep 0.05; done
	grep -q 'attached to VM' "$T/$1.err" || fail "record did not attach: $(cat "$T/$1.err")"
	sleep 1.2 # past the first interval, which spans the attach
}

record_end() {
	sleep 1.2 # another whole interval
	kill -INT $REC
	wait $REC || fail "record failed: $(cat "$T/$1.err")"
	STATS=$("$HERE/trace_stats.py" "$BUILD/bin/hvmtrace" "$T/$1.hvt") || fail "no intervals in $1"
}
field() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }

# peer_row CASE RATE PEER_OTHER_MS BASE_OTHER_MS HV_STATS HV_QEMU_MS_PER_S SCORE: SCORE is score_rate's
peer_row() {
	awk -v c="$1" -v rate="$2" -v pm="$3" -v bm="$4" -v d="$(field duration_s "$5")" \
		-v tc="$(field tracer_cpu_us "$5")" -v hq="$6" -v sc="$7" -v win="$WINDOW" -v out="$OUT" 'BEGIN {
		split(sc, s, " "); mib = s[1]; ps = mib * 1048576 / 4096
		peer = pm - bm; if (peer < 0) peer = 0
		ours = tc / 1e3 / d + hq
		printf "| 3 | %s | hvmtrace %.0f written pages/s = %.1f MiB/s (exact, %d interval%s) | calc-dirty-rate %d MiB/s | error %+.1f %% (hvmtrace score --dirty-rate) | CPU: peer %.1f ms per 1 s measurement (QEMU main-loop threads %.1f ms in %.1f s, %.1f ms without); hvmtrace %.1f ms per 1 s interval (record %.1f ms + QEMU hvmtrace thread %.1f ms) |\n", \
			c, ps, mib, s[3], s[3] == 1 ? "" : "s", rate, 100 * s[2], peer, pm, win, bm, ours, tc / 1e3 / d, hq >> out }'
}
first() { echo "${1%% *}"; }
second() { echo "${1##* }"; }
last_rate() {
	sed -n 's/.*"dirty-rate": *\([0-9]*\).*/\1/p' <<<"$("$TOOLS/qmp" "$QMP" '{"execute":"query-dirty-rate"}')"
}

# --- QEMU with KVM's dirty bitmap: page-sampling while traced, dirty-bitmap untraced.
start_qemu bitmap ""
base=$(cpu_ms) || exit 1
record_bg traced
traced=$(cpu_ms) || exit 1
sampling=$(cpu_ms calc page-sampling) || exit 1 # calc ran in $(…)'s subshell: its rate is QEMU's last result
sampling_rate=$(last_rate)
refused=$("$TOOLS/qmp" "$QMP" '{"execute":"calc-dirty-rate","arguments":{"calc-time":1,"mode":"dirty-bitmap"}}')
record_end traced
hv=$STATS
hq=$(awk -v a="$(second "$traced")" -v w="$WINDOW" 'BEGIN { printf "%.2f", a / w }')
sc=$(score_rate "$T/traced.hvt" page-sampling) || exit 1
peer_row "page-sampling (512 pages per GiB), 1 s, while hvmtrace traces at 1 s" "$sampling_rate" \
	"$(first "$sampling")" "$(first "$traced")" "$hv" "$hq" "$sc"
bitmap=$(cpu_ms calc dirty-bitmap) || exit 1
bitmap_rate=$(last_rate)
sc=$(score_rate "$T/traced.hvt" dirty-bitmap) || exit 1
grep -q 'not available while an hvmtrace' <<<"$refused" && how="refused while one is" || how="NOT refused while one is: $refused"
peer_row "dirty-bitmap, 1 s, with no tracer attached ($how); scored against the trace's second-to-last second before" \
	"$bitmap_rate" "$(first "$bitmap")" "$(first "$base")" "$hv" "$hq" "$sc"
stop_qemu

# --- QEMU with a dirty ring, where KVM has one (KVM_CHECK_EXTENSION(KVM_CAP_DIRTY_LOG_RING) > 0).
if ! python3 -c 'import fcntl, os, sys; sys.exit(0 if fcntl.ioctl(os.open("/dev/kvm", os.O_RDWR), 0xAE03, 192) > 0 else 1)'; then
	row "dirty-ring" "not measured: this host's KVM offers no dirty ring (KVM_CAP_DIRTY_LOG_RING is 0)" "" "" ""
	exit 0
fi
start_qemu ring ",dirty-ring-size=4096"
base=$(cpu_ms) || exit 1
ring=$(cpu_ms calc dirty-ring) || exit 1
ring_rate=$(last_rate)
if "$BUILD/bin/hvmtrace" record -q --attach "$SOCK" --cpu 1 --interval 1s --duration 4s -o "$T/ring.hvt" \
	2>"$T/ring.err" && ring_stats=$("$HERE/trace_stats.py" "$BUILD/bin/hvmtrace" "$T/ring.hvt"); then
	sc=$(score_rate "$T/ring.hvt" dirty-ring) || exit 1
	peer_row "dirty-ring (dirty-ring-size=4096), 1 s; hvmtrace at 1 s on the same QEMU right after, its second-to-last second" \
		"$ring_rate" "$(first "$ring")" "$(first "$base")" "$ring_stats" "$hq" "$sc"
else
	sc=$(score_rate "$T/traced.hvt" dirty-ring) || exit 1
	peer_row "dirty-ring (dirty-ring-size=4096), 1 s; hvmtrace: the first QEMU's (record on the ring QEMU failed: $(tail -n 1 "$T/ring.err"))" \
		"$ring_rate" "$(first "$ring")" "$(first "$base")" "$hv" "$hq" "$sc"
fi
stop_qemu
exit 0
