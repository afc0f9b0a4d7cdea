#!/bin/bash
# A closed trace whose every CRC is right but one interval's content is not sane: report and export read up
# to that interval, keep what comes before, and say in one line which interval, record and field, with the
# path once (it was printed twice, "T: T: interval 1 …") and without blaming a missing index (a closed trace
# was said to be one "the writer did not close"). tests/tools/trace_patch makes the records.
source "$(dirname "$0")/../lib/assert.bash"
FIX=tests/fixtures/trace/dirtylog-nobw.hvt

"$HVT" export --jsonl "$T/good.jsonl" "$FIX" || fail "export of the fixture failed"
[ "$(wc -l <"$T/good.jsonl")" -ge 3 ] || fail "the fixture has fewer than 3 intervals"

# insane NAME OFFSET HEX MESSAGE: interval 1 (the second) with HEX at OFFSET of its payload.
insane() {
	"$TOOLS/trace_patch" "$FIX" "$T/$1.hvt" 3 1 "$2" "$3" || fail "cannot make $1.hvt"
	"$HVT" export --meta "$T/$1.hvt" | grep -q '"complete": true' || fail "$1.hvt is not a closed trace"
	for cmd in report "export --jsonl $T/$1.jsonl"; do
		expect 3 "$T/$1.hvt: interval 1, record at offset " "$HVT" $cmd "$T/$1.hvt"
		assert_contains "$T/err" ": $4"
		assert_contains "$T/err" "; damaged trace: the 1 intervals before this one were read"
		[ "$(grep -c "$T/$1.hvt" "$T/err")" = 1 ] && [ "$(grep -o "$T/$1.hvt" "$T/err" | wc -l)" = 1 ] ||
			fail "$cmd $1: the path is not said exactly once: $(cat "$T/err")"
		grep -q "no index\|did not close" "$T/err" && fail "$cmd $1: a closed trace blamed on a missing index"
	done
	head -n 1 "$T/good.jsonl" | cmp - "$T/$1.jsonl" || fail "$1: the interval before the bad one changed"
}
insane t_end 16 0000000000000000 'field t_end_ns: 0 is before t_start_ns'
insane flags 56 05000000 'field flags: bandwidth, which META says the trace has not'
echo "ok: 2 insane intervals in a closed trace refused by field, the one before kept"
