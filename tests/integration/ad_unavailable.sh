#!/bin/bash
# On a KVM without our KVM_AD_HARVEST patch (this host's), hvmtrace-vmm offers only dirty-log: asking for
# mode ad is refused with a message naming the modes on offer, and --mode auto records in dirty-log mode.
# (Mode ad itself runs in the nested lab: tests/lab/test_record.sh.)
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm

start_vmm "$T/vmm.sock" --payload idle --low-ram 64M --high-ram 2M --wait-attach
expect 2 "mode ad is not available (the VMM offers: dirty-log;" \
	"$BIN/hvmtrace" record --attach "$T/vmm.sock" --mode ad -o "$T/ad.hvt"
[ ! -e "$T/ad.hvt" ] || fail "a refused attach left a trace file"
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --duration 300ms --interval 100ms -o "$T/auto.hvt" \
	2>"$T/auto.err" || fail "auto mode: $(cat "$T/auto.err")"
assert_contains "$T/auto.err" "in dirty-log mode"
kill "$VMM_PID"
wait "$VMM_PID" 2>/dev/null
echo ok
