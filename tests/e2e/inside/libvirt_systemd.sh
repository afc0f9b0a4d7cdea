#!/bin/bash
# The inside of e2e/libvirt_systemd: runs as a oneshot unit in the container, systemd its PID 1, after
# Debian's libvirtd.service. Its verdict is its exit status and its output (the container's /out/log).
# Environment (the unit's): ROOT, BUILD, QEMU (at the host's paths, bound read-only), IMG (the guest's
# kernel and initramfs), TRACES (outside /tmp: the tracer's unit has PrivateTmp=yes), PREFIX (where
# `make install-libvirt` put hvmtrace).
source "$ROOT/tests/lib/assert.bash"
source "$ROOT/tests/lib/libvirt.bash"

UNIT=hvmtrace@vm.service
VIRSH=(virsh -q -c qemu:///system)
HVT=$PREFIX/bin/hvmtrace
SHM=/dev/shm/hvt-test
mkdir -p "$SHM" "$TRACES"

prop() { systemctl show -P "$1" "$UNIT"; }
active() { [ "$(prop ActiveState)" = active ] && [ "$(prop MainPID)" != 0 ]; }
inactive() { [ "$(prop ActiveState)" = inactive ]; }
traces() { ls "$TRACES"/vm-*.hvt 2>/dev/null | sort; }
ntraces_is() { [ "$(traces | wc -l)" = "$1" ]; }
qemu_pid() { cat /run/libvirt/qemu/vm.pid 2>/dev/null; }
record_pid() { cat /run/hvmtrace/vm/tracer.pid 2>/dev/null; }
status_field() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }

[ "$(cat /proc/1/comm)" = systemd ] || fail "PID 1 is $(cat /proc/1/comm), not systemd"
[ -d /run/systemd/system ] || fail "no /run/systemd/system: the hook would take its detached route"
systemctl is-active -q libvirtd.service || {
	systemctl status --no-pager libvirtd.service libvirtd.socket 2>&1 | head -n 40
	journalctl -b -q --no-pager -u libvirtd.service -u libvirtd.socket | tail -n 20
	fail "libvirtd.service is $(systemctl is-active libvirtd.service)"
}
echo "ok: systemd $(systemctl --version | awk 'NR == 1 { print $2 }') is PID 1; libvirtd.service active"

lv_test_memory
cp "$IMG/vmlinux" "$IMG/initrd" "$T/"
lv_plain_array_domain vm "$T/vmlinux" "$T/initrd" $((32 << 20)) 3600 >"$T/plain.xml"
"$HVT" virt-xml "$T/plain.xml" -o "$T/vm.xml" --emulator "$QEMU" --cpu "$TRACER_CPU" --interval 1s \
	--output-dir "$TRACES" --chanmap "$CHANMAP" --channels s0.mc0.ch0 --mem-path "$MEMFILE" \
	--iomem "$IOMEM" || fail "virt-xml failed"
"$HVT" virt-xml --check "$T/vm.xml" || fail "virt-xml --check refuses the domain virt-xml wrote"
# the unit's PrivateTmp=yes would keep a trace under /tmp in the unit's own /tmp, removed when it stops
sed -E "s|output=[\"']$TRACES[\"']|output=\"$T\"|" "$T/vm.xml" >"$T/vm-tmp.xml"
grep -q "output=\"$T\"" "$T/vm-tmp.xml" || fail "no output directory $TRACES in virt-xml's domain"
! "$HVT" virt-xml --check "$T/vm-tmp.xml" 2>"$T/tmp.err" || fail "virt-xml --check took an output under /tmp"
assert_contains "$T/tmp.err" "is under /tmp, where the tracer's systemd unit hvmtrace@.service cannot keep a trace"
echo "ok: virt-xml --check refuses an output under /tmp: $(cat "$T/tmp.err")"
"${VIRSH[@]}" define "$T/vm.xml" >/dev/null || fail "virsh define"

# ---- 1. virsh start: the hook starts the unit with the drop-in's CPU; the unit's limits hold in the tracer
"${VIRSH[@]}" start vm >"$T/start.out" 2>&1 || {
	cat "$T/start.out"
	journalctl -b -q --no-pager -u libvirtd.service | tail -n 20
	fail "virsh start"
}
qpid=$(qemu_pid)
[ -n "$qpid" ] || fail "no QEMU pid"
wait_until "$UNIT did not become active" "$qpid" active
wait_until "no trace file appeared" "$qpid" ntraces_is 1
first=$(traces)
s=$(size_of "$first")
wait_until "the trace $first did not grow" "$qpid" grows "$first" "$s"
[ ! -e /run/hvmtrace/vm/supervisor.pid ] || fail "the hook detached a supervisor although systemd runs"
assert_eq "the drop-in's CPU affinity" "$TRACER_CPU" "$(prop CPUAffinity)"
main=$(prop MainPID)
rp=$(record_pid)
[ -n "$rp" ] || fail "no tracer pid"
assert_eq "the tracer's parent (the unit's main process)" "$main" "$(awk '{ print $4 }' "/proc/$rp/stat")"
grep -qx "$UNIT" <(sed -n 's|.*/\([^/]*\.service\)$|\1|p' "/proc/$rp/cgroup" | sort -u) ||
	fail "the tracer is not in $UNIT's cgroup: $(cat "/proc/$rp/cgroup")"
assert_eq "the tracer's CPUs" "$TRACER_CPU" "$(status_field "$rp" Cpus_allowed_list)"
assert_eq "the tracer's NoNewPrivs" 1 "$(status_field "$rp" NoNewPrivs)"
# the unit's CapabilityBoundingSet (the tracer may narrow it further once attached): CAP_DAC_OVERRIDE (1), CAP_SETPCAP (8), CAP_IPC_LOCK (14),
# CAP_SYS_ADMIN (21), CAP_PERFMON (38)
want=$(printf '%016x' $(((1 << 1) | (1 << 8) | (1 << 14) | (1 << 21) | (1 << 38))))
assert_eq "the unit's main process's capability bounding set" "$want" "$(status_field "$main" CapBnd)"
bnd=$(status_field "$rp" CapBnd)
[ $((0x$bnd & ~0x$want)) = 0 ] || fail "the tracer's capability bounding set $bnd exceeds the unit's $want"
assert_eq "the tracer's effective capabilities once attached" 0000000000000000 "$(status_field "$rp" CapEff)"
# LimitMEMLOCK=infinity: systemd raises the limit with CAP_SYS_RESOURCE, which some sandboxes withhold from
# everything they run (this container then included): there systemd sets the closest limit it can.
assert_eq "the unit's LimitMEMLOCK" infinity "$(prop LimitMEMLOCK)"
if (($(printf '%d' "0x$(status_field 1 CapBnd)") & (1 << 24))); then
	assert_eq "the tracer's RLIMIT_MEMLOCK" unlimited "$(awk '/^Max locked memory/ { print $4 }' "/proc/$rp/limits")"
else
	echo "note: no CAP_SYS_RESOURCE here, so LimitMEMLOCK=infinity is applied as $(awk '/^Max locked memory/ { print $4 }' "/proc/$rp/limits") bytes; the tracer locks with CAP_IPC_LOCK"
fi
echo "ok: virsh start -> $UNIT active (main $main with CapBnd $want; tracer $rp on CPU $TRACER_CPU, CapBnd $bnd, CapEff 0) writing $first"

# ---- 2. systemctl restart libvirtd: the hook's reconnect keeps the running unit and its tracer
systemctl restart libvirtd.service || fail "systemctl restart libvirtd"
"${VIRSH[@]}" domstate vm | grep -qx running || fail "vm is not running after libvirtd's restart"
active || fail "$UNIT is $(prop ActiveState) after libvirtd's restart"
assert_eq "the unit's main process after libvirtd's restart" "$main" "$(prop MainPID)"
assert_eq "the tracer after libvirtd's restart" "$rp" "$(record_pid)"
assert_eq "trace files after libvirtd's restart" 1 "$(traces | wc -l)"
echo "ok: systemctl restart libvirtd: reconnect kept $UNIT (main $main) and its tracer"

# ---- 3. kill -9 of the tracer: systemd restarts the unit (Restart=on-failure), which writes a new file
wait_until "the first trace has no interval yet" "$qpid" has_interval "$first"
kill -9 "$rp"
restarted() { [ "$(prop NRestarts)" = 1 ] && active && ntraces_is 2; }
wait_until "systemd did not restart $UNIT after kill -9 of its tracer" "$qpid" restarted
second=$(traces | grep -v -F "$first")
export_trace "$first"
[ "$RC" = 3 ] || { cat "$T/x.err"; fail "the killed tracer's trace: expected export's exit 3 (cut short), got $RC"; }
[ "$N" -ge 1 ] || fail "the killed tracer's trace holds no interval"
s=$(size_of "$second")
wait_until "the restarted unit's trace does not grow" "$qpid" grows "$second" "$s"
echo "ok: kill -9: systemd restarted $UNIT (NRestarts 1), new file $second; the old one reads to interval $N"

# ---- 4. virsh destroy: the tracer ends with QEMU, the unit goes inactive (not failed), the trace is whole
"${VIRSH[@]}" destroy vm >/dev/null || fail "virsh destroy"
wait_until "$UNIT did not stop after virsh destroy" 1 inactive
assert_eq "the unit's result" success "$(prop Result)"
! pgrep -f "hvmtrace record --attach /run/hvmtrace/vm/" >/dev/null || fail "a tracer of vm is still running"
export_trace "$second"
[ "$RC" = 0 ] || { cat "$T/x.err"; fail "virsh destroy left an incomplete trace (export exit $RC)"; }
[ "$N" -ge 1 ] || fail "the trace after destroy holds no interval"
tail -n 1 "$T/x.jsonl" | grep -q '"final":true' || fail "the trace after destroy ends with no final interval"
[ ! -e /run/hvmtrace/vm/claim ] || fail "the claim on the memory outlived the domain"
echo "ok: virsh destroy: $UNIT inactive (result success), $second complete ($N intervals), memory released"
journalctl -q -o cat -u "$UNIT" | sed 's/^/journal: /'
