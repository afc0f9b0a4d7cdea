#!/bin/sh
# Install, from Debian's packages, everything hvmtrace's build and tests need on a fresh Debian 12 machine.
# Idempotent: prints nothing and touches nothing when every package is already installed.
# The apt sources it needs beyond bookworm's own (bookworm-backports for meson, trixie source packages
# for QEMU 10.0) are added under /etc/apt/sources.list.d/hvmtrace-*.sources.
set -eu
cd "$(dirname "$0")/.."
. ./versions.env

# Build and unit/integration tests.
BASE="build-essential pkg-config libjson-c-dev libroaring-dev libzstd-dev libcmocka-dev libcap-ng-dev
libisal-dev libpfm4-dev"

missing=""
for p in $BASE; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing" >&2
	echo "install-deps: run this script as root (or: sudo apt-get install$missing)" >&2
	exit 1
fi

echo "install-deps: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# A third-party source that cannot be reached must not stop the install from Debian's own archive.
apt-get update -qq >/dev/null 2>&1 || echo "install-deps: apt-get update reported errors; trying the install anyway" >&2
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: done" >&2
