#!/bin/bash
# The tracer's systemd unit, hvmtrace/libvirt/hvmtrace@.service (docs/libvirt.md §4), as far as it can be checked
# without systemd running (this host has none): Debian's systemd-analyze verify loads the unit as
# `make install-libvirt` installs it, instantiated for a domain, with the runtime drop-in the hook's systemd
# route writes, and reports nothing about them; its dump shows the drop-in's CPU affinity and run
# directory, the capability bounding set and the command line. The same check reports a misspelt key and
# an ExecStart that is not executable (so it has teeth). The hook's systemd route runs in a private mount
# namespace whose /run/systemd/system exists (what the hook takes for "systemd runs"), with a systemctl
# first on PATH that records its arguments: `started` writes the drop-in and asks for daemon-reload and
# start --no-block of hvmtrace@vm.service. The unit's command for a domain with no VM exits 2, the status
# the unit does not restart (RestartPreventExitStatus=2), and leaves no trace file. Where systemd runs,
# virt-xml --check refuses an output directory under /tmp (the unit's PrivateTmp). The unit under a running
# systemd: e2e/libvirt_systemd.
# one build: the unit and hook's paths and files, not the build's code paths
source "$(dirname "$0")/../lib/assert.bash"
command -v systemd-analyze >/dev/null || skip "no systemd-analyze (Debian package systemd)"
command -v unshare >/dev/null || skip "no unshare"
[ "$(id -u)" = 0 ] || skip "needs root (a private mount namespace)"

mkdir -p "$T/units" "$T/hvt" "$T/bin" "$T/out"
sed "s|@BINDIR@|$BIN|" hvmtrace/libvirt/hvmtrace@.service >"$T/units/hvmtrace@.service"
# verify UNIT...: systemd-analyze verify with $T/units first on the unit path; its output, without what it
# says about other units (libvirtd.service, named in After=, may be newer than this systemd), in $T/verify
verify() {
	local rc=0
	SYSTEMD_UNIT_PATH=$T/units: SYSTEMD_LOG_LEVEL=${LOG_LEVEL:-info} systemd-analyze verify --man=no "$@" \
		>"$T/verify.all" 2>&1 || rc=$?
	grep -v -E '^/(lib|usr/lib|etc)/systemd/system/(libvirtd|virtqemud)[^:]*:' "$T/verify.all" |
		grep -v -E '^(Serializing|Handling|unit_file_build_name_map|Cannot stat)' >"$T/verify" || true
	return $rc
}

# ---- the hook's systemd route writes the drop-in and asks systemctl, then waits for the tracer to attach:
# here the stand-in's "start" attaches at once (record --attached-file), unless $T/unit-fails exists, when
# the unit fails instead (is-failed) and the started hook refuses the domain
cat >"$T/bin/systemctl" <<EOF
#!/bin/sh
echo "\$*" >>"$T/systemctl.log"
case "\$1" in
start) [ -e "$T/unit-fails" ] || { mkdir -p "$T/hvt/vm" && echo 1 >"$T/hvt/vm/attached"; } ;;
is-failed) [ -e "$T/unit-fails" ] ;;
esac
EOF
chmod 755 "$T/bin/systemctl"
cat >"$T/plain.xml" <<'EOX'
<domain type='qemu'><name>vm</name><memory unit='MiB'>64</memory><vcpu>1</vcpu>
<os><type arch='x86_64' machine='pc'>hvm</type></os></domain>
EOX
"$BIN/hvmtrace" virt-xml "$T/plain.xml" -o "$T/vm.xml" --emulator /usr/bin/qemu-system-x86_64 \
	--cpu "$TRACER_CPU" --output-dir "$T/out" --run-dir "$T/hvt" || fail "virt-xml"
unshare --mount --propagation private -- sh -c '
	mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system || exit 3
	PATH=$1/bin:$PATH "$2/hvmtrace" libvirt-hook vm started begin - <"$1/vm.xml" || exit $?
	cp -r /run/systemd/system/hvmtrace@vm.service.d "$1/units/"
' hook "$T" "$BIN" || fail "the hook's started (systemd route) failed: $?"
printf 'daemon-reload\nstart --no-block hvmtrace@vm.service\n' >"$T/want.log"
cmp -s "$T/want.log" "$T/systemctl.log" || fail "the hook asked systemctl: $(tr '\n' ';' <"$T/systemctl.log")"
ls "$T/units/hvmtrace@vm.service.d"
echo "ok: the hook's started: drop-in $(tr '\n' ' ' <"$T/units/hvmtrace@vm.service.d/cpu.conf"); systemctl $(tr '\n' ';' <"$T/systemctl.log")"
rm -rf "$T/hvt/vm" "$T/systemctl.log" && touch "$T/unit-fails"
rc=0
unshare --mount --propagation private -- sh -c '
	mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system || exit 3
	PATH=$1/bin:$PATH "$2/hvmtrace" libvirt-hook vm started begin - <"$1/vm.xml" 2>"$1/started.err"
' hook "$T" "$BIN" || rc=$?
assert_eq "the started hook's status when the unit fails" 1 "$rc"
assert_contains "$T/started.err" "the domain asks for a trace and no tracer could attach, so it does not start"
echo "ok: a unit that fails before attaching fails the started hook: $(cat "$T/started.err")"

# ---- where systemd runs, --check (and the hook's prepare) refuse an output directory the unit's sandbox
# hides: $T is under /tmp, which PrivateTmp=yes makes the unit's own and removes when it stops (the
# request fits otherwise; the emulator and the hook, which --check holds next, are not this test's)
sed -E "s|output=[\"']$T/out[\"']|output=\"/run/out\"|" "$T/vm.xml" >"$T/vm-run.xml"
grep -q 'output="/run/out"' "$T/vm-run.xml" || fail "no output directory $T/out in virt-xml's domain"
rc=0
unshare --mount --propagation private -- sh -c '
	mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/system /run/out || exit 3
	"$2/hvmtrace" virt-xml --check "$1/vm.xml" 2>"$1/check.err" && exit 4
	HVMTRACE_NO_SYSTEMD=1 "$2/hvmtrace" virt-xml --check "$1/vm.xml" 2>/dev/null | grep -q "request fits" || exit 5
	"$2/hvmtrace" virt-xml --check "$1/vm-run.xml" 2>/dev/null | grep -q "request fits" || exit 6
' check "$T" "$BIN" || rc=$?
[ $rc = 0 ] || { cat "$T/check.err"; fail "virt-xml --check where systemd runs: step $rc failed (4: /tmp accepted, 5: refused without systemd, 6: /run refused)"; }
assert_contains "$T/check.err" "output directory $T/out is under /tmp, where the tracer's systemd unit hvmtrace@.service cannot keep a trace (PrivateTmp=yes"
# the settings the refusals name are the unit's own
for setting in PrivateTmp=yes ProtectHome=yes ProtectSystem=full; do
	grep -qx "$setting" hvmtrace/libvirt/hvmtrace@.service || fail "the unit has no $setting, which hvt_lv_check's refusals name"
	strings "$BIN/hvmtrace" | grep -qF "$setting:" || fail "hvmtrace names no $setting in its refusals"
done
echo "ok: where systemd runs, virt-xml --check refuses an output under /tmp: $(cat "$T/check.err")"

# ---- systemd-analyze verify: the unit with the drop-in loads without a word, and says what it will run
verify hvmtrace@vm.service || { cat "$T/verify.all"; fail "systemd-analyze verify failed"; }
[ ! -s "$T/verify" ] || { cat "$T/verify"; fail "systemd-analyze verify has something to say about the unit"; }
LOG_LEVEL=debug verify hvmtrace@vm.service || { cat "$T/verify.all"; fail "systemd-analyze verify (debug) failed"; }
grep -q "DropIn Path: $T/units/hvmtrace@vm.service.d/cpu.conf" "$T/verify" || fail "the drop-in was not loaded"
assert_contains "$T/verify" "CPUAffinity: $TRACER_CPU"
assert_contains "$T/verify" "Environment: HVMTRACE_RUN_DIR=$T/hvt"
assert_contains "$T/verify" "Command Line: $BIN/hvmtrace libvirt-hook --run vm"
grep -E 'CapabilityBoundingSet:' "$T/verify" | sed 's/^[[:space:]]*/ok: /'
for cap in cap_dac_override cap_perfmon cap_sys_admin cap_ipc_lock cap_setpcap; do
	grep -E 'CapabilityBoundingSet:' "$T/verify" | grep -qw "$cap" || fail "the unit's bounding set lacks $cap"
done
[ "$(grep -E 'CapabilityBoundingSet:' "$T/verify" | wc -w)" = 6 ] || fail "the unit's bounding set has more than record needs"
echo "ok: systemd-analyze verify hvmtrace@vm.service (with the hook's drop-in): nothing to say"

# ---- the same check reports a misspelt key and a command that is not there
printf '[Service]\nCPUAffinty=1\n' >"$T/units/hvmtrace@vm.service.d/typo.conf"
verify hvmtrace@vm.service
assert_contains "$T/verify" "Unknown key 'CPUAffinty'"
rm "$T/units/hvmtrace@vm.service.d/typo.conf"
sed "s|@BINDIR@|$T/nowhere|" hvmtrace/libvirt/hvmtrace@.service >"$T/units/broken@.service"
verify broken@vm.service && fail "systemd-analyze verify passed a unit whose ExecStart does not exist"
assert_contains "$T/verify" "is not executable"
echo "ok: systemd-analyze verify reports a misspelt key and a missing command"

# ---- the unit's command for a domain whose QEMU is gone (its XML saved at start, as the hook does; no
# QEMU socket) exits 2, which the unit does not restart, and leaves no trace file
grep -q '^RestartPreventExitStatus=2$' "$T/units/hvmtrace@.service" || fail "the unit does not keep exit 2 from restarting"
mkdir -p "$T/hvt/vm" && cp "$T/vm.xml" "$T/hvt/vm/domain.xml"
rc=0
HVMTRACE_RUN_DIR=$T/hvt "$BIN/hvmtrace" libvirt-hook --run vm 2>"$T/run.err" || rc=$?
assert_eq "hvmtrace libvirt-hook --run for a domain with no VM: exit status" 2 "$rc"
[ -z "$(ls "$T/out")" ] || fail "a tracer that found no VM left a trace file: $(ls "$T/out")"
echo "ok: libvirt-hook --run vm without a VM: exit 2, no trace file ($(tail -n 1 "$T/run.err"))"
