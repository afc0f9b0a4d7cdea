#!/bin/bash
# Without CAP_IPC_LOCK and with an RLIMIT_MEMLOCK too small for the guest (and no CAP_SYS_RESOURCE to raise
# its hard limit), record refuses at attach, before any interval, with one sentence naming the limit, the
# amount needed and the fix (issue 12 item 1); the VM runs on and another tracer can attach.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm
[ "$(id -u)" = 0 ] || skip "needs root, to take the capabilities away"
command -v setpriv >/dev/null || skip "needs setpriv (util-linux)"
command -v prlimit >/dev/null || skip "needs prlimit (util-linux)"

start_vmm "$T/vmm.sock" --payload phases4 --high-ram 64G --phase-time 0.5s --repeat 0 --vcpu-cpu $VCPU_CPU
# 8 MiB soft and hard, no CAP_IPC_LOCK or CAP_SYS_RESOURCE in any set
expect 2 "hvmtrace record: a 67.00 GiB guest needs " \
	prlimit --memlock=8388608:8388608 setpriv --inh-caps=-ipc_lock,-sys_resource \
	--bounding-set=-ipc_lock,-sys_resource "$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU \
	--interval 1s --duration 2s -o "$T/t.hvt"
assert_contains "$T/err" "of locked memory" # (a sanitizer build says why it needs so much here)
assert_contains "$T/err" ", more than its RLIMIT_MEMLOCK of 8.0 MiB, which this process cannot raise without CAP_IPC_LOCK or CAP_SYS_RESOURCE: raise the limit before record (ulimit -l "
[ "$(grep -c . "$T/err")" = 1 ] || fail "more than one line: $(cat "$T/err")"
[ ! -e "$T/t.hvt" ] || fail "a trace was created although nothing could be recorded"
# the amount, as ulimit -l takes it, is more than the 8 MiB limit
kib=$(sed -n 's/.*ulimit -l \([0-9]*\).*/\1/p' "$T/err")
[ -n "$kib" ] && [ "$kib" -gt 8192 ] || fail "the sentence names no amount above the limit for ulimit -l"
# The VM is still there and serves the next tracer, which has the capability.
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 500ms --duration 1s -o "$T/t.hvt" \
	2>"$T/err2" || fail "record after the refusal failed: $(cat "$T/err2")"
assert_contains "$T/err2" "intervals recorded"
echo "ok: refused with '$(cut -c1-120 "$T/err")…' (needs $kib KiB)"
