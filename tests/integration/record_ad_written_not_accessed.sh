#!/bin/bash
# record in mode ad keeps written ⊆ accessed when the kernel does not: a stand-in for KVM_AD_HARVEST
# (tests/preload/fake_kvm_ad.c, preloaded into the tracer) reports, at every other harvest, a page written
# but not accessed. Every such page must be recorded as accessed and counted in its interval, the first one
# warned about once, and the count must reach the trace, its exports and the report.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
fake_kvm_ad_preload

rm -f "$T/f.sock"
start_fakepeer "$T/f.sock" ad
LD_PRELOAD=$PRELOAD "$HVT" record --attach "$T/f.sock" --mode ad --interval 100ms --duration 1s -q \
	-o "$T/t.hvt" --jsonl "$T/rec.jsonl" 2>"$T/err" || fail "record failed: $(cat "$T/err")"

# Harvest n reports page n written, accessed only when n is even; harvest 1 is the tracer's clearing one,
# so interval k holds page k + 1, and every interval with an odd page has 1 page to add.
n=$(wc -l <"$T/rec.jsonl")
[ "$n" -ge 4 ] || fail "only $n intervals"
jq -e -s 'all(.[]; .written == [[.seq + 1, 1]] and .accessed == .written
	and .written_not_accessed == ((.seq + 1) % 2))' "$T/rec.jsonl" >/dev/null ||
	fail "intervals do not hold written ⊆ accessed with their count: $(head -3 "$T/rec.jsonl")"
counted=$(jq -s '[.[].written_not_accessed] | add' "$T/rec.jsonl")
[ "$counted" -ge 2 ] || fail "only $counted intervals had a page to add: the warning's once is untested"

assert_eq "warnings" 1 "$(grep -c 'warning:' "$T/err")"
assert_contains "$T/err" "warning: interval 2: the kernel reported 1 page written but not accessed."
assert_contains "$T/err" "docs/kvm-ad.md"

"$HVT" export --jsonl "$T/export.jsonl" --csv "$T/t.csv" "$T/t.hvt" || fail "export failed"
cmp "$T/rec.jsonl" "$T/export.jsonl" || fail "recorded JSON Lines differ from the export"
assert_eq "CSV counts" "$(jq -r '.written_not_accessed' "$T/rec.jsonl" | xargs)" \
	"$(awk -F, 'NR > 1 { print $18 }' "$T/t.csv" | xargs)"
"$HVT" report --totals-only "$T/t.hvt" >"$T/report" || fail "report failed"
assert_contains "$T/report" "written, not reported accessed   $counted pages in $counted intervals"

# check_phases holds a mode-ad trace to written ⊆ accessed as the kernel reported them: with one phase that
# may write and read every page, only the count can fail it.
printf '%s\n' '{"type":"script","phases":[{"index":0,"name":"all","write":[[0,4096]],"read":[]}],"system_pages":[]}' \
	'{"type":"phase","index":0,"round":0,"t_ns":0}' >"$T/phases.jsonl"
rc=0
"$TOOLS/check_phases" --trace "$T/t.hvt" --phase-log "$T/phases.jsonl" --accessed --min-inside 0 --min-exact 0 \
	>"$T/check.out" 2>&1 || rc=$?
assert_eq "check_phases exit" 1 "$rc"
assert_contains "$T/check.out" "written ⊆ accessed: MISMATCH: the kernel reported 1 page written but not accessed"
assert_eq "intervals failed" "$counted" "$(grep -c 'written ⊆ accessed: MISMATCH' "$T/check.out")"
echo ok
