#!/bin/sh
# Figures for issue 25, item 4 (printed, not asserted): time and peak resident memory of `report` with every
# analysis on few-KB traces of sparse guests, one declaring a 1 TiB slot and one a 4 EiB slot (made as
# tests/integration/report_bound.sh makes them: tests/tools/huge_slot_trace, the layout patched with
# tests/tools/trace_patch). The goal: at most 100 MB and 1 s each, whatever RAM the trace declares.
set -u
build=${1:?usage: bench/report_bound.sh BUILD_DIR}
hvt=$build/bin/hvmtrace
tools=$build/tests/tools
dir=$(mktemp -d /tmp/hvt-bench-bound.XXXXXX)
trap 'rm -rf "$dir"' EXIT
for t in huge_slot_trace trace_patch maxrss; do
	[ -x "$tools/$t" ] || { echo "report_bound: no $tools/$t (make bench-parts builds it)" >&2; exit 1; }
done

"$tools/huge_slot_trace" -o "$dir/tib.hvt" --slot 1T --intervals 4 || exit 1
"$tools/huge_slot_trace" -o "$dir/64g.hvt" --slot 64G --intervals 4 || exit 1
json='{"generation":1,"page_size":4096,"slots":[{"slot":0,"gpa":4294967296,"size":'
new=$(printf '%s' '4611686018427387904,"backing":"anon"     ' | od -An -tx1 | tr -d ' \n')
"$tools/trace_patch" "$dir/64g.hvt" "$dir/eib.hvt" 2 0 ${#json} "$new" || exit 1

# measure LABEL ARGS…: wall seconds and peak resident MB of report ARGS, the output discarded
measure() {
	label=$1
	shift
	start=$(date +%s.%N)
	"$tools/maxrss" "$dir/rss" "$hvt" report "$@" >/dev/null 2>&1
	rc=$?
	awk -v a="$(date +%s.%N)" -v b="$start" -v kb="$(cat "$dir/rss")" -v l="$label" -v rc=$rc \
		'BEGIN { printf "  %-44s %6.2f s %7.1f MB%s\n", l, a - b, kb * 1024 / 1e6, rc ? " (exit " rc ")" : "" }'
}

for t in tib eib; do
	[ $t = tib ] && what="1 TiB slot" || what="4 EiB slot"
	echo "trace declaring a $what: $(stat -c %s "$dir/$t.hvt") bytes, 4 intervals"
	measure "report --pages --histogram --energy" --pages --histogram --energy "$dir/$t.hvt"
	measure "report --json --pages --histogram --energy" --json --pages --histogram --energy "$dir/$t.hvt"
	[ $t = tib ] && measure "report --pages --regions (524,320 regions)" --pages --regions "$dir/$t.hvt"
done
exit 0
