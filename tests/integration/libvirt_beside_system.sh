#!/bin/bash
# The tests' private libvirt daemon starts beside a system one (every libvirt user's host runs one;
# tests/lib/libvirt.bash): a decoy, the same daemon with its default paths (its pid file /run/libvirtd.pid
# or /run/virtqemud.pid locked, its sockets in /run/libvirt), runs in this test's own mount, network and
# pid namespaces, whose /run, /var/lib/libvirt, /var/log/libvirt and /var/cache/libvirt are empty tmpfs
# and whose /etc/libvirt is a copy without hooks or autostarted networks, so that it touches nothing of the
# host and ends with the test. The private daemon then starts beside it and answers virsh, and the decoy
# still answers on the default socket. And the hooks (docs/libvirt.md §4): a daemon started before the
# hooks were installed has not loaded them, which virt-xml --check-hook says (exit 1) with what to do;
# restarted, it has, and --check-hook says so (exit 0). No QEMU is needed: no domain starts.
# one build: the tests' daemon and the hooks' paths, not the build's code paths
if [ -z "${HVT_BESIDE_NS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "needs root (namespaces, a libvirt daemon)"; exit 77; }
	command -v unshare >/dev/null || { echo "no unshare"; exit 77; }
	HVT_BESIDE_NS=1 exec unshare --mount --net --pid --fork --kill-child --mount-proc --propagation private \
		-- bash "$0" "$@"
fi
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/libvirt.bash"
need_libvirt
lv_check_opts

# The decoy: the packaged configuration without hooks or autostart, everything it writes on tmpfs.
DAEMON=$(basename "$LIBVIRTD")
mkdir -p "$T/decoy-etc"
cp -a /etc/libvirt/. "$T/decoy-etc/"
rm -rf "$T/decoy-etc/hooks" "$T/decoy-etc/qemu/networks/autostart" "$T/decoy-etc/qemu/autostart"
echo 'log_outputs = "3:stderr"' >>"$T/decoy-etc/$DAEMON.conf"
for d in /run /var/lib/libvirt /var/log/libvirt /var/cache/libvirt; do
	mkdir -p "$d" && mount_at "$d" -t tmpfs -o mode=0755 tmpfs || skip "cannot mount a tmpfs at $d"
done
mount_at /etc/libvirt --bind "$T/decoy-etc" || skip "cannot bind a copy of /etc/libvirt"
"$LIBVIRTD" >"$T/decoy.log" 2>&1 &
DECOY=$!
BG_PIDS+=("$DECOY")
DEFAULT_SOCK=/run/libvirt/$DAEMON-sock
[ "$DAEMON" = libvirtd ] && DEFAULT_SOCK=/run/libvirt/libvirt-sock
wait_until "the decoy daemon did not open $DEFAULT_SOCK" "$DECOY" test -S "$DEFAULT_SOCK"
wait_until "the decoy daemon did not write /run/$DAEMON.pid" "$DECOY" test -s "/run/$DAEMON.pid"
assert_eq "the decoy holds the default pid file" "$DECOY" "$(cat "/run/$DAEMON.pid")"

# The private daemon beside it, started before the hooks are installed.
start_libvirtd
"${VIRSH[@]}" list --all >/dev/null || fail "virsh cannot talk to the private daemon beside the decoy"
kill -0 "$DECOY" || fail "the decoy died when the private daemon started"
virsh -q -c "qemu:///system?socket=$DEFAULT_SOCK" list --all >/dev/null || fail "the decoy stopped answering"
[ "$(readlink "/proc/$(cat "$LV/run/$DAEMON.pid")/exe")" = "$(readlink -f "$LIBVIRTD")" ] ||
	fail "the private daemon's own pid file $LV/run/$DAEMON.pid does not name it"

# Hooks installed while the daemon runs are not loaded until it restarts.
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
