#!/bin/bash
# A real libvirt daemon starts, traces and stops a domain that `hvmtrace virt-xml` made from a plain one
# (docs/libvirt.md). The daemon is Debian's, with its security model as shipped: QEMU runs as libvirt-qemu
# with no capabilities, so its guest RAM (memory-backend-devmem on a tmpfs file standing in for /dev/mem,
# checked against a recorded iomem) reaches it only through the devmem helper the hook starts. The guest is
# the built-in Linux guest running the array program under TCG.
#  1. virsh define + start: a trace DIR/vm-<time>.hvt appears and grows; QEMU is unprivileged
#     (/proc/PID/status); the guest powers itself off at the end (shutdown from inside); the trace is
#     complete and its written sets pass e2e/qemu_record_tcg's check; no tracer process is left.
#  2. a second start (the guest now works for an hour, so nothing below races its poweroff) writes a
#     second file; a second domain asking for the same memory is refused by the hook with one line and
#     does not start; record --domain finds the socket through libvirt; libvirtd restarts and the hook's
#     reconnect keeps the running tracer; kill -9 of the tracer: the hook's supervisor starts a new one
#     with a new file, the old file stays readable up to its last complete interval; virsh destroy leaves
#     the new trace complete and no tracer, and release removes the domain's run directory (the run-dir
#     stays 0711).
#  3. virsh start returns with the tracer attached (the started hook waits for it); a paused domain
#     destroyed: no tracer restarted, no run directory left.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
source "$(dirname "$0")/../lib/libvirt.bash"
need_qemu
need_libvirt
QEMU_DIR=$(dirname "$QEMU")
SIZE=$((32 << 20)) PHASE=6

guest_linux
# libvirt relabels the kernel and initrd for QEMU's user: copies, not the cache's files
mkdir -p "$T/img" "$T/traces" "$T/hvt"
cp "$kernel" "$T/img/vmlinux" && cp "$initrd" "$T/img/initrd"
lv_test_memory
lv_hook
start_libvirtd

lv_plain_array_domain vm "$T/img/vmlinux" "$T/img/initrd" $SIZE $PHASE >"$T/plain.xml"
"$BIN/hvmtrace" virt-xml "$T/plain.xml" -o "$T/vm.xml" --emulator "$QEMU" --cpu "$TRACER_CPU" --interval 1s \
	--output-dir "$T/traces" --chanmap "$CHANMAP" --channels s0.mc0.ch0 --mem-path "$MEMFILE" --iomem "$IOMEM" \
	--run-dir "$T/hvt" || fail "virt-xml failed"
virt-xml-validate "$T/vm.xml" || fail "virt-xml's domain does not validate"
xmllint --xpath '//*[local-name()="trace"]' "$T/vm.xml" | xmllint --noout --relaxng docs/libvirt-trace.rng - ||
	fail "the metadata does not match docs/libvirt-trace.rng"
lv_check_opts
"$BIN/hvmtrace" virt-xml --check "${LV_CHECK[@]}" "$T/vm.xml" || fail "virt-xml --check refuses the domain virt-xml wrote"
"${VIRSH[@]}" define "$T/vm.xml" >/dev/null || fail "virsh define"

traces() { ls "$T/traces"/vm-*.hvt 2>/dev/null | sort; }
ntraces() { traces | wc -l; }
tracer_pid() { cat "$T/hvt/vm/tracer.pid" 2>/dev/null; }
state_is() { [ "$("${VIRSH[@]}" domstate "$1" 2>/dev/null)" = "$2" ]; }
running() { state_is vm running; }
# waits re-evaluate their condition: these are the conditions
ntraces_is() { [ "$(ntraces)" = "$1" ]; }
# attached_is N: the hook's tracers have attached N times (the domain's log, beside its traces, is appended to across starts)
attached_is() { [ "$(grep -c 'attached to VM' "$T/traces/vm.log" 2>/dev/null)" = "$1" ]; }
no_tracer_left() {
	! pgrep -f "hvmtrace record --attach $T/hvt/vm/" >/dev/null || fail "a tracer of vm is still running: $(pgrep -af "hvmtrace record --attach $T/hvt/vm/")"
	[ ! -e "$T/hvt/vm/supervisor.pid" ] || fail "the hook's supervisor is still there"
}
# console: the guest's serial pty, each line stamped with the host's monotonic clock (check_array)
follow_console() {
	local pty
	pty=$("${VIRSH[@]}" ttyconsole vm) || fail "no console pty"
	"$TOOLS/stamp_lines" <"$pty" >"$1" &
	BG_PIDS+=($!)
}

# ---- 1. start; the guest runs the array program and powers off
"${VIRSH[@]}" start vm >"$T/start.out" 2>&1 || { cat "$T/start.out" "$LV/log/qemu/vm.log"; fail "virsh start"; }
follow_console "$T/console1"
qpid=$(qemu_pid_of vm)
[ -n "$qpid" ] || fail "no QEMU pid"
grep -E '^(Uid|Gid|CapEff|CapPrm)' /proc/$qpid/status >"$T/status"
cat "$T/status"
uid=$(id -u libvirt-qemu)
assert_eq "QEMU's uids (real, effective, saved, fs)" "$uid $uid $uid $uid" "$(awk '/^Uid/ { print $2, $3, $4, $5 }' "$T/status")"
assert_eq "QEMU's effective capabilities" 0000000000000000 "$(awk '/^CapEff/ { print $2 }' "$T/status")"
[ ! -r /proc/$qpid/root"$MEMFILE" ] || [ "$(stat -c %u "$MEMFILE")" = 0 ] || fail "the memory file is not root's"
wait_until "no trace file appeared" "$qpid" ntraces_is 1
first=$(traces)
s1=$(size_of "$first")
wait_until "the trace $first did not grow while the domain ran" "$qpid" grows "$first" "$s1"
echo "ok: $first grows ($s1 -> $(size_of "$first") bytes) while the domain runs"
wait_until "the domain did not power off" "$LIBVIRTD_PID" state_is vm "shut off"
wait_until "the hook's supervisor did not finish" "$LIBVIRTD_PID" test ! -e "$T/hvt/vm/supervisor.pid"
no_tracer_left
grep HVT "$T/console1" | grep -v C-RUN | head
grep -q 'HVT EXIT 0' "$T/console1" || fail "the array program did not finish"
export_trace "$first"
n=$N
[ "$RC" = 0 ] || { cat "$T/x.err"; fail "the trace after the guest's own poweroff is not complete (export exit $RC)"; }
"$TOOLS/check_array" --trace "$first" --console "$T/console1" --min-intervals 3 || fail "written sets do not match the array program"
tail -n 1 "$T/x.jsonl" | grep -q '"final":true' || fail "the guest's shutdown did not end the trace with a final interval"
echo "ok: shutdown from inside the guest: $first complete, $n intervals, written sets exact, no tracer left"
cat "$T/traces/vm.log"

# ---- 2. a second start, a competing domain, kill -9 of the tracer, virsh destroy
# the guest now works for an hour: what follows must find it running however slow this host is, and ends
# it with virsh destroy
"${VIRSH[@]}" dumpxml --inactive vm | sed "s/hvt.phase=$PHASE/hvt.phase=3600/" >"$T/vm-long.xml"
grep -q 'hvt.phase=3600' "$T/vm-long.xml" || fail "no hvt.phase in the domain's command line"
"${VIRSH[@]}" define "$T/vm-long.xml" >/dev/null || fail "virsh define (long guest)"
"${VIRSH[@]}" start vm >"$T/start.out" 2>&1 || { cat "$T/start.out"; fail "second virsh start"; }
qpid=$(qemu_pid_of vm)
wait_until "the second start wrote no second trace file" "$qpid" ntraces_is 2
second=$(traces | grep -v -F "$first")
echo "ok: the second start writes a second file: $second"
# the file is made before the attach: let the hook's tracer attach first, or the manual one would race it
wait_until "the hook's second tracer did not attach" "$qpid" attached_is 2

# record --domain finds the socket and QEMU's user through the libvirt API; the hook's tracer holds it
expect 2 "refused the connection (busy)" "$BIN/hvmtrace" record --domain vm --connect "$LV_URI" -o "$T/manual.hvt"

sed -e 's|<name>vm</name>|<name>vm2</name>|' -e '/<uuid>/d' "$T/vm-long.xml" >"$T/vm2.xml"
"${VIRSH[@]}" define "$T/vm2.xml" >/dev/null || fail "virsh define vm2"
rc=0
"${VIRSH[@]}" start vm2 >"$T/vm2.out" 2>&1 || rc=$?
[ $rc != 0 ] || fail "a second domain on the same memory started"
assert_contains "$T/vm2.out" "is in use by running domain 'vm'"
[ "$("${VIRSH[@]}" domstate vm2)" = "shut off" ] || fail "vm2 is not shut off"
running || fail "refusing vm2 disturbed vm"
echo "ok: vm2 refused: $(grep -o 'hvmtrace: .*' "$T/vm2.out")"

# libvirtd restarts: it reconnects to vm, the hook's "reconnect" keeps the tracer that runs
tp=$(tracer_pid)
[ -n "$tp" ] || fail "no tracer pid"
restart_libvirtd
# the daemon reports the domain once its reconnect has run; QEMU dying ends the wait at once
(wait_until "vm is not running after the daemon's restart" "$qpid" running) || {
	tail -n 30 "$LV/log/stdout" "$LV/log/qemu/vm.log" "$T/traces/vm.log" 2>&1
	fail "vm did not survive the daemon's restart"
}
assert_eq "the tracer after the daemon's restart (reconnect)" "$tp" "$(tracer_pid)"
kill -0 "$tp" || fail "the tracer died when the daemon restarted"
assert_eq "trace files after reconnect" 2 "$(ntraces)"
echo "ok: libvirtd restarted; reconnect kept tracer $tp and its file"

wait_until "the second trace has no interval yet" "$qpid" has_interval "$second"
tp=$(tracer_pid)
[ -n "$tp" ] || fail "no tracer pid"
kill -9 "$tp"
wait_until "the tracer killed with -9 was not replaced by a new one with a new file" "$qpid" ntraces_is 3
third=$(traces | grep -v -F -e "$first" -e "$second")
export_trace "$second"
n=$N
[ "$RC" = 3 ] || { cat "$T/x.err"; fail "the killed tracer's trace: expected export's exit 3 (cut short), got $RC"; }
[ "$n" -ge 1 ] || fail "the killed tracer's trace holds no interval"
echo "ok: kill -9: new tracer writes $third; the old trace reads to its last complete interval ($n intervals)"
s3=$(size_of "$third")
wait_until "the new trace does not grow" "$qpid" grows "$third" "$s3"

"${VIRSH[@]}" destroy vm >/dev/null || fail "virsh destroy"
wait_until "the hook's supervisor did not finish" "$LIBVIRTD_PID" test ! -e "$T/hvt/vm/supervisor.pid"
no_tracer_left
export_trace "$third"
n=$N
[ "$RC" = 0 ] || { cat "$T/x.err"; fail "virsh destroy left an incomplete trace (export exit $RC)"; }
[ "$n" -ge 1 ] || fail "the trace after destroy holds no interval"
[ ! -e "$T/hvt/vm/claim" ] || fail "the claim on the memory outlived the domain"
echo "ok: virsh destroy: $third complete ($n intervals), no tracer left, memory released"
wait_until "release left the domain's run directory $T/hvt/vm" "$LIBVIRTD_PID" test ! -e "$T/hvt/vm"
assert_eq "the run-dir's mode" 711 "$(stat -c %a "$T/hvt")"
echo "ok: release removed $T/hvt/vm; $T/hvt stays 0711"

# a paused domain destroyed: its tracer loses the VM without a bye; the supervisor must not restart it
log_from=$(size_of "$T/traces/vm.log")
"${VIRSH[@]}" start vm >"$T/start.out" 2>&1 || { cat "$T/start.out"; fail "fourth virsh start"; }
qpid=$(qemu_pid_of vm)
attached_is 4 || fail "virsh start returned before the hook's tracer attached (the started hook waits for it)"
"${VIRSH[@]}" suspend vm >/dev/null || fail "virsh suspend"
"${VIRSH[@]}" destroy vm >/dev/null || fail "virsh destroy of the paused domain"
wait_until "release left the domain's run directory after the paused destroy" "$LIBVIRTD_PID" test ! -e "$T/hvt/vm"
no_tracer_left
tail -c +$((log_from + 1)) "$T/traces/vm.log" >"$T/paused.log"
! grep -q "restarting the tracer" "$T/paused.log" || { cat "$T/paused.log"; fail "destroying a paused domain restarted its tracer"; }
echo "ok: a paused domain destroyed: no tracer restarted ($(grep -c . "$T/paused.log") log lines)"
cat "$T/traces/vm.log"
