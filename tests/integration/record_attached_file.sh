#!/bin/bash
# record --attached-file FILE (what libvirt's started hook waits on, docs/libvirt.md §4): written once the
# tracer has attached and records, holding the VMM's pid; not written when it cannot attach.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm

expect 2 "connecting to $T/none.sock" "$HVT" record --attach "$T/none.sock" --cpu $TRACER_CPU -o "$T/none.hvt" \
	--attached-file "$T/none.attached"
[ ! -e "$T/none.attached" ] || fail "--attached-file written without a VMM"

start_vmm "$T/vmm.sock" --payload phases4 --phase-time 0.3s --repeat 0 --vcpu-cpu $VCPU_CPU
"$HVT" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 100ms -o "$T/t.hvt" \
	--attached-file "$T/attached" -q 2>"$T/rec.err" &
REC=$!
BG_PIDS+=("$REC")
wait_until "--attached-file was not written" "$REC" test -s "$T/attached"
grep -q 'attached to VM' "$T/rec.err" || fail "--attached-file written before record said it attached"
assert_eq "--attached-file's content (the VMM's pid)" "$VMM_PID" "$(cat "$T/attached")"
kill -TERM "$REC" && wait "$REC" || fail "record did not end on SIGTERM"
echo "ok: --attached-file holds the VMM's pid once attached, and is not written without a VMM"
