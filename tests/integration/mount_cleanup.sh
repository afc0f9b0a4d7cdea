#!/bin/bash
# tests/lib/assert.bash's mount_at: a test that mounts with it and then fails, before any trap of its own
# is set (as e2e/libvirt_refusals can when its daemon does not start), leaves nothing mounted and its
# temporary directory removed.
# one build: the tests' library, not the build
source "$(dirname "$0")/../lib/assert.bash"
[ "$(id -u)" = 0 ] || skip "needs root (mount)"
cat >"$T/failing.sh" <<'EOS'
source tests/lib/assert.bash
mkdir -p "$T/ro"
mount_at "$T/ro" -t tmpfs -o ro,size=1M tmpfs || skip "cannot mount a read-only tmpfs"
echo "$T" >"$1"
fail "on purpose, with $T/ro mounted"
EOS
rc=0
bash "$T/failing.sh" "$T/inner" >"$T/out" 2>&1 || rc=$?
[ "$rc" = 77 ] && skip "$(tail -n 1 "$T/out")"
assert_eq "the failing test's status" 1 "$rc"
inner=$(cat "$T/inner")
! grep -qF " $inner/ro " /proc/mounts || fail "$inner/ro is still mounted after the test failed"
[ ! -e "$inner" ] || fail "the failed test's directory $inner is still there"
echo "ok: $inner/ro unmounted and $inner removed after the failure"
