#!/bin/bash
# The guest agent's channel under a real libvirt daemon (docs/attribution.md "The port", docs/libvirt.md
# §2): a domain that `hvmtrace virt-xml --owners` made of the built-in array guest (hvt.owners=1 on its
# command line) starts traced; libvirt serves the channel as the socket RUN/NAME/qemu/owners.sock, the
# agent's snapshots come over it, and those taken during the copy phase give every page of c to the array
# process (tests/tools/owners_array_check.py, on the snapshots the hook's tracer stored in the trace, which
# `hvmtrace attribute` also reads to put array first); release removes the socket with the run directory.
# one build: the channel, libvirt and the hook's directories; e2e/libvirt_trace runs the tracer on both builds
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
source "$(dirname "$0")/../lib/libvirt.bash"
need_qemu
need_libvirt
SIZE=$((32 << 20)) PHASE=4

guest_linux
# libvirt relabels the kernel and initrd for QEMU's user: copies, not the cache's files
mkdir -p "$T/img" "$T/traces" "$T/hvt"
cp "$kernel" "$T/img/vmlinux" && cp "$initrd" "$T/img/initrd"
lv_hook
start_libvirtd

lv_plain_array_domain vm "$T/img/vmlinux" "$T/img/initrd" $SIZE $PHASE |
	sed "s|hvt.phase=$PHASE|& hvt.owners=1|" >"$T/plain.xml"
grep -q 'hvt.owners=1' "$T/plain.xml" || fail "no hvt.owners=1 on the domain's command line"
"$BIN/hvmtrace" virt-xml "$T/plain.xml" -o "$T/vm.xml" --owners --emulator "$QEMU" --cpu "$TRACER_CPU" \
	--output-dir "$T/traces" --run-dir "$T/hvt" --bandwidth off || fail "virt-xml failed"
"${VIRSH[@]}" define "$T/vm.xml" >/dev/null || fail "virsh define"
"${VIRSH[@]}" start vm >"$T/start.out" 2>&1 || { cat "$T/start.out" "$LV/log/qemu/vm.log"; fail "virsh start"; }
qpid=$(qemu_pid_of vm)
[ -n "$qpid" ] || fail "no QEMU pid"
pty=$("${VIRSH[@]}" ttyconsole vm) || fail "no console pty"
"$TOOLS/stamp_lines" <"$pty" >"$T/console" &
BG_PIDS+=($!)
SOCK=$T/hvt/vm/qemu/owners.sock
[ -S "$SOCK" ] || fail "libvirt serves no socket $SOCK for the channel: $(ls -la "$T/hvt/vm/qemu")"

assert_contains "$T/traces/vm.log" "with the guest agent's snapshots from $SOCK"
state_is() { [ "$("${VIRSH[@]}" domstate "$1" 2>/dev/null)" = "$2" ]; }
wait_until "the domain did not power off" "$LIBVIRTD_PID" state_is vm "shut off"
grep -q 'HVT EXIT 0' "$T/console" || { tail -20 "$T/console"; fail "the array program did not finish"; }
grep -q 'HVT OWNERS agent' "$T/console" || fail "the guest found no port for the agent"
# the hook's tracer stored them: every copy-phase snapshot gives c to array, and attribute by the trace's
# own snapshots puts array first
wait_until "the hook's supervisor did not finish" "$LIBVIRTD_PID" test ! -e "$T/hvt/vm/supervisor.pid"
assert_contains "$T/traces/vm.log" "snapshots stored" ", 0 refused"
trace=$(ls "$T/traces"/vm-*.hvt)
mkdir -p "$T/snaps"
python3 tests/tools/trace_owners.py "$trace" "$T/snaps" >/dev/null || fail "the trace's OWNERS records are not as stored"
for n in $(ls "$T/snaps" | sort -n); do cat "$T/snaps/$n"; done >"$T/owners.bin"
[ -s "$T/owners.bin" ] || fail "the trace holds no snapshot"
python3 tests/tools/owners_array_check.py "$T/owners.bin" "$T/console" >/dev/null ||
	fail "the snapshots from libvirt's channel do not give c to array"
"$BIN/hvmtrace" attribute "$trace" --top 1 >"$T/attr" || fail "attribute $trace exited $?"
grep -q '^ *1 array\[' "$T/attr" || { cat "$T/attr"; fail "array is not the top writer of the trace"; }
echo "ok: the hook's tracer stored the snapshots; $(grep -o '[0-9]* snapshots stored.*refused' "$T/traces/vm.log")"
wait_until "the hook did not release the domain" "$LIBVIRTD_PID" test ! -e "$T/hvt/vm"
echo "ok: release removed the domain's run directory, the agent's socket with it"
