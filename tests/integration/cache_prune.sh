#!/bin/bash
# scripts/cache-prune.sh on a cache tree of its own: keyed entries (directories and initramfs archives)
# unused for more than --days go, recent ones stay, and so do the unkeyed sources and ccache, however old;
# cache_path marks an entry used, so an old entry that a build looks up again is kept.
# one build: it runs scripts/cache-prune.sh only, no program of the build.
source "$(dirname "$0")/../lib/assert.bash"
export HVMTRACE_CACHE=$T/cache
c=$HVMTRACE_CACHE
mkdir -p "$c/qemu-0123456789abcdef" "$c/qemu-fedcba9876543210" "$c/kvm-modules-6.1.0-56-amd64-00112233aabbccdd" \
	"$c/src" "$c/ccache" "$c/guest-kernel-6.12.117+deb12-amd64-0011223344556677"
echo x >"$c/initramfs-aaaaaaaaaaaaaaaa.cpio.gz"
echo x >"$c/initramfs-bbbbbbbbbbbbbbbb.cpio.gz"
echo x >"$c/notes-1234"
old="20 days ago"
for e in qemu-0123456789abcdef kvm-modules-6.1.0-56-amd64-00112233aabbccdd src ccache notes-1234 \
	initramfs-aaaaaaaaaaaaaaaa.cpio.gz guest-kernel-6.12.117+deb12-amd64-0011223344556677; do
	touch -d "$old" "$c/$e"
done
# A build looks the kernel up: it is in use again.
(. scripts/cache.sh && cache_path guest-kernel-6.12.117+deb12-amd64 0011223344556677 >/dev/null)

scripts/cache-prune.sh --dry-run >"$T/dry.out" || fail "cache-prune --dry-run failed"
cat "$T/dry.out"
assert_contains "$T/dry.out" "would remove qemu-0123456789abcdef"
assert_contains "$T/dry.out" "cache-prune: 3 entries"
[ -d "$c/qemu-0123456789abcdef" ] || fail "--dry-run removed an entry"

scripts/cache-prune.sh --days 14 >"$T/prune.out" || fail "cache-prune failed"
for e in qemu-0123456789abcdef kvm-modules-6.1.0-56-amd64-00112233aabbccdd initramfs-aaaaaaaaaaaaaaaa.cpio.gz; do
	[ ! -e "$c/$e" ] || fail "$e, unused for 20 days, was kept"
done
for e in qemu-fedcba9876543210 initramfs-bbbbbbbbbbbbbbbb.cpio.gz src ccache notes-1234 \
	guest-kernel-6.12.117+deb12-amd64-0011223344556677; do
	[ -e "$c/$e" ] || fail "$e was removed"
done
scripts/cache-prune.sh --days 0x 2>"$T/bad.err" && fail "--days 0x accepted"
assert_contains "$T/bad.err" "--days needs a number of days"
echo ok
