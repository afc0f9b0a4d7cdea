#!/bin/bash
# record in mode ad asks KVM_AD_HARVEST for the pruned walk unless --ad-walk full, copes with a kernel that
# does not know the flag (it refuses it: the tracer walks whole) or cannot prune (it clears the flag on
# return), and says in META's ad_walk and its start line which walk ran. A stand-in for the kernel
# (tests/preload/fake_kvm_ad.c, preloaded into the tracer) plays each kernel and logs the flags it is asked
# for.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
fake_kvm_ad_preload

# record_with NAME KERNEL [record options...]: one short recording against a fake VMM in mode ad.
record_with() {
	local name=$1 kernel=$2
	shift 2
	rm -f "$T/$name.sock" "$T/$name.flags"
	start_fakepeer "$T/$name.sock" ad
	FAKE_KVM_AD_KERNEL=$kernel FAKE_KVM_AD_FLAGS_LOG=$T/$name.flags LD_PRELOAD=$PRELOAD \
		"$HVT" record --attach "$T/$name.sock" --mode ad --interval 100ms --duration 500ms -q \
		-o "$T/$name.hvt" --jsonl "$T/$name.jsonl" "$@" 2>"$T/$name.err" ||
		fail "$name: record failed: $(cat "$T/$name.err")"
	"$HVT" export --meta "$T/$name.hvt" >"$T/$name.meta" || fail "$name: export --meta failed"
	[ "$(wc -l <"$T/$name.jsonl")" -ge 3 ] || fail "$name: only $(wc -l <"$T/$name.jsonl") intervals"
}

# expect NAME WALK FLAGS [FIRST]: META and the start line name WALK, and every harvest request after the
# FIRST (default 1: the first harvest's requests, refused and asked again) asked for FLAGS.
expect() {
	local name=$1 walk=$2 flags=$3 first=${4:-1}
	jq -e --arg w "$walk" '.meta.ad_walk == $w' "$T/$name.meta" >/dev/null ||
		fail "$name: META ad_walk is not \"$walk\": $(jq -c '.meta.ad_walk' "$T/$name.meta")"
	assert_contains "$T/$name.err" "(${walk} walk)"
	local others
	others=$(tail -n +$((first + 1)) "$T/$name.flags" | sort -u | xargs)
	assert_eq "$name: flags of the harvests after the first" "$flags" "$others"
}

# Every harvest asks for SPARSE (0x10) too: the interval's bitmaps are new, so zero.
record_with pruned tdp
expect pruned pruned 0x18
assert_eq "pruned: first harvest's flags" 0x18 "$(head -1 "$T/pruned.flags")"

record_with full tdp --ad-walk full
expect full full 0x10
assert_eq "full: first harvest's flags" 0x10 "$(head -1 "$T/full.flags")"

# A kernel without the flags: the first harvest is refused with SPARSE and PRUNE, then with PRUNE, and
# asked again without either.
record_with old old
expect old full 0 3
assert_eq "old kernel: the refused first requests, then the full walk" "0x18 0x8 0" "$(head -3 "$T/old.flags" | xargs)"

# A kernel with the pruned walk but without SPARSE (patches 1-7): SPARSE is dropped, PRUNE kept.
record_with nosparse nosparse
expect nosparse pruned 0x8 2
assert_eq "nosparse kernel: the refused first request, then the pruned walk" "0x18 0x8" "$(head -2 "$T/nosparse.flags" | xargs)"

# A kernel that cannot prune on this MMU: it clears the flag; asking again costs nothing.
record_with shadow shadow
expect shadow full 0x18

# The sets do not depend on the walk the stand-in reports, nor on SPARSE (the old kernel writes every word).
cmp <(jq -c '[.written, .accessed]' "$T/pruned.jsonl" | head -3) \
	<(jq -c '[.written, .accessed]' "$T/full.jsonl" | head -3) || fail "the sets differ between the walks"
cmp <(jq -c '[.written, .accessed]' "$T/pruned.jsonl" | head -3) \
	<(jq -c '[.written, .accessed]' "$T/old.jsonl" | head -3) || fail "the sets differ with and without SPARSE"

# A trace with a walk that is neither is refused by name.
"$HVT" record --attach "$T/none.sock" --mode ad --ad-walk partial -o "$T/x.hvt" 2>"$T/bad.err" &&
	fail "--ad-walk partial was accepted"
assert_contains "$T/bad.err" "ad-walk"
echo ok
