#!/bin/sh
# Removes the cached build results (scripts/cache.sh) that no build has used for --days days (default 14):
# every change to an input makes a new key, so old QEMU builds, kernels, KVM modules and initramfs
# archives would otherwise pile up. The sources and ccache, which are not keyed, stay.
#   scripts/cache-prune.sh [--days N] [--dry-run]
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/cache.sh"

days=14
dry=""
verb=removed
while [ $# -gt 0 ]; do
	case $1 in
	--days)
		[ $# -ge 2 ] && [ "$2" -ge 0 ] 2>/dev/null || { echo "cache-prune: --days needs a number of days" >&2; exit 2; }
		days=$2
		shift 2
		;;
	--dry-run) dry=1 verb="would remove" && shift ;;
	*) echo "usage: scripts/cache-prune.sh [--days N] [--dry-run]" >&2 && exit 2 ;;
	esac
done
[ -d "$HVMTRACE_CACHE" ] || exit 0

hex16='[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'
n=0
kib=0
for entry in $(find "$HVMTRACE_CACHE" -mindepth 1 -maxdepth 1 -mtime +"$days" \
	\( -name "*-$hex16" -o -name "initramfs-$hex16.cpio.gz" \) | LC_ALL=C sort); do
	size=$(du -sk "$entry" | cut -f1)
	echo "cache-prune: $verb $(basename "$entry") ($((size / 1024)) MiB, unused for more than $days days)"
	[ -n "$dry" ] || rm -rf "$entry"
	n=$((n + 1))
	kib=$((kib + size))
done
echo "cache-prune: $n entries, $((kib / 1024)) MiB${dry:+ (dry run)}"
