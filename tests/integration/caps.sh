#!/bin/bash
# After attaching, `hvmtrace record` holds no capability at all (it needs none to harvest and write), and
# cannot regain any (no_new_privs); memory is locked. Read from /proc/PID/status while it records.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm
[ "$(id -u)" = 0 ] || skip "needs root to start with capabilities"

start_vmm "$T/vmm.sock" --payload phases4 --phase-time 0.5s --repeat 0 --vcpu-cpu $VCPU_CPU
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 100ms --duration 3s -o "$T/t.hvt" 2>"$T/err" &
pid=$!
for i in $(seq 1 100); do
	grep -q 'attached to VM' "$T/err" && break
	sleep 0.05
done
assert_contains "$T/err" "attached to VM"
grep -E '^(Cap|NoNewPrivs|VmLck|Cpus_allowed_list)' /proc/$pid/status | tee "$T/status"
for set in CapInh CapPrm CapEff CapBnd CapAmb; do
	assert_eq "$set" 0000000000000000 "$(awk -v s="$set:" '$1 == s { print $2 }' "$T/status")"
done
assert_eq NoNewPrivs 1 "$(awk '$1 == "NoNewPrivs:" { print $2 }' "$T/status")"
assert_eq Cpus_allowed_list "$TRACER_CPU" "$(awk '$1 == "Cpus_allowed_list:" { print $2 }' "$T/status")"
wait $pid || fail "record failed: $(cat "$T/err")"
"$BIN/hvmtrace" report --totals-only "$T/t.hvt" || fail "the trace does not read back"

# The tracer warns when its CPU is one a vCPU thread may run on (here: the CPU the vCPU is pinned to), and
# on a terminal it prints one line per interval.
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $VCPU_CPU --interval 100ms --duration 300ms -o "$T/w.hvt" 2>"$T/err" ||
	fail "record on the vCPU's CPU failed: $(cat "$T/err")"
assert_contains "$T/err" "CPU $VCPU_CPU is one the VM's vCPU threads may run on"
script -qec "$BIN/hvmtrace record --attach $T/vmm.sock --cpu $TRACER_CPU --interval 100ms --duration 350ms -o $T/tty.hvt" \
	/dev/null >"$T/tty.out" 2>&1 || fail "record on a terminal failed: $(cat "$T/tty.out")"
lines=$(grep -c 'written .* pages .* MiB' "$T/tty.out")
[ "$lines" -ge 3 ] || { cat "$T/tty.out"; fail "expected a line per interval on a terminal, got $lines"; }
grep -q 'written .* pages' "$T/err" && fail "per-interval lines went to a non-terminal stderr"
echo ok
