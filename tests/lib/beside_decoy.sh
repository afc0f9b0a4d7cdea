#!/bin/bash
# tests/lib/beside_decoy.sh COMMAND...: runs COMMAND (a libvirt test) beside a decoy of a host's system libvirt
# daemon, as on every libvirt user's host. The decoy is the daemon the tests use (virtqemud or libvirtd) with
# its default paths: its pid file /run/DAEMON.pid locked, its sockets in /run/libvirt. It and COMMAND run in
# mount, network and pid namespaces of their own whose /run, /var/lib/libvirt, /var/log/libvirt and
# /var/cache/libvirt are empty tmpfs and whose /etc/libvirt is a copy without hooks or autostarted
# networks: nothing of the host is touched, and the pid namespace ends every process with COMMAND. COMMAND
# sees DECOY_PID and DECOY_SOCK (the decoy's default socket). Needs root; exits 77 with a reason otherwise.
# `BUILD=build/check tests/lib/beside_decoy.sh bash tests/e2e/libvirt_trace.sh` runs an e2e test so.
set -u
if [ -z "${HVT_DECOY_NS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "needs root (namespaces, a libvirt daemon)"; exit 77; }
	command -v unshare >/dev/null || { echo "no unshare"; exit 77; }
	HVT_DECOY_NS=1 exec unshare --mount --net --pid --fork --kill-child --mount-proc --propagation private \
		-- bash "$0" "$@"
fi
LIBVIRTD=$(command -v virtqemud || command -v libvirtd) || { echo "no libvirt daemon"; exit 77; }
DAEMON=$(basename "$LIBVIRTD")
etc=$(mktemp -d /tmp/hvmtrace-decoy.XXXXXX) || exit 1
cp -a /etc/libvirt/. "$etc/"
rm -rf "$etc/hooks" "$etc/qemu/networks/autostart" "$etc/qemu/autostart"
echo 'log_outputs = "3:stderr"' >>"$etc/$DAEMON.conf"
for d in /run /var/lib/libvirt /var/log/libvirt /var/cache/libvirt; do
	mkdir -p "$d" && mount -t tmpfs -o mode=0755 tmpfs "$d" || { echo "cannot mount a tmpfs at $d"; exit 77; }
done
mount --bind "$etc" /etc/libvirt || { echo "cannot bind a copy of /etc/libvirt"; exit 77; }
"$LIBVIRTD" >/run/decoy.log 2>&1 &
DECOY_PID=$!
DECOY_SOCK=/run/libvirt/$DAEMON-sock
[ "$DAEMON" = libvirtd ] && DECOY_SOCK=/run/libvirt/libvirt-sock
for _ in $(seq 6000); do
	[ -S "$DECOY_SOCK" ] && [ "$(cat "/run/$DAEMON.pid" 2>/dev/null)" = "$DECOY_PID" ] && break
	kill -0 "$DECOY_PID" 2>/dev/null || { cat /run/decoy.log; echo "FAIL: the decoy daemon exited"; exit 1; }
	sleep 0.05
done
[ -S "$DECOY_SOCK" ] || { echo "FAIL: the decoy daemon did not open $DECOY_SOCK"; exit 1; }
echo "decoy: $DAEMON pid $DECOY_PID holds /run/$DAEMON.pid and $DECOY_SOCK"
export DECOY_PID DECOY_SOCK
rc=0
"$@" || rc=$?
kill -0 "$DECOY_PID" 2>/dev/null || { echo "FAIL: the decoy daemon died during the test"; rc=1; }
kill "$DECOY_PID" 2>/dev/null
wait "$DECOY_PID" 2>/dev/null
umount /etc/libvirt
rm -rf "$etc"
exit $rc
