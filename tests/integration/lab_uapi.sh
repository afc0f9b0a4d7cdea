#!/bin/bash
# include/hvmtrace/kvm_ad.h must be byte-identical to the uAPI header both KVM series add
# (include/uapi/linux/kvm_ad.h), and each series file must list exactly the patches next to it.
# one build: it compares source files, no program of the build.
source "$(dirname "$0")/../lib/assert.bash"

for series in qemu-patches/kvm/6.1 qemu-patches/kvm/6.12; do
	[ -f "$series/series" ] || fail "$series/series is missing"
	listed=$(grep -v '^#' "$series/series" | sort)
	present=$(cd "$series" && ls -- *.patch | sort)
	[ "$listed" = "$present" ] || fail "$series/series lists '$listed' but the directory has '$present'"
	patch=$(grep -l '^+++ b/include/uapi/linux/kvm_ad.h' "$series"/*.patch) ||
		fail "no patch in $series adds include/uapi/linux/kvm_ad.h"
	# The new file's lines, from its "+++" header to the next file of the patch.
	awk '/^\+\+\+ b\/include\/uapi\/linux\/kvm_ad.h/ {on = 1; next}
	     on && /^diff --git/ {exit}
	     on && /^@@/ {next}
	     on {print substr($0, 2)}' "$patch" >"$T/kvm_ad.h"
	cmp -s "$T/kvm_ad.h" include/hvmtrace/kvm_ad.h ||
		fail "include/hvmtrace/kvm_ad.h differs from the header in $patch: $(diff "$T/kvm_ad.h" include/hvmtrace/kvm_ad.h | head -5)"
done
echo "kvm_ad.h identical to the header added by both series"
