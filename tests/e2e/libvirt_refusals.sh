#!/bin/bash
# Tracing requests that cannot be served (docs/libvirt.md §5): each is refused by `hvmtrace virt-xml
# --check` and by the hook at prepare with one line naming the problem; libvirt shows that line, the domain
# does not start, and nothing is left behind (no run directory, claim or process of it). Cases: a channel
# not in the chanmap, a chanmap that does not exist, extents touching System RAM, a tracer CPU that does not
# exist, one the vCPUs are pinned to, and an output directory that is not writable (a read-only mount).
# And the devmem helper's own check: QEMU asking for memory the request does not grant gets no fd; and
# --check refuses a stock QEMU (no hvmtrace object) in one line.
# (Two domains asking for the same memory: e2e/libvirt_trace, which needs one running.)
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
source "$(dirname "$0")/../lib/libvirt.bash"
need_qemu
need_libvirt
lv_check_opts
mkdir -p "$T/traces" "$T/hvt" "$T/ro"
mount_at "$T/ro" -t tmpfs -o ro,size=1M tmpfs || skip "cannot mount a read-only tmpfs"
lv_test_memory
lv_hook
start_libvirtd

lv_plain_array_domain base "$T/vmlinux" "$T/initrd" $((32 << 20)) 6 >"$T/plain.xml"
: >"$T/vmlinux" && : >"$T/initrd"
"$BIN/hvmtrace" virt-xml "$T/plain.xml" -o "$T/good.xml" --emulator "$QEMU" --cpu "$TRACER_CPU" \
	--output-dir "$T/traces" --chanmap "$CHANMAP" --channels s0.mc0.ch0 --mem-path "$MEMFILE" --iomem "$IOMEM" \
	--run-dir "$T/hvt" || fail "virt-xml failed"
"$BIN/hvmtrace" virt-xml --check "${LV_CHECK[@]}" "$T/good.xml" || fail "virt-xml --check refuses the good domain"
# virt-xml on its own output replaces what it wrote: the same domain again
"$BIN/hvmtrace" virt-xml "$T/good.xml" --emulator "$QEMU" --cpu "$TRACER_CPU" --output-dir "$T/traces" \
	--chanmap "$CHANMAP" --channels s0.mc0.ch0 --mem-path "$MEMFILE" --iomem "$IOMEM" --run-dir "$T/hvt" |
	cmp - "$T/good.xml" || fail "virt-xml on its own output changed it"

# virt-xml --domain: the plain domain as libvirt keeps it
"${VIRSH[@]}" define "$T/plain.xml" >/dev/null || fail "virsh define base"
"$BIN/hvmtrace" virt-xml --domain base --connect "$LV_URI" -o "$T/from-libvirt.xml" --emulator "$QEMU" \
	--cpu "$TRACER_CPU" --output-dir "$T/traces" --chanmap "$CHANMAP" --channels s0.mc0.ch0 --mem-path "$MEMFILE" \
	--iomem "$IOMEM" --run-dir "$T/hvt" || fail "virt-xml --domain failed"
virt-xml-validate "$T/from-libvirt.xml" >/dev/null || fail "virt-xml --domain's output does not validate"
"${VIRSH[@]}" define "$T/from-libvirt.xml" >/dev/null || fail "virsh define of virt-xml --domain's output"
"$BIN/hvmtrace" virt-xml --check "${LV_CHECK[@]}" --domain base --connect "$LV_URI" || fail "virt-xml --check --domain refuses it"
expect 1 "has no <hvmtrace:trace>" "$BIN/hvmtrace" virt-xml --check "$T/plain.xml"
# a stock QEMU (Debian's, where installed) is refused by --check in one line, before virsh start would fail
# with QEMU's "Parameter 'qom-type' does not accept value 'hvmtrace'"
if [ -x /usr/bin/qemu-system-x86_64 ]; then
	sed "s|<emulator>$QEMU</emulator>|<emulator>/usr/bin/qemu-system-x86_64</emulator>|" "$T/good.xml" >"$T/stock.xml"
	expect 1 "emulator /usr/bin/qemu-system-x86_64 is not hvmtrace's patched QEMU" \
		"$BIN/hvmtrace" virt-xml --check "${LV_CHECK[@]}" "$T/stock.xml"
	[ "$(wc -l <"$T/err")" = 1 ] || fail "stock QEMU: virt-xml --check said more than one line"
fi

# refused NAME TEXT SED-SCRIPT [FROM]: the good domain (or FROM) renamed NAME and edited by SED-SCRIPT is
# refused by both.
refused() {
	local name=$1 text=$2 rc=0 from=${4:-$T/good.xml}
	sed -e "s|<name>base</name>|<name>$name</name>|" -e "$3" "$from" >"$T/$name.xml"
	[ -n "$3" ] && cmp -s <(sed "s|<name>base</name>|<name>$name</name>|" "$from") "$T/$name.xml" &&
		fail "$name: the edit changed nothing"
	expect 1 "$text" "$BIN/hvmtrace" virt-xml --check "$T/$name.xml"
	[ "$(wc -l <"$T/err")" = 1 ] || fail "$name: virt-xml --check said more than one line"
	"${VIRSH[@]}" define "$T/$name.xml" >/dev/null || fail "virsh define $name"
	"${VIRSH[@]}" start "$name" >"$T/start.out" 2>&1 || rc=$?
	[ $rc != 0 ] || fail "$name: the domain started"
	assert_contains "$T/start.out" "unexpected exit status 1: hvmtrace: domain '$name': "
	assert_contains "$T/start.out" "$text"
	assert_eq "$name: its state" "shut off" "$("${VIRSH[@]}" domstate "$name")"
	[ ! -e "$T/hvt/$name" ] || fail "$name: the refused domain left $T/hvt/$name"
	pgrep -f "libvirt-hook.*$name" >/dev/null && fail "$name: a hook process of it is left"
	echo "ok: $name refused by the hook: $(grep -o "hvmtrace: domain .*" "$T/start.out")"
}

refused nochannel "channel s0.mc9.ch9 is not in the channel map" 's|s0.mc0.ch0|s0.mc9.ch9|g'
refused nochanmap "cannot open channel map $T/missing.json: No such file or directory" "s|$CHANMAP|$T/missing.json|g"
# explicit extents: the first 512 MiB of System RAM above the reservation
"$BIN/hvmtrace" virt-xml "$T/plain.xml" -o "$T/sysram-from.xml" --emulator "$QEMU" --cpu "$TRACER_CPU" \
	--output-dir "$T/traces" --extents 0x50000000:512M --mem-path "$MEMFILE" --iomem "$IOMEM" --run-dir "$T/hvt" ||
	fail "virt-xml --extents failed"
refused sysram "System RAM" "" "$T/sysram-from.xml"
refused nocpu "tracer CPU 1000 does not exist on this host" "s|cpu=\"$TRACER_CPU\"|cpu=\"1000\"|"
refused pinned "tracer CPU $TRACER_CPU is one the domain's vCPUs or emulator threads are pinned to" \
	"s|<vcpupin vcpu=\"0\" cpuset=\"[^\"]*\"|<vcpupin vcpu=\"0\" cpuset=\"$TRACER_CPU\"|"
# a traced domain renamed by hand: QEMU's sockets would not be where the hook looks
refused renamed "<qemu:commandline> puts the hvmtrace socket at $T/hvt/base/qemu/vm.sock, not $T/hvt/renamed/qemu/vm.sock: run hvmtrace virt-xml on this domain again" \
	""
refused readonly "output directory $T/ro is not writable" "s|output=\"$T/traces\"|output=\"$T/ro\"|"

# QEMU asking the helper for other memory than the request grants (its command line edited behind the
# metadata's back): the helper refuses, QEMU does not start, and the claim is released
sed -e 's|<name>base</name>|<name>mismatch</name>|' "$T/plain.xml" >"$T/mismatch-plain.xml"
"$BIN/hvmtrace" virt-xml "$T/mismatch-plain.xml" -o "$T/mismatch-from.xml" --emulator "$QEMU" --cpu "$TRACER_CPU" \
	--output-dir "$T/traces" --chanmap "$CHANMAP" --channels s0.mc0.ch0 --mem-path "$MEMFILE" --iomem "$IOMEM" \
	--run-dir "$T/hvt" || fail "virt-xml failed"
sed -e 's|&quot;channels&quot;:\[&quot;s0.mc0.ch0&quot;\]|\&quot;channels\&quot;:[\&quot;s0.mc0.ch1\&quot;]|' \
	"$T/mismatch-from.xml" >"$T/mismatch.xml"
grep -q 'quot;s0.mc0.ch1' "$T/mismatch.xml" || fail "mismatch: the edit changed nothing"
"$BIN/hvmtrace" virt-xml --check "${LV_CHECK[@]}" "$T/mismatch.xml" >/dev/null || fail "mismatch: its metadata should pass --check"
"${VIRSH[@]}" define "$T/mismatch.xml" >/dev/null || fail "virsh define mismatch"
rc=0
"${VIRSH[@]}" start mismatch >"$T/start.out" 2>&1 || rc=$?
[ $rc != 0 ] || fail "mismatch: QEMU started on memory the request does not grant"
assert_contains "$T/start.out" "refused: QEMU asks for 1 extent(s) starting 0x30000000, the domain's <hvmtrace:ram> grants 1 starting 0x10000000"
assert_eq "mismatch: its state" "shut off" "$("${VIRSH[@]}" domstate mismatch)"
[ ! -e "$T/hvt/mismatch/claim" ] || fail "mismatch: its claim outlived the failed start"
echo "ok: the helper refused QEMU's request for ungranted memory: $(grep -o 'devmem helper.*' "$T/start.out" | head -1)"

# (mismatch's log is there: the helper ran and said why it refused)
[ -z "$(ls -A "$T/traces" | grep -v '^mismatch.log$')" ] || fail "a refused domain wrote into the traces directory"
[ -z "$(ls -A "$T/hvt" | grep -v '^claims.lock$')" ] || fail "a refused domain left a run directory: $(ls "$T/hvt")"
