#!/bin/bash
# Builds QEMU 10.0 from Debian trixie's source with the patch series in qemu-patches/qemu/ applied, and
# prints the directory holding the result (qemu-system-x86_64 and the option ROMs it needs with -L).
# The result is cached under $HVMTRACE_CACHE, keyed by the source version, the series and the configure
# flags: a warm machine reruns this in a second; ccache makes a rebuild after a patch change take minutes.
#   scripts/build-qemu.sh            build if needed, print the directory
#   scripts/build-qemu.sh --check    print the directory if it is built, else exit 1
set -euo pipefail
cd "$(dirname "$0")/.."
. ./versions.env
. scripts/cache.sh

CONFIGURE_FLAGS="--target-list=x86_64-softmmu --enable-kvm --enable-tcg --disable-docs \
--without-default-features --disable-install-blobs --disable-download --disable-relocatable \
--firmwarepath=/usr/share/seabios:/usr/lib/ipxe/qemu --enable-werror"
PATCHES=qemu-patches/qemu
key=$(cache_key "$QEMU_DEBIAN_VERSION" "$CONFIGURE_FLAGS" "$PATCHES")
out=$(cache_path qemu "$key")

if [ -x "$out/qemu-system-x86_64" ]; then
	echo "$out"
	exit 0
fi
[ "${1:-}" = --check ] && exit 1
cache_lock "${out##*/}"
if [ -x "$out/qemu-system-x86_64" ]; then # built while this waited for the lock
	echo "$out"
	exit 0
fi

log() { echo "build-qemu: $*" >&2; }
# The pristine source as a git repository (every file, also those QEMU's .gitignore lists: the vendored
# subprojects), so each build applies the series with git am to a clone of it.
src="$HVMTRACE_CACHE/src/qemu-$QEMU_DEBIAN_VERSION-git"
if [ ! -d "$src/tree" ]; then
	log "fetching the QEMU $QEMU_DEBIAN_VERSION source package (Debian trixie)"
	rm -rf "$src" && mkdir -p "$src"
	(cd "$src" && apt-get source -qq "qemu=$QEMU_DEBIAN_VERSION" >&2) ||
		{ log "apt-get source failed: is the trixie deb-src entry there? (scripts/install-deps.sh adds it)"; exit 1; }
	mv "$src"/qemu-*/ "$src/tree.tmp"
	(cd "$src/tree.tmp" && git init -q && git add -A -f && git -c user.name=hvmtrace -c user.email=hvmtrace@localhost \
		commit -qm "QEMU $QEMU_DEBIAN_VERSION as Debian ships it (Debian patches applied)")
	mv "$src/tree.tmp" "$src/tree"
fi

work="$out.build"
rm -rf "$work" && mkdir -p "$work"
log "applying $(wc -l <"$PATCHES/series") patches to a copy of the source in $work"
git clone -q "$src/tree" "$work/src"
while read -r p; do
	[ -n "$p" ] || continue
	git -C "$work/src" -c user.name=hvmtrace -c user.email=hvmtrace@localhost am -q "$PWD/$PATCHES/$p" ||
		{ log "patch $p does not apply"; exit 1; }
done <"$PATCHES/series"

export CCACHE_DIR="$HVMTRACE_CACHE/ccache"
# Each key builds in a directory of its own, and QEMU's compile lines hold absolute paths (-I, -isystem) and
# -g, for which ccache hashes the directory: a changed series missed on every file. ccache rewrites paths
# under the base directory to relative ones, and does not hash the directory: the files a patch leaves alone
# are hits.
export CCACHE_BASEDIR="$work/src" CCACHE_NOHASHDIR=1
log "configuring and building (cold: ~10 min on 2 cores; ccache warm: ~4 min); log in $work/build.log"
(cd "$work/src" && ./configure --python=/usr/bin/python3 --cc="ccache gcc" --cxx="ccache g++" $CONFIGURE_FLAGS \
	&& make -C build -j"$(nproc)" qemu-system-x86_64 && make -C build/pc-bios/optionrom) >"$work/build.log" 2>&1 ||
	{ tail -30 "$work/build.log" >&2; log "build failed (full log: $work/build.log)"; exit 1; }
mkdir -p "$out.tmp/optionrom"
cp "$work/src/build/qemu-system-x86_64" "$out.tmp/"
cp "$work/src/build/pc-bios/optionrom/"*.bin "$out.tmp/optionrom/"
mv "$out.tmp" "$out"
rm -rf "$work"
log "built $out"
echo "$out"
