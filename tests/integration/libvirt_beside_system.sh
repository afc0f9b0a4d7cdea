#!/bin/bash
# The tests' private libvirt daemon starts beside a system one (every libvirt user's host runs one;
# tests/lib/libvirt.bash): a decoy, the same daemon with its default paths (its pid file /run/libvirtd.pid
# or /run/virtqemud.pid locked, its sockets in /run/libvirt), runs in this test's own namespaces
# (tests/lib/beside_decoy.sh), touching nothing of the host. The private daemon then starts beside it and
# answers virsh, and the decoy still answers on the default socket. And the hooks (docs/libvirt.md §4.1):
# a daemon started before the hooks were installed has not loaded them, which virt-xml --check-hook says
# (exit 1) with what to do; restarted, it has, and --check-hook says so (exit 0); a qemu hook removed is
# reported not installed. No QEMU is needed: no domain starts. (The e2e tests run beside the decoy too:
# tests/lib/beside_decoy.sh bash tests/e2e/libvirt_trace.sh.)
# one build: the tests' daemon and the hooks' paths, not the build's code paths
[ -n "${DECOY_PID:-}" ] || exec "$(dirname "$0")/../lib/beside_decoy.sh" bash "$0" "$@"
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/libvirt.bash"
need_libvirt
lv_check_opts
DAEMON=$(basename "$LIBVIRTD")
assert_eq "the decoy holds the default pid file" "$DECOY_PID" "$(cat "/run/$DAEMON.pid")"

# The private daemon beside it, started before the hooks are installed.
start_libvirtd
"${VIRSH[@]}" list --all >/dev/null || fail "virsh cannot talk to the private daemon beside the decoy"
kill -0 "$DECOY_PID" || fail "the decoy died when the private daemon started"
virsh -q -c "qemu:///system?socket=$DECOY_SOCK" list --all >/dev/null || fail "the decoy stopped answering"
[ "$(readlink "/proc/$(cat "$LV/run/$DAEMON.pid")/exe")" = "$(readlink -f "$LIBVIRTD")" ] ||
	fail "the private daemon's own pid file $LV/run/$DAEMON.pid does not name it"

# Hooks installed while the daemon runs are not loaded until it restarts; make install-libvirt says what
# to do when a daemon runs (its note, here where the decoy and the private daemon run)
make -s libvirt-daemon-note >"$T/note" 2>&1 || fail "make libvirt-daemon-note: $(cat "$T/note")"
assert_contains "$T/note" "a libvirt daemon runs; it loads the hooks only when it starts or reloads" \
	"systemctl restart libvirtd (or virtqemud); without systemd: kill -HUP" "hvmtrace virt-xml --check-hook"
lv_hook
expect 1 "has not loaded the hvmtrace hook: restart libvirtd (or virtqemud)" \
	"$HVT" virt-xml --check-hook "${LV_CHECK[@]}"
restart_libvirtd
"$HVT" virt-xml --check-hook "${LV_CHECK[@]}" >"$T/out" || fail "--check-hook after the restart: $(cat "$T/out")"
assert_contains "$T/out" "has loaded the hvmtrace hook"
# A hook removed since the daemon loaded it is not there to run.
rm "$LV/etc/hooks/qemu.d/hvmtrace"
expect 1 "is not installed" "$HVT" virt-xml --check-hook "${LV_CHECK[@]}"
stop_libvirtd
echo "ok: the private daemon started and answered beside a daemon holding the default paths"
