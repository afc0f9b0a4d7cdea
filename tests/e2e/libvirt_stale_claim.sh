#!/bin/bash
# A claim on guest RAM (RUN/NAME/claim, docs/libvirt.md §4) names its owner: the QEMU the devmem helper
# handed the memory to, by pid and start time. After a crash of the libvirt daemon and its QEMU (kill -9 of
# both), a claim whose owner is gone is stale and the next domain asking for that memory takes it over;
# a claim whose QEMU runs is still refused. Two domains, vm and vm2, on the same memory (the devmem backend
# on a tmpfs file with a test iomem, as e2e/libvirt_trace); their guests are SeaBIOS with nothing to boot
# (under TCG), since only QEMU's life matters here.
#  1. vm runs: its claim's owner is its QEMU; vm2 is refused ("in use by running domain 'vm'").
#  2. kill -9 of libvirtd and vm's QEMU; libvirtd restarts, finds vm's QEMU gone and runs its release
#     itself (the claim is gone); vm starts again.
#  3. the same crash, but the daemon's record of the running vm is lost as well (its status file: a crash
#     before libvirt saved it), so no release ever runs: vm's claim outlives the restart, its owner is gone;
#     vm2 starts (the hook says it took the stale claim over), and now vm is refused ("in use by running
#     domain 'vm2'"), vm2 still running.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
source "$(dirname "$0")/../lib/libvirt.bash"
need_qemu
need_libvirt
mkdir -p "$T/traces" "$T/hvt"
lv_test_memory
lv_hook
start_libvirtd

for name in vm vm2; do
	cat >"$T/plain-$name.xml" <<EOX
<domain type='qemu'>
  <name>$name</name>
  <memory unit='MiB'>256</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type></os>
  <on_poweroff>destroy</on_poweroff><on_reboot>restart</on_reboot><on_crash>destroy</on_crash>
  <devices><memballoon model='none'/></devices>
</domain>
EOX
	"$BIN/hvmtrace" virt-xml "$T/plain-$name.xml" -o "$T/$name.xml" --emulator "$QEMU" --cpu "$TRACER_CPU" \
		--output-dir "$T/traces" --chanmap "$CHANMAP" --channels s0.mc0.ch0 --mem-path "$MEMFILE" \
		--iomem "$IOMEM" --run-dir "$T/hvt" || fail "virt-xml $name"
	"${VIRSH[@]}" define "$T/$name.xml" >/dev/null || fail "virsh define $name"
done

start_ok() { "${VIRSH[@]}" start "$1" >"$T/start.out" 2>&1 || { cat "$T/start.out"; fail "virsh start $1"; }; }
start_refused() { # NAME TEXT
	local rc=0
	"${VIRSH[@]}" start "$1" >"$T/start.out" 2>&1 || rc=$?
	[ $rc != 0 ] || fail "$1 started on memory another running domain holds"
	assert_contains "$T/start.out" "$2"
	[ "$("${VIRSH[@]}" domstate "$1")" = "shut off" ] || fail "$1 is not shut off after its refusal"
}
owner_of() { sed -n 's/^owner \([0-9]*\) .*/\1/p' "$T/hvt/$1/claim" 2>/dev/null; }
owner_is() { [ "$(owner_of "$1")" = "$2" ]; } # waits re-evaluate it
gone() { ! kill -0 "$1" 2>/dev/null; }
# crash: kill -9 of the daemon and then of vm's QEMU (not children of ours: polled until gone)
crash() {
	local q
	q=$(qemu_pid_of vm)
	[ -n "$q" ] || fail "no QEMU pid of vm"
	kill -9 "$LIBVIRTD_PID"
	wait "$LIBVIRTD_PID" 2>/dev/null
	kill -9 "$q"
	for _ in $(seq 200); do gone "$q" && break; sleep 0.05; done
	gone "$q" || fail "vm's QEMU $q survived kill -9"
	rm -f "$LV/run/libvirt-sock"
	echo "crash: libvirtd $LIBVIRTD_PID and QEMU $q killed with -9"
}

# ---- 1. a live claim is refused
start_ok vm
qpid=$(qemu_pid_of vm)
wait_until "the devmem helper did not make vm's QEMU the claim's owner" "$qpid" owner_is vm "$qpid"
echo "ok: vm's claim: $(tr '\n' ' ' <"$T/hvt/vm/claim")"
start_refused vm2 "is in use by running domain 'vm'"
echo "ok: vm2 refused while vm runs: $(grep -o 'hvmtrace: .*' "$T/start.out")"

# ---- 2. crash; libvirtd restarts and releases vm itself; vm starts again
crash
start_libvirtd
wait_until "libvirtd did not release vm after its QEMU died" "$LIBVIRTD_PID" test ! -e "$T/hvt/vm/claim"
start_ok vm
qpid=$(qemu_pid_of vm)
wait_until "vm's QEMU did not become the claim's owner" "$qpid" owner_is vm "$qpid"
echo "ok: after the crash libvirtd ran vm's release itself; vm started again (QEMU $qpid)"

# ---- 3. crash with the daemon's record of vm lost: the claim is stale and taken over
crash
rm -f "$LV/run/qemu/vm.xml" "$LV/run/qemu/vm.pid"
start_libvirtd
[ "$("${VIRSH[@]}" domstate vm)" = "shut off" ] || fail "vm is not shut off after the restart"
[ -e "$T/hvt/vm/claim" ] || fail "vm's claim did not outlive the lost daemon state (nothing would be stale)"
! kill -0 "$(owner_of vm)" 2>/dev/null || fail "vm's claim owner $(owner_of vm) still runs"
echo "ok: vm's claim outlived the crash, its owner $(owner_of vm) is gone"
start_ok vm2
qpid2=$(qemu_pid_of vm2)
wait_until "vm2's QEMU did not become its claim's owner" "$qpid2" owner_is vm2 "$qpid2"
[ ! -e "$T/hvt/vm/claim" ] || fail "vm's stale claim is still there after vm2 took the memory"
echo "ok: vm2 started on the memory of vm's stale claim (QEMU $qpid2)"
start_refused vm "is in use by running domain 'vm2'"
[ "$("${VIRSH[@]}" domstate vm2)" = running ] || fail "refusing vm disturbed vm2"
echo "ok: vm refused while vm2 runs: $(grep -o 'hvmtrace: .*' "$T/start.out")"
