#!/bin/bash
# make score's plumbing (scripts/score-damon.sh, docs/score.md): DAMON recorded inside the traced TCG Linux
# guest comes out whole on ttyS1, its clock is aligned to the trace's within 100 ms, one window (the start
# and end sync points agree; measured: within 13 ms), every snapshot is scored, and DAMON saw at least half
# of the array c's written pages in the windows where it saw anything (measured: 0.93-0.97). A record moved
# an hour off the trace is refused. The build-like load's run (make score's second workload) is scored too.
# one build: its subject is the guest's DAMON and the script; score itself is tested in integration/score
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
need_qemu
[ "$(id -u)" = 0 ] || skip "needs root (the initramfs needs /dev/console)"
grep -q '^CONFIG_DAMON_PADDR=y' "$("$ROOT/scripts/guest-kernel.sh" -q 6.12)/config" || skip "the guest kernel has no DAMON"

out=$T/out
DAMON=5000,100000,10,1000 PHASE=3 BUILD_SECS=4 OUT=$out "$ROOT/scripts/score-damon.sh" "$BUILD" >"$T/log" 2>&1 ||
	{ cat "$T/log"; fail "score-damon.sh failed"; }
cat "$T/log"
d=$out/run-array-5000-100000-10-1000

drifts=$(sed -n 's/.* ns at the start, \(-\{0,1\}[0-9]*\) ns more at the end.*/\1/p' "$T/log")
[ "$(wc -l <<<"$drifts")" = 2 ] || fail "expected the clock offsets of two runs, found: $drifts"
for drift in $drifts; do
	[ "${drift#-}" -lt 100000000 ] || fail "the start and end clock offsets differ by '$drift' ns (100 ms at most)"
done
drift=${drifts%%$'\n'*}
jq -e '.overall.windows == .snapshots and .snapshots >= 5' "$d/score.json" >/dev/null ||
	fail "not every snapshot was scored: $(jq -c '{snapshots, overall}' "$d/score.json")"
seen=$(sed -n 's/.* c written [0-9]*, DAMON saw \([0-9.]*\) of them.*/\1/p' "$d/split.txt")
awk -v s="$seen" 'BEGIN { exit !(s >= 0.5) }' || fail "DAMON saw '$seen' of c's written pages (0.5 at least)"
echo "ok: clocks within $drift ns, $(jq .snapshots "$d/score.json") snapshots scored, DAMON saw $seen of c's written pages"

b=$out/run-build-5000-100000-10-1000
jq -e '.overall.windows == .snapshots and .snapshots >= 3 and .overall.true_pages > 0' "$b/score.json" >/dev/null ||
	fail "the build-like load's run was not scored whole: $(jq -c '{snapshots, overall}' "$b/score.json")"
grep -q "^build  5000,100000,10,1000 " "$T/log" || fail "the summary has no line for the build-like load"
echo "ok: build-like load: $(jq .snapshots "$b/score.json") snapshots scored, recall $(jq .overall.recall "$b/score.json")"

rc=0
"$HVT" score "$d/trace.hvt" --damon "$d/damon.rec" --record-clock trace --offset 1h >"$T/off" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q 'overlap' "$T/off" || fail "a record an hour off was not refused (exit $rc): $(cat "$T/off")"
echo "ok: a record an hour off is refused: $(cat "$T/off")"
