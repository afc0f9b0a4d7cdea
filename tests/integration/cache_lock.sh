#!/bin/bash
# Two builders of one cache entry at once (the test suite's two lanes, tests/run.sh) build it once: the
# second waits for the first's lock (cache_lock, scripts/cache.sh) and then finds the entry built. Four
# mkinitramfs.sh runs of one new init script start together on a cache of their own; exactly one says it
# built the archive, all four print the same archive, and gzip reads it whole.
# one build: it runs scripts/mkinitramfs.sh only, no program of the build.
source "$(dirname "$0")/../lib/assert.bash"
export HVMTRACE_CACHE=$T/cache
[ -x /bin/busybox ] || skip "no /bin/busybox (scripts/install-deps.sh installs busybox-static)"
printf '#!/bin/sh\necho %s\n' "$T" >"$T/init"
# A large file to add, so that a build takes long enough for the others to start while it runs.
head -c 32M /dev/urandom >"$T/filler"
for i in 1 2 3 4; do
	scripts/mkinitramfs.sh -f "$T/filler:/filler" "$T/init" >"$T/out.$i" 2>"$T/err.$i" &
	BG_PIDS+=($!)
done
for p in "${BG_PIDS[@]}"; do wait "$p" || fail "a mkinitramfs.sh run failed: $(cat "$T"/err.*)"; done
cat "$T"/err.*
built=$(cat "$T"/err.* | grep -c 'mkinitramfs: built ')
[ "$built" = 1 ] || fail "$built of the 4 concurrent builders built the archive (1 should, the others wait and reuse it)"
[ "$(sort -u "$T"/out.* | wc -l)" = 1 ] || fail "the builders printed different archives: $(cat "$T"/out.*)"
gzip -t "$(cat "$T/out.1")" || fail "the archive is damaged"
ls "$HVMTRACE_CACHE"/.lock-initramfs-* >/dev/null || fail "no lock file beside the entry"
echo "ok: 4 concurrent builders, 1 build, 1 archive"
