#!/bin/sh
# Install, from Debian's packages, everything hvmtrace's build and tests need on a fresh Debian 12 machine.
# Idempotent: prints nothing and touches nothing when every package is already installed.
# The apt sources it needs beyond bookworm's own (bookworm-backports for meson, trixie source packages
# for QEMU 10.0) are added under /etc/apt/sources.list.d/hvmtrace-*.sources.
set -eu
cd "$(dirname "$0")/.."
. ./versions.env

# Build and unit/integration tests.
BASE="build-essential pkg-config clang-format libjson-c-dev libroaring-dev libzstd-dev libcmocka-dev libcap-ng-dev
libisal-dev libpfm4-dev jq procps git"

# hvmtrace plot (cairo), report --html (zlib packs its tiles), and the HTML report's test: headless Chromium driven over its DevTools pipe by a
# small Python client (tests/tools/cdp.py).
PICS="libcairo2-dev zlib1g-dev chromium python3"

# record --metrics (libmicrohttpd), and its tests: a real Prometheus (and promtool) scrapes it, Python's
# OpenMetrics parser (python3-prometheus-client) reads it, curl storms it, hvmtrace top is driven in tmux.
METRICS="libmicrohttpd-dev prometheus curl tmux python3-prometheus-client"

# make bench: perf stat measures the CPU cost of QEMU's calc-dirty-rate (bench/table/qemu_peer.sh).
BENCH="linux-perf"

# The libFuzzer harnesses (make fuzzers, make check): clang 14 and its fuzzer and sanitizer runtimes.
FUZZ="clang libclang-rt-14-dev"

# systemd-analyze, which checks hvmtrace/libvirt/hvmtrace@.service, and systemd-nspawn, which boots the container whose
# systemd runs libvirtd and the tracer's unit in e2e/libvirt_systemd.
UNIT="systemd systemd-container"

# Building patched QEMU 10.0 (make qemu) and running it under TCG in the tests.
QEMU="dpkg-dev ninja-build python3-venv zlib1g-dev libglib2.0-dev libfdt-dev flex bison ccache lib32gcc-12-dev
seabios meson"

# The nested KVM lab and `make kvm-modules` (headers of the pinned kernels; the 6.12 headers package also
# pulls in its kernel image).
LAB="qemu-system-x86 busybox-static cpio linux-headers-$KERNEL_6_1_ABI linux-headers-$KERNEL_6_12_ABI"

# The lab's Intel tier (docs/lab.md): TCG emulates no VMX, Bochs 2.7 does (VMX with EPT, EPT A/D and PML), with
# its BIOS and VGA BIOS. Bochs has no direct kernel boot, so L1 boots from an isolinux CD image that xorriso
# makes (isolinux.bin from isolinux, ldlinux.c32 from syslinux-common).
LAB="$LAB bochs bochsbios vgabios isolinux syslinux-common xorriso"

# libvirt for tracing libvirt domains (docs/libvirt.md): the bookworm-backports one (bookworm's 9.0 passes
# QEMU 10.0 the -no-acpi that QEMU 9.0 removed, so it cannot start a domain on our QEMU), installed from
# there explicitly like meson.
LIBVIRT="libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients libvirt-dev libxml2-dev"

# apt sources beyond bookworm: bookworm-backports (meson >= 1.5; installed from there explicitly, the
# archive's default priority keeps everything else on bookworm) and trixie source packages (QEMU 10.0).
add_sources() {
	changed=0
	if [ ! -f /etc/apt/sources.list.d/hvmtrace-backports.sources ]; then
		cat >/etc/apt/sources.list.d/hvmtrace-backports.sources <<'EOS'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
		changed=1
	fi
	if [ ! -f /etc/apt/sources.list.d/hvmtrace-trixie-src.sources ]; then
		cat >/etc/apt/sources.list.d/hvmtrace-trixie-src.sources <<'EOS'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOS
		changed=1
	fi
	return 0
}

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

# meson must be the backports one (bookworm's 1.0 is too old for QEMU 10).
meson_ok() {
	v=$(dpkg-query -W -f='${Version}' meson 2>/dev/null) || return 1
	dpkg --compare-versions "$v" ge 1.5
}

# libvirt must be the backports one (see LIBVIRT above).
libvirt_ok() {
	for p in $LIBVIRT; do
		v=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null) || return 1
		case $p in libxml2-dev) continue ;; esac
		dpkg --compare-versions "$v" ge 11 || return 1
	done
}

missing=""
for p in $BASE $PICS $METRICS $BENCH $FUZZ $QEMU $LAB $UNIT; do
	[ "$p" = meson ] && continue
	installed "$p" || missing="$missing $p"
done
meson_ok || missing="$missing meson(bookworm-backports)"
libvirt_ok || missing="$missing libvirt(bookworm-backports)"
sources_ok=1
[ -f /etc/apt/sources.list.d/hvmtrace-backports.sources ] && [ -f /etc/apt/sources.list.d/hvmtrace-trixie-src.sources ] || sources_ok=0
[ -z "$missing" ] && [ $sources_ok = 1 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing" >&2
	echo "install-deps: run this script as root (or: sudo apt-get install$missing)" >&2
	exit 1
fi

echo "install-deps: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
add_sources
# A third-party source that cannot be reached must not stop the install from Debian's own archive.
apt-get update -qq >/dev/null 2>&1 || echo "install-deps: apt-get update reported errors; trying the install anyway" >&2
pkgs=$(echo "$missing" | sed 's/meson(bookworm-backports)//; s/libvirt(bookworm-backports)//')
# shellcheck disable=SC2086
[ -z "${pkgs# }" ] || apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
if ! meson_ok; then
	apt-get install -y -qq --no-install-recommends -t bookworm-backports "meson=$MESON_BPO_VERSION" >/dev/null
fi
if ! libvirt_ok; then
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends -t bookworm-backports $LIBVIRT >/dev/null
fi
echo "install-deps: done" >&2
