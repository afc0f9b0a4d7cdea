#!/bin/sh
# Build a bootable CD image holding a Linux kernel, an initramfs and its command line, for the lab's Intel
# tier (docs/lab.md): its L0 is Bochs, which has no direct kernel boot, so L1 boots from this image through
# isolinux. The image is cached, keyed by its inputs, like every heavy artefact of the lab.
#
# Usage: scripts/lab-iso.sh [-q] KERNEL INITRAMFS APPEND
#   KERNEL     a bzImage (guest-kernel.sh's vmlinuz)
#   INITRAMFS  the initrd (mkinitramfs.sh's archive)
#   APPEND     the kernel command line
# Prints one line on stdout: the image ($HVMTRACE_CACHE/lab-iso-KEY.iso). The key covers the kernel, the
# initramfs, the command line, isolinux's two files and this script.
# Needs xorriso (Debian: xorriso), isolinux.bin (isolinux) and ldlinux.c32 (syslinux-common).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/cache.sh"

SCRIPT_NAME=lab-iso
. "$here/scripts/log.sh"
quiet=0
[ "${1:-}" != -q ] || { quiet=1; shift; }
[ $# -eq 3 ] || die "usage: lab-iso.sh [-q] KERNEL INITRAMFS APPEND"
kernel=$1 initrd=$2 append=$3
[ -f "$kernel" ] || die "kernel '$kernel' does not exist"
[ -f "$initrd" ] || die "initramfs '$initrd' does not exist"
isolinux=/usr/lib/ISOLINUX/isolinux.bin
ldlinux=/usr/lib/syslinux/modules/bios/ldlinux.c32
[ -f "$isolinux" ] || die "$isolinux missing (Debian package: isolinux)"
[ -f "$ldlinux" ] || die "$ldlinux missing (Debian package: syslinux-common)"
command -v xorriso >/dev/null || die "xorriso not found (Debian package: xorriso)"

key=$(cache_key "$here/scripts/lab-iso.sh" "$kernel" "$initrd" "$append" "$isolinux" "$ldlinux")
iso=$(cache_path lab-iso "$key" .iso)
cache_lock "${iso##*/}"
if [ ! -f "$iso" ]; then
	mkdir -p "$HVMTRACE_CACHE"
	tree=$(mktemp -d "$HVMTRACE_CACHE/.lab-iso.XXXXXX")
	trap 'rm -rf "$tree" "$tree.iso" "$tree.log"' EXIT
	mkdir "$tree/isolinux"
	cp "$isolinux" "$ldlinux" "$tree/isolinux/"
	cp "$kernel" "$tree/vmlinuz"
	cp "$initrd" "$tree/initrd.gz"
	# isolinux reads its configuration from its own directory; no prompt, no menu.
	printf 'DEFAULT lab\nPROMPT 0\nTIMEOUT 0\nLABEL lab\n  KERNEL /vmlinuz\n  INITRD /initrd.gz\n  APPEND %s\n' \
		"$append" >"$tree/isolinux/isolinux.cfg"
	# El Torito "no emulation" boot of isolinux.bin, which needs the boot info table patched in.
	xorriso -as mkisofs -quiet -o "$tree.iso" -R -J -b isolinux/isolinux.bin -c isolinux/boot.cat \
		-no-emul-boot -boot-load-size 4 -boot-info-table "$tree" >"$tree.log" 2>&1 ||
		die "xorriso failed: $(tail -n 3 "$tree.log")"
	mv "$tree.iso" "$iso"
	rm -f "$tree.log"
	say "built $iso"
fi
echo "$iso"
