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

# The checker's untouched pages have teeth: a page phase 0 writes, declared a system page the payload never
# touches (or one of its page tables, with --shadow-mmu), fails the check and is named.
for class in untouched_pages table_pages; do
	jq -c --arg c "$class" 'if .type == "script" then .phases[0].write[0][0] as $g |
		.system_pages += [[$g, 1]] | .[$c] += [[$g, 1]] else . end' "$T/phases.jsonl" >"$T/lie.jsonl"
	rc=0
	"$TOOLS/check_phases" --trace "$T/t.hvt" --phase-log "$T/lie.jsonl" --min-inside 2 --shadow-mmu \
		>"$T/lie.out" 2>&1 || rc=$?
	assert_eq "check_phases exit with a written page among the $class" 1 "$rc"
	assert_contains "$T/lie.out" "never touched by the payload"
done
echo "ok: $n intervals"
