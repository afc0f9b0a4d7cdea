#!/bin/bash
# A 4-phase payload over two memslots (one of 1 GiB above a hole), traced at 1 s intervals: every
# interval inside phase k holds exactly W_k (plus the payload's system pages), every boundary interval
# lies within the phases it spans and holds what the VMM's pass log says was written in it — page by page.
# The JSON Lines written while recording equal the trace's export.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm

trace_phases 1s 3.5s 2
n=$(wc -l <"$T/rec.jsonl")
[ "$n" -ge 14 ] || fail "only $n intervals for 4 phases of 3.5 s"
tail -n 1 "$T/rec.jsonl" | grep -q '"final":true' || fail "the last interval (VMM exit) is not marked final"
grep -q '"accessed_pages":null' "$T/rec.jsonl" || fail "accessed pages are not reported as unavailable (null)"
echo "ok: $n intervals"
