#!/bin/bash
# Issue 15's count of written pages the kernel did not report accessed, as export and report show it: a
# trace from before the field says "not available" (empty CSV field, JSON null, no report line), a trace
# whose tracer checked says how many (CSV, JSON, and a report line when not 0). Fixtures:
# tests/fixtures/trace/README.md.
source "$(dirname "$0")/../lib/assert.bash"
FIX=tests/fixtures/trace

# The column is the last, after total_bytes (17): earlier columns keep their positions.
"$HVT" export --csv "$T/old.csv" "$FIX/v1-ad-unchecked.hvt" || fail "export of the older trace"
assert_eq "header, column 17" total_bytes "$(head -1 "$T/old.csv" | cut -d, -f17)"
assert_eq "header, column 18" written_not_accessed "$(head -1 "$T/old.csv" | cut -d, -f18)"
# Every row has every column of the header (ring_full, the last, empty in an older trace).
assert_eq "older trace: CSV rows" "2" "$(awk -F, 'NR == 1 { n = NF } NR > 1 && NF == n && $18 == "" && $NF == ""' "$T/old.csv" | wc -l)"
assert_eq "header, last column" ring_full "$(head -1 "$T/old.csv" | awk -F, '{ print $NF }')"
"$HVT" export --jsonl "$T/old.jsonl" "$FIX/v1-ad-unchecked.hvt" || fail "JSONL export of the older trace"
assert_eq "older trace: JSON" "null null" "$(jq -r '.written_not_accessed' "$T/old.jsonl" | xargs)"
assert_eq "older trace: accessed as recorded" '[[0,1],[8,1]]' "$(jq -c 'select(.seq == 1) | .accessed' "$T/old.jsonl")"
"$HVT" report "$FIX/v1-ad-unchecked.hvt" >"$T/old.report" || fail "report of the older trace"
! grep -q "not reported accessed" "$T/old.report" || fail "report counts what the older trace did not"

"$HVT" export --csv "$T/new.csv" "$FIX/v1-ad-checked.hvt" || fail "export of the checked trace"
assert_eq "checked trace: CSV" "3 0" "$(awk -F, 'NR > 1 { print $18 }' "$T/new.csv" | xargs)"
"$HVT" export --jsonl "$T/new.jsonl" "$FIX/v1-ad-checked.hvt" || fail "JSONL export of the checked trace"
assert_eq "checked trace: JSON" "3 0" "$(jq -r '.written_not_accessed' "$T/new.jsonl" | xargs)"
assert_eq "checked trace: written ⊆ accessed" "true true" \
	"$(jq -r '[.written[] | range(.[0]; .[0] + .[1])] - [.accessed[] | range(.[0]; .[0] + .[1])] | length == 0' \
		"$T/new.jsonl" | xargs)"
"$HVT" report "$FIX/v1-ad-checked.hvt" >"$T/new.report" || fail "report of the checked trace"
grep -q "written, not reported accessed   3 pages in 1 interval (" "$T/new.report" ||
	fail "report does not show the count: $(tail -4 "$T/new.report")"
echo ok
