#!/bin/bash
# include/hvmtrace/kvm_ad.h must be byte-identical to the uAPI header as both KVM series leave it
# (include/uapi/linux/kvm_ad.h: added by patch 1, extended by later ones), and each series file must list
# exactly the patches next to it.
# one build: it compares source files, no program of the build.
source "$(dirname "$0")/../lib/assert.bash"

for series in qemu-patches/kvm/6.1 qemu-patches/kvm/6.12; do
	[ -f "$series/series" ] || fail "$series/series is missing"
	listed=$(grep -v '^#' "$series/series" | sort)
	present=$(cd "$series" && ls -- *.patch | sort)
	[ "$listed" = "$present" ] || fail "$series/series lists '$listed' but the directory has '$present'"
	# The header as the whole series leaves it: each patch's changes to it, applied in order.
	mkdir -p "$T/$series" && (cd "$T/$series" && git init -q) || fail "cannot make a scratch tree"
	for p in $(grep -v '^#' "$series/series"); do
		grep -q '^+++ b/include/uapi/linux/kvm_ad.h' "$series/$p" || continue
		git -C "$T/$series" apply --include=include/uapi/linux/kvm_ad.h "$PWD/$series/$p" ||
			fail "$series/$p: its change of include/uapi/linux/kvm_ad.h does not apply"
	done
	[ -f "$T/$series/include/uapi/linux/kvm_ad.h" ] || fail "no patch in $series adds include/uapi/linux/kvm_ad.h"
	cmp -s "$T/$series/include/uapi/linux/kvm_ad.h" include/hvmtrace/kvm_ad.h ||
		fail "include/hvmtrace/kvm_ad.h differs from the header $series leaves: $(diff "$T/$series/include/uapi/linux/kvm_ad.h" include/hvmtrace/kvm_ad.h | head -5)"
done
echo "kvm_ad.h identical to the header both series leave"
