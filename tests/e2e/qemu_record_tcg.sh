#!/bin/bash
# hvmtrace record attached to patched QEMU (-object hvmtrace) running a Debian Linux guest under TCG, whose
# initramfs runs the seed paper's array program (tests/guest/array.c: c[i] = a[i], then c[i] = a[i] + b[i]).
# In every full interval of each phase the written set holds every guest-physical page of c (the program
# prints them from /proc/self/pagemap) and fewer than 10 % more. While the tracer is attached, migrate and
# calc-dirty-rate in dirty-bitmap mode are refused with the blocker's reason and query-hvmtrace reports the
# attachment; once the tracer has left, the blocker is gone and migration starts.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
need_qemu
[ "$(id -u)" = 0 ] || skip "needs root (the initramfs needs /dev/console)"
SIZE=$((32 << 20)) PHASE=6

guest_linux

timeout 300 "$QEMU" "${QEMU_L[@]}" -M pc -accel tcg -cpu max -m 512M -smp 1 -kernel "$kernel" -initrd "$initrd" \
	-append "console=ttyS0 quiet panic=-1 hvt.size=$SIZE hvt.phase=$PHASE" -no-reboot -nic none -display none \
	-serial stdio -monitor none -qmp "unix:$T/qmp.sock,server=on,wait=off" \
	-object "hvmtrace,id=t0,path=$T/vm.sock" 2>"$T/qemu.err" </dev/null | "$TOOLS/stamp_lines" >"$T/console" &
QEMU_PID=$!
BG_PIDS+=("$QEMU_PID")
wait_socket "$T/vm.sock"
wait_socket "$T/qmp.sock"

"$BIN/hvmtrace" record --attach "$T/vm.sock" --interval 1s -o "$T/t.hvt" --jsonl "$T/t.jsonl" 2>"$T/record.err" &
REC=$!
wait_contains "$T/record.err" "attached to VM" $REC

# While attached: migration, snapshots' precondition, and dirty-bitmap rate measurement are refused.
"$TOOLS/qmp" "$T/qmp.sock" '{"execute":"query-hvmtrace"}' >"$T/q1" || fail "query-hvmtrace: $(cat "$T/q1")"
grep -q '"attached":true' "$T/q1" && grep -q '"mode":"dirty-log"' "$T/q1" || fail "query-hvmtrace: $(cat "$T/q1")"
rc=0
"$TOOLS/qmp" "$T/qmp.sock" '{"execute":"migrate","arguments":{"uri":"exec:cat >/dev/null"}}' >"$T/q2" || rc=$?
[ $rc = 1 ] && grep -q 'hvmtrace: a tracer is attached' "$T/q2" || fail "migrate was not blocked: $(cat "$T/q2")"
rc=0
"$TOOLS/qmp" "$T/qmp.sock" '{"execute":"calc-dirty-rate","arguments":{"calc-time":1,"mode":"dirty-bitmap"}}' >"$T/q3" || rc=$?
[ $rc = 1 ] && grep -q 'hvmtrace tracer is attached' "$T/q3" || fail "calc-dirty-rate dirty-bitmap was not refused: $(cat "$T/q3")"
echo "ok: blocked while attached: $(cat "$T/q2")"

wait $REC || { cat "$T/record.err" "$T/qemu.err"; fail "record failed"; }
cat "$T/record.err"
wait "$QEMU_PID" 2>/dev/null
grep 'HVT' "$T/console" | grep -v C-RUN | head
grep -q 'HVT EXIT 0' "$T/console" || { tail -20 "$T/console"; fail "the array program did not finish"; }
"$TOOLS/check_array" --trace "$T/t.hvt" --console "$T/console" --min-intervals 3 || fail "written sets do not match the array program"
tail -n 1 "$T/t.jsonl" | grep -q '"final":true' || fail "the guest's shutdown did not end the trace with a final interval"

# Analyses (docs/analyses.md): over the intervals that wrote at least as many pages as c has (the copy and
# add phases), every page of c is classed write-heavy. Mode dirty-log has no accessed sets: that a is
# read-mostly and that the copy→add switch is a phase boundary are checked in mode ad in the nested lab
# (tests/lab/test_qemu.sh, the array scenario).
cpages=$(awk '/HVT C-PAGES/ { print $NF; exit }' "$T/console")
"$BIN/hvmtrace" report --json "$T/t.hvt" >"$T/all.json" || fail "report --json"
read -r first last < <(jq -r --argjson c "$cpages" '[.intervals[] | select(.written != null and .written >= $c) | .seq] | "\(min) \(max)"' "$T/all.json")
"$BIN/hvmtrace" report --json --pages --from "$first" --to "$last" "$T/t.hvt" >"$T/phases.json" || fail "report --pages"
grep 'HVT C-RUN' "$T/console" | awk '{ print $(NF-1), $NF }' >"$T/c.runs"
python3 - "$T/phases.json" "$T/c.runs" <<'PY' || fail "c is not write-heavy in intervals $first-$last"
import json, sys, bisect
runs = json.load(open(sys.argv[1]))['classes']['page_runs']
starts = [r[0] for r in runs]
bad = 0
for line in open(sys.argv[2]):
    gfn, n = (int(x) for x in line.split()[-2:])
    for g in range(gfn, gfn + n):
        i = bisect.bisect_right(starts, g) - 1
        if i < 0 or not (runs[i][0] <= g < runs[i][0] + runs[i][1]) or runs[i][2] != 'write-heavy':
            bad += 1
print('c pages not write-heavy:', bad)
sys.exit(1 if bad else 0)
PY
echo "ok: c is write-heavy over intervals $first-$last; phases found (written): $(jq -c .phases.written "$T/phases.json")"

# Its pictures (docs/plots.md): c written at its rows and columns in the heatmap read back.
source "$(dirname "$0")/../lib/plots.bash"
check_array_heatmap "$T/t.hvt" "$T/console"
