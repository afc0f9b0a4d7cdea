#!/bin/bash
# virt-xml --owners and the hook, without a libvirt daemon or QEMU (docs/attribution.md, docs/libvirt.md):
# --owners adds the guest agent's channel (a virtio channel named org.hvmtrace.owners.0 that QEMU serves as
# the unix socket RUN/NAME/qemu/owners.sock), which libvirt's schema accepts; virt-xml run again keeps one
# such channel, without --owners takes it away, and leaves the domain's other channels alone. The hook's
# prepare makes QEMU's directory, where libvirt binds the socket before the start hook; the tracer is told
# of the channel (record --owners-port; the domain's log says so), and release
# removes the socket with the run directory. (tests/e2e/libvirt_owners.sh: the same under libvirt.)
# one build: virt-xml's output and the hook's lifecycle, not the build's code paths
source "$(dirname "$0")/../lib/assert.bash"
[ "$(id -u)" = 0 ] || skip "needs root (the hook's run directory and tracer)"
mkdir -p "$T/traces"
NAME=hvt-owners-test # a name no host's own domain has (the supervisor asks libvirt's pid file)
cat >"$T/plain.xml" <<EOX
<domain type='qemu'><name>$NAME</name><memory unit='MiB'>64</memory><vcpu>1</vcpu>
<os><type arch='x86_64' machine='pc'>hvm</type></os>
<devices><channel type='unix'><source mode='bind' path='/run/qga.sock'/><target type='virtio' name='org.qemu.guest_agent.0'/></channel></devices></domain>
EOX
vx() { # IN OUT EXTRA...
	local in=$1 out=$2
	shift 2
	"$HVT" virt-xml "$in" -o "$out" --emulator /bin/true --cpu "$TRACER_CPU" --output-dir "$T/traces" \
		--run-dir "$T/hvt" --bandwidth off "$@" || fail "virt-xml $*"
}
# the channels of a domain, one line each: source mode, path, target type, name
channels() {
	python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
for c in ET.parse(sys.argv[1]).getroot().findall("devices/channel"):
    s, t = c.find("source"), c.find("target")
    print(c.get("type"), s.get("mode"), s.get("path"), t.get("type"), t.get("name"))
PY
}
SOCK=$T/hvt/$NAME/qemu/owners.sock
QGA="unix bind /run/qga.sock virtio org.qemu.guest_agent.0"

vx "$T/plain.xml" "$T/vm.xml" --owners
assert_eq "the channels with --owners" "$QGA
unix bind $SOCK virtio org.hvmtrace.owners.0" "$(channels "$T/vm.xml")"
if command -v virt-xml-validate >/dev/null; then
	virt-xml-validate "$T/vm.xml" domain >"$T/validate" 2>&1 ||
		fail "virt-xml --owners' domain does not validate: $(cat "$T/validate")"
fi
vx "$T/vm.xml" "$T/again.xml" --owners
assert_eq "the channels after virt-xml --owners again" "$(channels "$T/vm.xml")" "$(channels "$T/again.xml")"
vx "$T/vm.xml" "$T/without.xml"
assert_eq "the channels after virt-xml without --owners" "$QGA" "$(channels "$T/without.xml")"
echo "ok: virt-xml --owners adds the channel once; without --owners it goes; other channels stay"

# The hook: the tracer is started with the port (no QEMU here: it fails to attach, as in
# libvirt_hook_started.sh), and release removes the socket QEMU left with the run directory.
hook() { HVMTRACE_NO_SYSTEMD=1 "$HVT" libvirt-hook "$NAME" "$@" - <"$T/vm.xml"; }
# libvirt binds the channel's socket before the start hook: prepare makes QEMU's directory for it
hook prepare begin || fail "the prepare hook failed"
[ -d "$(dirname "$SOCK")" ] || fail "prepare made no $(dirname "$SOCK") for the channel's socket"
hook start begin || fail "the start hook failed"
touch "$SOCK" # what QEMU leaves behind
expect 1 "no tracer could attach, so it does not start" hook started begin
assert_contains "$T/traces/$NAME.log" "tracing to $T/traces/$NAME-" "with the guest agent's snapshots from $SOCK"
hook stopped end || fail "the stopped hook failed"
hook release end || fail "the release hook failed"
[ ! -e "$T/hvt/$NAME" ] || fail "release left $T/hvt/$NAME: $(ls -AR "$T/hvt/$NAME")"
echo "ok: the hook tells the tracer of the port: $(grep -m1 'tracing to' "$T/traces/$NAME.log")"
