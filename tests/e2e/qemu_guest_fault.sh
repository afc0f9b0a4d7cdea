#!/bin/bash
# The PVH phase payload reports a vector that reaches it instead of dying on a triple fault: an NMI injected
# through QMP (which IF=0 does not hold off) must make `qemu_phases run` fail at once, naming vector 2 and
# the guest's CPL3 RIP inside the phase loop, and QEMU must still be running (the guest halted, not reset).
# one build: its subject is the guest payload and QEMU; no hvmtrace program runs (only the tools that drive
# the guest).
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
need_kvm
need_qemu
start_phases_qemu "$T"
qemu=$QEMU_PID ram=$RAM
"$TOOLS/qemu_phases" ready --ram "$ram" --pid "$qemu" || fail "the guest did not boot: $(cat "$T/qemu.err")"
"$TOOLS/qemu_phases" run --ram "$ram" --low-ram 3G --high-ram 1G --payload phases4 --hold 30s \
	--phase-log "$T/phases.jsonl" --pid "$qemu" 2>"$T/run.err" &
run=$!
sleep 1
"$TOOLS/qmp" "$T/qmp.sock" '{"execute":"inject-nmi"}' >/dev/null || fail "QMP inject-nmi failed"
for _ in $(seq 100); do kill -0 $run 2>/dev/null || break; sleep 0.1; done
kill -0 $run 2>/dev/null && fail "qemu_phases still runs 10 s after the NMI: the guest did not report it"
wait $run && fail "qemu_phases run succeeded although an NMI reached the guest"
cat "$T/run.err"
assert_contains "$T/run.err" "vector 2 (an exception or a stray interrupt) reached the guest"
assert_contains "$T/run.err" "error code none pushed"
# RIP is the phase loop's, at CPL3 (CS RPL 3), in the image.
rip=$(sed -n 's/.*at RIP \(0x[0-9a-f]*\) (CS \(0x[0-9a-f]*\),.*/\1 \2/p' "$T/run.err")
read -r rip cs <<<"$rip"
[ -n "$rip" ] || fail "no RIP in the report"
(((cs & 3) == 3)) || fail "CS $cs is not CPL3"
ELF=$ROOT/$BUILD/guest/phases.elf
lo=$(nm "$ELF" | awk '$3 == "phase_loop" {print "0x" $1}')
hi=$(nm "$ELF" | awk '$3 == "fault_common" {print "0x" $1}')
((rip >= lo && rip < hi)) || fail "RIP $rip is not in the phase loop [$lo, $hi)"
kill -0 $qemu 2>/dev/null || fail "QEMU exited: the guest was reset instead of halting"
"$TOOLS/qmp" "$T/qmp.sock" '{"execute":"quit"}' >/dev/null
wait $qemu
