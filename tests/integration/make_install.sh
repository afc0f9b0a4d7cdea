#!/bin/bash
# The install targets of the libvirt integration (docs/libvirt.md §4), into a DESTDIR: install-libvirt puts
# the qemu and daemon hooks (executable, calling PREFIX's hvmtrace), the tracer's unit and the traces'
# directory (0750); install-qemu puts a patched QEMU build (a stand-in directory as scripts/build-qemu.sh
# leaves one) and its option ROMs under PREFIX/lib/hvmtrace/qemu, virt-xml's default emulator, and says
# "make qemu" when none is built; uninstall-libvirt removes the hooks and the unit but keeps the traces;
# uninstall removes the programs and the QEMU too.
# one build: the Makefile's targets, not the build's code paths
source "$(dirname "$0")/../lib/assert.bash"
D=$T/root
mk() { make -s -o all BUILD="$BUILD" DESTDIR="$D" PREFIX=/opt/hvt "$@" >"$T/make.out" 2>&1; }
mk install-libvirt || { cat "$T/make.out"; fail "make install-libvirt"; }
! grep -q "a libvirt daemon runs" "$T/make.out" || fail "install-libvirt into a DESTDIR spoke of this host's daemon"
if ! pgrep -x 'libvirtd|virtqemud' >/dev/null; then # (with one running: integration/libvirt_beside_system)
	[ -z "$(make -s libvirt-daemon-note)" ] || fail "make libvirt-daemon-note spoke of a daemon where none runs"
fi
for h in qemu.d daemon.d; do
	[ -x "$D/etc/libvirt/hooks/$h/hvmtrace" ] || fail "no executable $h hook"
	grep -q "exec /opt/hvt/bin/hvmtrace libvirt-hook" "$D/etc/libvirt/hooks/$h/hvmtrace" || fail "the $h hook does not call PREFIX's hvmtrace"
done
grep -q -- '--daemon' "$D/etc/libvirt/hooks/daemon.d/hvmtrace" || fail "the daemon hook is not the daemon hook"
[ -f "$D/etc/systemd/system/hvmtrace@.service" ] || fail "no unit"
assert_eq "the traces' directory's mode" 750 "$(stat -c %a "$D/var/lib/hvmtrace")"

mkdir -p "$T/qemu-build/optionrom"
printf '#!/bin/sh\n' >"$T/qemu-build/qemu-system-x86_64" && echo rom >"$T/qemu-build/optionrom/pvh.bin"
mk install-qemu QEMU_BUILD="$T/qemu-build" || { cat "$T/make.out"; fail "make install-qemu"; }
[ -x "$D/opt/hvt/lib/hvmtrace/qemu/qemu-system-x86_64" ] || fail "install-qemu put no emulator"
[ -f "$D/opt/hvt/lib/hvmtrace/qemu/optionrom/pvh.bin" ] || fail "install-qemu put no option ROM"
# virt-xml's default emulator is install-qemu's (for the build's PREFIX)
prefix=$(sed -n 's/^PREFIX = //p' config.mk)
"$HVT" virt-xml --help | grep -qF "${prefix:-/usr/local}/lib/hvmtrace/qemu/qemu-system-x86_64" ||
	fail "virt-xml's default emulator is not install-qemu's"
HVMTRACE_CACHE=$T/no-cache mk install-qemu && fail "install-qemu without a built QEMU succeeded"
assert_contains "$T/make.out" "install-qemu: no patched QEMU is built: make qemu"

mk uninstall-libvirt || fail "make uninstall-libvirt"
[ ! -e "$D/etc/libvirt/hooks/qemu.d/hvmtrace" ] && [ ! -e "$D/etc/libvirt/hooks/daemon.d/hvmtrace" ] || fail "the hooks are still there"
[ ! -e "$D/etc/systemd/system/hvmtrace@.service" ] || fail "the unit is still there"
[ -d "$D/var/lib/hvmtrace" ] || fail "uninstall-libvirt removed the traces"
mk uninstall || fail "make uninstall"
[ ! -e "$D/opt/hvt/bin/hvmtrace" ] && [ ! -e "$D/opt/hvt/lib/hvmtrace/qemu" ] || fail "uninstall left programs or QEMU"
echo "ok: install-libvirt, install-qemu, uninstall-libvirt, uninstall"
