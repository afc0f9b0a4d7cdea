#!/bin/bash
# report's memory follows the trace, not the guest (issue 25, item 4): on a few-KB trace declaring a 1 TiB
# slot and on one declaring a 4 EiB slot (tests/tools/huge_slot_trace, its layout patched with
# tests/tools/trace_patch), `report` with every analysis stays within 100 MiB of resident memory
# (tests/tools/maxrss) and its figures match a model of the traces computed page by page in
# tests/tools/huge_slot_expect.py. The per-page counts used to be arrays over the whole guest: 2.15 GB for the
# 1 TiB trace, 2^51 entries asked for (and an abort or "out of memory") for the 4 EiB one.
source "$(dirname "$0")/../lib/assert.bash"
LIMIT_KB=102400

# every analysis: the text with the page runs, the regions and the histogram, and the same as JSON
analyses() { # NAME TRACE SLOT_PAGES MARK_PAGES INTERVALS [--regions]
	local name=$1 tr=$2 more=("${@:6}")
	bounded "$name-text" "$HVT" report --pages "${more[@]}" --histogram --energy --window 3 "$tr"
	bounded "$name-json" "$HVT" report --json --pages --histogram --energy "$tr"
	python3 tests/tools/huge_slot_expect.py "$3" "$4" "$5" "$T/$name-json.out" ||
		fail "$name: the report's figures are not the trace's"
	assert_contains "$T/$name-text.out" "page classes (of $5 intervals"
}

"$TOOLS/huge_slot_trace" -o "$T/tib.hvt" --slot 1T --intervals 4 || fail "cannot write the 1 TiB trace"
analyses tib "$T/tib.hvt" $((1 << 28)) $((1 << 28)) 4 --regions
# --regions lists each of the 524,320 regions of RAM
[ "$(grep -c '^  0x[0-9a-f]* [a-z-]' "$T/tib-text.out")" = 524320 ] ||
	fail "--regions did not list every region of the 1 TiB guest"

# 4 EiB: the 64 GiB slot's size in the layout's JSON replaced by 2^62 bytes, its name dropped to make room
"$TOOLS/huge_slot_trace" -o "$T/64g.hvt" --slot 64G --intervals 3 || fail "cannot write the 64 GiB trace"
json='{"generation":1,"page_size":4096,"slots":[{"slot":0,"gpa":4294967296,"size":'
new=$(printf '%s' '4611686018427387904,"backing":"anon"     ' | od -An -tx1 | tr -d ' \n')
"$TOOLS/trace_patch" "$T/64g.hvt" "$T/eib.hvt" 2 0 ${#json} "$new" || fail "cannot patch the layout"
"$HVT" export --meta "$T/eib.hvt" >"$T/meta" || fail "the patched trace does not read"
assert_contains "$T/meta" '"size": 4611686018427387904'
analyses eib "$T/eib.hvt" $((1 << 50)) $((1 << 24)) 3
# a list of 2^41 regions is refused in one line, not attempted
"$HVT" report --regions "$T/eib.hvt" >/dev/null 2>"$T/err" && fail "--regions of 4 EiB succeeded"
assert_contains "$T/err" "--regions: 2199023255584 regions of 2 MiB are more than 1048576 to list; narrow them with --range"
[ "$(wc -l <"$T/err")" = 1 ] || fail "--regions refused in more than one line: $(cat "$T/err")"

echo "ok: report with every analysis on traces declaring 1 TiB and 4 EiB, each under $((LIMIT_KB / 1024)) MiB, figures as modelled"
