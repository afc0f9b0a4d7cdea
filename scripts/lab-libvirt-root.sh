#!/bin/sh
# The libvirt daemon for the nested lab's L1 (tests/lab/test_libvirt.sh): a directory tree, to be added to
# L1's initramfs (scripts/mkinitramfs.sh -f), holding this host's installed libvirt as Debian packages it
# (the same libvirt the host tests use: docs/libvirt.md §6) and every shared library its programs and driver
# modules load, at the paths they have here. L1 is no Debian install (busybox and the programs under test), so
# the daemon's files come from the host's packages instead of a second package installation.
#
# Usage: scripts/lab-libvirt-root.sh [-q]
# Prints one line on stdout: the tree ($HVMTRACE_CACHE/lab-libvirt-root-KEY), which holds
#   usr/, lib/, lib64/  libvirtd, virsh, the QEMU connection driver, libvirt's CPU models (cpu_map), and
#                       the libraries they need (ldd)
#   etc/libvirt/        the packaged libvirtd.conf, libvirt.conf and qemu.conf, unchanged
#   etc/passwd, etc/group  root and this host's libvirt-qemu, kvm, libvirt-qemu and libvirt entries (the
#                       uid and gids QEMU runs as, as the packages created them)
# Left out: AppArmor profiles (L1 loads none, as this host: libvirt's AppArmor driver stays off, DAC is
# the security driver), systemd units, virtlogd (the lab sets stdio_handler = "file", as the host tests),
# the network, storage and other drivers a domain without disks or networks does not use.
# The key covers this script, the packages' versions and every file copied, so a changed package or library
# builds a new tree.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/cache.sh"
SCRIPT_NAME=lab-libvirt-root
. "$here/scripts/log.sh"
[ "${1:-}" = -q ] && quiet=1

PACKAGES="libvirt0 libvirt-common libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients"
versions=$(dpkg-query -W -f '${Package} ${Version} ${Status}\n' $PACKAGES 2>/dev/null) ||
	die "libvirt is not installed (scripts/install-deps.sh installs it)"
echo "$versions" | grep -qv 'install ok installed' && die "not all of $PACKAGES are installed: $versions"
getent passwd libvirt-qemu >/dev/null || die "no user libvirt-qemu (Debian's libvirt-daemon-system creates it)"

# The files taken from the packages (no documentation, AppArmor, systemd, augeas or polkit files).
files=$(for p in $PACKAGES; do dpkg -L "$p"; done | grep -E \
	'^(/usr/sbin/libvirtd|/usr/bin/virsh|/usr/lib/x86_64-linux-gnu/libvirt[^/]*\.so[.0-9]*|/usr/lib/x86_64-linux-gnu/libvirt/connection-driver/libvirt_driver_qemu\.so|/usr/share/libvirt/cpu_map/.*|/etc/libvirt/(libvirtd|libvirt|qemu)\.conf)$' |
	LC_ALL=C sort -u)
libs_of() { ldd "$1" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p'; }
elves=$(for f in $files; do case $f in *.so* | */bin/* | */sbin/*) echo "$f" ;; esac; done)
libs=$(for f in $elves; do libs_of "$f"; done | LC_ALL=C sort -u)
accounts=$(getent passwd root libvirt-qemu; getent group root kvm libvirt-qemu libvirt)
# shellcheck disable=SC2086
key=$(cache_key "$here/scripts/lab-libvirt-root.sh" "$versions" "$accounts" $files $libs)
tree=$(cache_path lab-libvirt-root "$key")
cache_lock "${tree##*/}"
if [ ! -d "$tree" ]; then
	say "building $tree from $(echo "$versions" | awk '{print $1 "=" $2}' | tr '\n' ' ')"
	mkdir -p "$HVMTRACE_CACHE"
	tmp=$(mktemp -d "$HVMTRACE_CACHE/.lab-libvirt-root.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	for f in $files; do # symbolic links as links: libvirt.so.0 once
		mkdir -p "$tmp$(dirname "$f")"
		cp -P "$f" "$tmp$f"
	done
	for f in $libs; do # /lib is /usr/lib here (merged /usr): what the packages gave is there already
		[ -e "$tmp/usr$f" ] || [ -e "$tmp$f" ] && continue
		mkdir -p "$tmp$(dirname "$f")"
		cp -L "$f" "$tmp$f"
	done
	getent passwd root libvirt-qemu >"$tmp/etc/passwd"
	getent group root kvm libvirt-qemu libvirt >"$tmp/etc/group"
	mv "$tmp" "$tree"
	trap - EXIT
	say "built $tree ($(du -sh "$tree" | cut -f1))"
fi
echo "$tree"
