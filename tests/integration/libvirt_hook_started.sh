#!/bin/bash
# The hook's started stage where systemd does not run (docs/libvirt.md §4), without libvirt or QEMU: it
# starts the supervisor and waits for the tracer to attach, and when no tracer can (here: no QEMU socket)
# it fails, naming the tracer's reason, so that libvirt does not start the domain. A tracer that fails
# (exit 1) when its QEMU is gone, as when a paused domain is destroyed, is not restarted: the log says QEMU
# has exited, never "restarting the tracer". The release stage removes the domain's run directory and
# keeps the run-dir itself traversable but not listable (0711).
# one build: the hook's lifecycle, not the build's code paths
source "$(dirname "$0")/../lib/assert.bash"
[ "$(id -u)" = 0 ] || skip "needs root (the hook's run directory and tracer)"
mkdir -p "$T/traces"
cat >"$T/plain.xml" <<'EOX'
<domain type='qemu'><name>hvt-hook-test</name><memory unit='MiB'>64</memory><vcpu>1</vcpu>
<os><type arch='x86_64' machine='pc'>hvm</type></os></domain>
EOX
"$HVT" virt-xml "$T/plain.xml" -o "$T/vm.xml" --emulator /bin/true --cpu "$TRACER_CPU" --output-dir "$T/traces" \
	--run-dir "$T/hvt" --bandwidth off || fail "virt-xml"
# (a name no host's own domain has: the supervisor asks libvirt's /run/libvirt/qemu/NAME.pid whether QEMU lives)
hook() { HVMTRACE_NO_SYSTEMD=1 "$HVT" libvirt-hook hvt-hook-test "$@" - <"$T/vm.xml"; }

# start makes the run directory; started finds no QEMU socket: the tracer exits 2, the hook fails
hook start begin || fail "the start hook failed"
assert_eq "the run-dir's mode" 711 "$(stat -c %a "$T/hvt")"
assert_eq "the domain's run directory's mode" 711 "$(stat -c %a "$T/hvt/hvt-hook-test")"
expect 1 "the domain asks for a trace and no tracer could attach, so it does not start: hvmtrace record: connecting to $T/hvt/hvt-hook-test/qemu/vm.sock" \
	hook started begin
[ ! -e "$T/hvt/hvt-hook-test/attached" ] || fail "the tracer says it attached"

# a tracer that fails with exit 1 (its domain's saved XML gone, standing in for a VM that vanished
# without its bye) while no QEMU of the domain lives: the supervisor ends, without a restart
rm "$T/hvt/hvt-hook-test/domain.xml"
expect 1 "no tracer could attach, so it does not start: hvmtrace libvirt-hook: domain 'hvt-hook-test': QEMU has exited" \
	hook started begin
assert_contains "$T/traces/hvt-hook-test.log" "QEMU has exited: the domain has ended, no tracer to restart"
! grep -q "restarting the tracer" "$T/traces/hvt-hook-test.log" || fail "the supervisor restarted a tracer whose QEMU is gone"

# stopped and release: the run directory goes, the run-dir stays as it is
hook stopped end || fail "the stopped hook failed"
hook release end || fail "the release hook failed"
[ ! -e "$T/hvt/hvt-hook-test" ] || fail "release left $T/hvt/hvt-hook-test: $(ls -A "$T/hvt/hvt-hook-test")"
assert_eq "the run-dir's mode after release" 711 "$(stat -c %a "$T/hvt")"
echo "ok: started fails without a tracer, no restart once QEMU is gone, release removes the run directory"
