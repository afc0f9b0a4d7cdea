#!/bin/sh
# Fetch a Debian distribution kernel for booting as a guest (TCG or nested lab) and cache it.
#
# Usage: scripts/guest-kernel.sh [-q] KERNEL
#   KERNEL  6.1 or 6.12 (the versions pinned in versions.env: KERNEL_6_1_ABI / KERNEL_6_12_ABI),
#           or an ABI string such as 6.1.0-56-amd64 together with KERNEL_VERSION=<debian version> in the
#           environment.
#   -q      quiet: no progress messages on stderr.
# Prints one line on stdout: the cache directory, which holds
#   vmlinuz   the distribution bzImage, as installed to /boot
#   vmlinux   the uncompressed kernel extracted from it: an ELF with a PVH entry note, so
#             `qemu-system-x86_64 -kernel vmlinux` boots it directly, skipping the decompressor
#             (under TCG this is 2-3x faster than the bzImage; docs/lab.md §2)
#   config    the kernel's .config
#   abi       the ABI string (uname -r of the guest)
#   modules/  the package's /lib/modules/ABI tree, compressed modules (.ko.xz) unpacked to .ko so busybox
#             insmod can load them
# Source: the signed linux-image-ABI package, fetched with `apt-get download` (bookworm or
# bookworm-security). The cache entry ($HVMTRACE_CACHE/guest-kernel-ABI-KEY) is keyed by the ABI, the Debian
# version and this script, so a warm machine does no download.
#
# Example (TCG Linux guest):
#   dir=$(scripts/guest-kernel.sh 6.12)
#   qemu-system-x86_64 -accel tcg -kernel "$dir/vmlinux" -initrd my.cpio.gz -append console=ttyS0 ...
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/versions.env"
. "$here/scripts/cache.sh"

SCRIPT_NAME=guest-kernel
. "$here/scripts/log.sh"
[ "${1:-}" != -q ] || { quiet=1; shift; }

[ $# -eq 1 ] || die "usage: guest-kernel.sh [-q] 6.1|6.12|ABI  (see the header of this script)"
case "$1" in
6.1)
	abi=$KERNEL_6_1_ABI
	version=$KERNEL_6_1_SOURCE_VERSION
	;;
6.12)
	abi=$KERNEL_6_12_ABI
	version=$KERNEL_6_12_SOURCE_VERSION
	;;
*-amd64)
	abi=$1
	version=${KERNEL_VERSION:-}
	[ -n "$version" ] || die "kernel '$1': set KERNEL_VERSION to its Debian package version"
	;;
*) die "kernel '$1': expected 6.1, 6.12 or an ABI string ending in -amd64" ;;
esac

key=$(cache_key "$abi" "$version" "$here/scripts/guest-kernel.sh")
dir=$(cache_path "guest-kernel-$abi" "$key")
cache_lock "${dir##*/}"
if [ -f "$dir/.complete" ]; then
	echo "$dir"
	exit 0
fi

command -v apt-get >/dev/null || die "apt-get not found: this script fetches Debian packages"
command -v readelf >/dev/null || die "readelf not found (Debian package: binutils)"
mkdir -p "$HVMTRACE_CACHE"
tmp=$(mktemp -d "$HVMTRACE_CACHE/.guest-kernel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

pkg="linux-image-$abi"
say "downloading $pkg=$version"
(cd "$tmp" && apt-get download -q "$pkg=$version" >/dev/null 2>"$tmp/apt.log") ||
	die "cannot download $pkg=$version: $(tail -n1 "$tmp/apt.log") (is the version still in bookworm-security? see apt-cache policy $pkg)"
say "unpacking"
dpkg-deb -x "$tmp"/"$pkg"_*.deb "$tmp/root"
rm -f "$tmp"/*.deb

mkdir -p "$tmp/out"
cp "$tmp/root/boot/vmlinuz-$abi" "$tmp/out/vmlinuz"
cp "$tmp/root/boot/config-$abi" "$tmp/out/config"
echo "$abi" >"$tmp/out/abi"
mv "$tmp/root/lib/modules/$abi" "$tmp/out/modules"
find "$tmp/out/modules" -name '*.ko.xz' -exec xz -d {} +
find "$tmp/out/modules" -name '*.ko.zst' -exec zstd -q -d --rm {} +

# bzImage layout (Documentation/arch/x86/boot.rst): setup_sects at 0x1f1, the protected-mode code
# starts at (setup_sects + 1) * 512, payload_offset/payload_length at 0x248/0x24c are relative to it.
le32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }
setup_sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$tmp/out/vmlinuz" | tr -d ' ')
[ "$setup_sects" -ne 0 ] || setup_sects=4
payload_offset=$(($(le32 "$tmp/out/vmlinuz" $((0x248))) + (setup_sects + 1) * 512))
payload_length=$(le32 "$tmp/out/vmlinuz" $((0x24c)))
# The last 4 bytes of the payload are the uncompressed size (size_append), not part of the stream.
tail -c +$((payload_offset + 1)) "$tmp/out/vmlinuz" | head -c $((payload_length - 4)) >"$tmp/payload"
magic=$(od -An -tx1 -N6 "$tmp/payload" | tr -d ' ')
case "$magic" in
fd377a585a00) xz -dc --single-stream <"$tmp/payload" >"$tmp/out/vmlinux" ;;
28b52ffd*) zstd -q -dc <"$tmp/payload" >"$tmp/out/vmlinux" ;;
1f8b*) gzip -dc <"$tmp/payload" >"$tmp/out/vmlinux" ;;
*) die "$pkg: unknown bzImage payload compression (magic $magic)" ;;
esac
rm -f "$tmp/payload"
# Xen ELF note 18 = XEN_ELFNOTE_PHYS32_ENTRY: the PVH entry point QEMU's -kernel uses for an ELF.
readelf -n "$tmp/out/vmlinux" 2>/dev/null | grep -q 'Xen.*0x00000012' ||
	die "$pkg: the extracted vmlinux has no PVH entry note (CONFIG_PVH off?); boot vmlinuz instead"

rm -rf "$dir"
mv "$tmp/out" "$dir"
touch "$dir/.complete"
say "cached in $dir"
echo "$dir"
