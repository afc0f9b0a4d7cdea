#!/bin/sh
# Build replacement kvm, kvm-intel and kvm-amd modules with the KVM_AD_HARVEST series (qemu-patches/kvm/)
# for an installed Debian kernel, out of tree (DKMS-style): no kernel rebuild.
#
# Usage: scripts/kvm-modules.sh [-q] [KVER]          (make kvm-modules KVER=...)
#   KVER  the kernel release (uname -r of the target); default: the running kernel. Its headers must be
#         installed (linux-headers-KVER). The series is chosen by the kernel's major.minor
#         (qemu-patches/kvm/6.1 or 6.12), the source by the headers package's Debian version
#         (linux-source-X.Y=that version, via apt-get download), so modules and kernel always match.
# Prints one line on stdout: the directory with kvm.ko, kvm-amd.ko, kvm-intel.ko and build.log; the
# loading instructions go to stderr.
# Cache ($HVMTRACE_CACHE): linux-source-X.Y-VERSION/ holds the unpacked parts of the Debian source the
# series touches (keyed by the version); kvm-modules-KVER-KEY/ the modules, keyed by the source version,
# the headers' .config and Module.symvers, the series and this script.
# The build passes -Werror. The patched headers are put before the installed ones on the include path
# (NOSTDINC_FLAGS); the series only adds declarations to them and one member at the end of struct kvm
# (which only kvm and its vendor modules allocate), so other modules of the installed kernel keep working
# with the replacement kvm.ko.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/cache.sh"

SCRIPT_NAME=kvm-modules
. "$here/scripts/log.sh"
[ "${1:-}" != -q ] || { quiet=1; shift; }
[ $# -le 1 ] || die "usage: kvm-modules.sh [-q] [KVER]"
kver=${1:-$(uname -r)}

headers=/usr/src/linux-headers-$kver
[ -f "$headers/Makefile" ] || headers=/lib/modules/$kver/build
[ -f "$headers/Makefile" ] ||
	die "kernel '$kver': no headers in /usr/src/linux-headers-$kver (install linux-headers-$kver)"
headers=$(readlink -f "$headers")
series_name=$(echo "$kver" | sed -n 's/^\([0-9]*\.[0-9]*\)[.-].*/\1/p')
series=$here/qemu-patches/kvm/$series_name
[ -f "$series/series" ] ||
	die "kernel '$kver': no patch series for Linux $series_name (have: $(ls "$here/qemu-patches/kvm" | tr '\n' ' '))"
version=$(dpkg-query -W -f='${Version}' "linux-headers-$kver" 2>/dev/null) ||
	die "kernel '$kver': package linux-headers-$kver is not installed, cannot tell its Debian version"
[ -n "$version" ] || die "kernel '$kver': linux-headers-$kver has no version"

key=$(cache_key "$kver" "$version" "$headers/.config" "$headers/Module.symvers" "$series" \
	"$here/scripts/kvm-modules.sh")
out=$(cache_path "kvm-modules-$kver" "$key")
cache_lock "${out##*/}"
if [ -f "$out/.complete" ]; then
	say "cached: $out"
else
	mkdir -p "$HVMTRACE_CACHE"
	# 1. The Debian source: only the trees the modules are built from, plus the headers the series changes.
	src=$(cache_path "linux-source-$series_name" "$(cache_key "$version")")
	if [ ! -f "$src/.complete" ]; then
		tmp=$(mktemp -d "$HVMTRACE_CACHE/.linux-source.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		say "downloading linux-source-$series_name=$version"
		(cd "$tmp" && apt-get download -q "linux-source-$series_name=$version" >/dev/null 2>"$tmp/apt.log") ||
			die "cannot download linux-source-$series_name=$version: $(tail -n1 "$tmp/apt.log")"
		say "unpacking"
		top=linux-source-$series_name
		dpkg-deb --fsys-tarfile "$tmp"/linux-source-*.deb | tar -x -O "./usr/src/$top.tar.xz" |
			tar -xJ -C "$tmp" "$top/arch/x86/kvm" "$top/virt/kvm" "$top/include/linux" \
				"$top/include/uapi/linux" "$top/scripts/checkpatch.pl" "$top/scripts/spelling.txt" \
				"$top/scripts/const_structs.checkpatch" "$top/Documentation/virt/kvm"
		rm -rf "$src"
		mv "$tmp/$top" "$src"
		touch "$src/.complete"
		rm -rf "$tmp"
		trap - EXIT
	fi

	# 2. A scratch git tree of the pristine sources the series touches and builds, and the series applied to
	# it with `git am`, as a user applies it to the whole Debian source tree.
	work=$(mktemp -d "$HVMTRACE_CACHE/.kvm-modules.XXXXXX")
	trap 'rm -rf "$work"' EXIT
	mkdir -p "$work/src/arch/x86" "$work/src/virt" "$work/overlay"
	cp -a "$src/arch/x86/kvm" "$work/src/arch/x86/"
	cp -a "$src/virt/kvm" "$work/src/virt/"
	mkdir -p "$work/src/include/linux" "$work/src/include/uapi/linux"
	patches=$(grep -v '^#' "$series/series" | sed '/^$/d')
	for patch in $patches; do
		sed -n 's|^+++ b/\(include/.*\)|\1|p' "$series/$patch" | while read -r f; do
			[ -e "$work/src/$f" ] || [ ! -e "$src/$f" ] || cp "$src/$f" "$work/src/$f"
		done
	done
	git_w() { git -C "$work/src" -c user.name=hvmtrace -c user.email=hvmtrace@localhost "$@"; }
	git_w init -q && git_w add -A && git_w commit -qm "linux-source-$series_name $version" ||
		die "cannot make a git tree of linux-source-$series_name=$version"
	for patch in $patches; do
		git_w am -q "$series/$patch" >"$work/am.log" 2>&1 ||
			die "$patch does not apply with git am to linux-source-$series_name=$version: $(head -n 5 "$work/am.log")"
	done

	# 3. Build. The kvm Makefile refers to $(srctree) for its own tree and virt/kvm; out of tree, srctree
	# is the headers, so a generated Kbuild (which kbuild prefers to Makefile) points them at the copy.
	kdir=$work/src/arch/x86/kvm
	sed -e 's|$(srctree)/arch/x86/kvm|$(src)|g' -e 's|$(srctree)/virt/kvm|$(src)/../../../virt/kvm|g' \
		"$kdir/Makefile" >"$kdir/Kbuild"
	# trace.h includes itself as TRACE_INCLUDE_PATH ../../arch/x86/kvm, relative to include/trace.
	mkdir -p "$work/src/include/trace"
	printf 'ccflags-y += -I $(src)/../../../include/trace -Werror\n' >>"$kdir/Kbuild"
	say "building for $kver (linux-source-$series_name=$version)"
	start=$(date +%s)
	if ! make -C "$headers" M="$kdir" -j"${JOBS:-2}" \
		NOSTDINC_FLAGS="-I$work/src/include -I$work/src/include/uapi -nostdinc" \
		modules >"$work/build.log" 2>&1; then
		tail -n 30 "$work/build.log" >&2
		die "build failed for $kver (log above)"
	fi
	say "built in $(($(date +%s) - start)) s"
	mkdir -p "$work/out"
	for m in kvm kvm-amd kvm-intel; do
		[ -f "$kdir/$m.ko" ] || die "build for $kver produced no $m.ko"
		cp "$kdir/$m.ko" "$work/out/"
	done
	cp "$work/build.log" "$work/out/"
	(cd "$series" && cat series) >"$work/out/series-applied"
	echo "$version" >"$work/out/source-version"
	rm -rf "$out"
	mv "$work/out" "$out"
	touch "$out/.complete"
fi

cat >&2 <<EOF
kvm-modules: to load on $kver (replaces the running KVM; stop all VMs first):
    modprobe -r kvm_amd kvm_intel kvm
    modprobe irqbypass; modprobe ccp    # dependencies of kvm / kvm-amd
    insmod $out/kvm.ko
    insmod $out/kvm-amd.ko              # or kvm-intel.ko on Intel
  or to make them the default: cp $out/*.ko /lib/modules/$kver/updates/ && depmod $kver
  check: KVM_CHECK_EXTENSION(KVM_CAP_AD_HARVEST) on /dev/kvm returns 1 (tests/lab/ad_check does it)
EOF
echo "$out"
