#!/bin/bash
# Storm: the trace's file system fills up (a 512 KiB tmpfs) while `record` writes 10 ms intervals to it:
# record stops by itself with exit 1 and a message naming the trace file and the cause, and the trace reads
# to its last complete interval, identical to the JSON Lines written alongside (on another file system).
# Needs root to mount the tmpfs (skipped otherwise).
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
source "$(dirname "$0")/../lib/storm.bash"
need_kvm

mkdir "$T/small"
mount -t tmpfs -o size=512k,mode=0700 hvmtrace-storm "$T/small" 2>"$T/mount.err" ||
	skip "cannot mount a small tmpfs: $(cat "$T/mount.err")"
trap 'umount "$T/small"; cleanup' EXIT

storm_vmm 0.1s
rc=0
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 10ms -o "$T/small/t.hvt" \
	--jsonl "$T/t.jsonl" 2>"$T/record.err" || rc=$?
cat "$T/record.err"
[ $rc = 1 ] || fail "record exited $rc on a full file system, expected 1"
grep -E "No space left on device|disk full" "$T/record.err" | grep -qF "$T/small/t.hvt: " ||
	fail "record does not say, naming the trace, that its file system is full"
echo "file system: $(df -k --output=used,size "$T/small" | tail -n 1) KiB used; trace $(stat -c %s "$T/small/t.hvt") bytes"
check_recovered "full file system" "$T/small/t.hvt" "$T/t.jsonl" 0 3
[ "$RECOVERED" = "$WRITTEN" ] || fail "the trace holds $RECOVERED intervals, the JSON Lines $WRITTEN"
[ "$WRITTEN" -ge 5 ] || fail "only $WRITTEN intervals before the file system was full: too few to test"
"$TOOLS/check_deadlines" --trace "$T/small/t.hvt" --interval 10ms || fail "the intervals kept are not sound"
kill -0 "$VMM_PID" || fail "the VMM died"
echo "ok: record stopped on the full file system; $RECOVERED intervals readable"
