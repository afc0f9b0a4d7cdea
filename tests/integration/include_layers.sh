#!/bin/bash
# The layers hold (issue 21): the include graph (tests/tools/include_graph.sh) has no cycle; a public header
# (include/) includes only public headers; a file of lib/ includes nothing of the command, the programs or
# the tests, and no private header of another concern of lib/ but the ones listed below, each with its
# reason; the programs (hvmtrace/, plot/, chanmap/) include only public headers and their own, lib's private
# headers never; an engine of the command (hvmtrace/ENGINE/) includes no other engine's header nor the
# subcommands'. A tree made to break each rule is refused, by name, so the check has teeth.
# one build: reads the sources, not the build
source "$(dirname "$0")/../lib/assert.bash"
GRAPH=$ROOT/tests/tools/include_graph.sh

# FILE HEADER REASON: a file of one concern of lib/ that includes a private header of another, or an engine
# of the command that uses another engine.
ALLOWED='
hvmtrace/doctor/doctor_chain.c hvmtrace/libvirt/host_checks.h the doctor asks the libvirt engine'"'"'s own output-directory check, so that doctor and the hook answer alike
hvmtrace/doctor/doctor_limits.c hvmtrace/record/mem_budget.h the doctor sizes the lock record would take with record'"'"'s own budget
hvmtrace/report/report_owners.c hvmtrace/attribute/owners_interval.h report --by counts pages by the attribute engine'"'"'s per-interval rule, one rule for every view by owner
hvmtrace/report/report_html_owners.c hvmtrace/attribute/owners_interval.h report --html --by names each cell'"'"'s owner by the attribute engine'"'"'s per-interval rule, one rule for every view by owner
hvmtrace/report/export_owners.h hvmtrace/attribute/owners_interval.h export --by labels runs by the attribute engine'"'"'s per-interval rule, one rule for every view by owner
lib/analysis/select_ahead.c lib/format/trace_format.h it selects intervals by the seq and times at the head of their payloads (hvt_get_le64) before it decodes them
lib/analysis/select_ahead.c lib/format/trace_decode.h it decodes the selected intervals straight into runs (hvt_trace_decode_runs), ahead of the walk
'

# check_layers ROOT: prints every breach, one a line.
check_layers() {
	"$GRAPH" --cycles "$1" | sed 's/^/include cycle: /'
	"$GRAPH" --edges "$1" | awk -v allowed="$ALLOWED" '
	BEGIN {
		n = split(allowed, lines, "\n")
		for (i = 1; i <= n; i++)
			if (split(lines[i], f, " ") >= 3)
				allow[f[1] " " f[2]] = 1
	}
	function part(p, i,    c) { split(p, c, "/"); return c[i] }
	function breach(why) { print $1 " includes " $2 ": " why }
	{
		from = part($1, 1); to = part($2, 1)
		if (from == "include" && to != "include")
			breach("a public header includes only public headers")
		else if (from == "lib" && to != "include" && to != "lib")
			breach("lib/ includes nothing of the command, the programs or the tests")
		else if (from == "lib" && to == "lib" && part($1, 2) != part($2, 2)) {
			if (($1 " " $2) in allow)
				used[$1 " " $2] = 1
			else
				breach("a private header of another concern of lib/ (list it in include_layers.sh with the reason, or use a public header)")
		} else if (from ~ /^(hvmtrace|plot|chanmap)$/ && to != "include" && to != from)
			breach("a program includes only public headers and its own")
		else if (from == "hvmtrace" && to == "hvmtrace" && $1 ~ /^hvmtrace\/[^\/]+\// &&
			 ($2 !~ /^hvmtrace\/[^\/]+\// || part($1, 2) != part($2, 2))) {
			if (($1 " " $2) in allow)
				used[$1 " " $2] = 1
			else
				breach("an engine of the command includes no other engine'"'"'s header nor the subcommands'"'"' (list it in include_layers.sh with the reason)")
		}
	}
	END {
		for (a in allow)
			if (!(a in used))
				print "include_layers.sh allows " a ", which no longer occurs: remove it"
	}'
}

check_layers "$ROOT" >"$T/breaches"
[ -s "$T/breaches" ] && fail "the layers do not hold:
$(cat "$T/breaches")"
echo "ok: $("$GRAPH" --edges "$ROOT" | wc -l) includes, no cycle, every layer holds"

# A tree that breaks each rule once.
B=$T/broken
mkdir -p "$B"/include/hvmtrace "$B"/lib/core "$B"/lib/format "$B"/lib/analysis "$B"/hvmtrace/record \
	"$B"/hvmtrace/live "$B"/plot
printf '#include "b.h"\n' >"$B/lib/core/a.h"
printf '#include "a.h"\n' >"$B/lib/core/b.h"
printf '#include "../../lib/core/a.h"\n' >"$B/include/hvmtrace/pub.h"
printf '#include "trace_format.h"\n#include "trace_decode.h"\n' >"$B/lib/format/trace_reader.c"
touch "$B/lib/format/trace_format.h" "$B/lib/format/trace_decode.h" "$B/hvmtrace/record/session.h" \
	"$B/hvmtrace/live/metrics.h" "$B/hvmtrace/commands.h" "$B/plot/plot.h"
printf '#include "format/trace_format.h"\n#include "format/trace_decode.h"\n' >"$B/lib/analysis/select_ahead.c"
printf '#include "format/trace_format.h"\n' >"$B/lib/analysis/analysis_pages.c"
printf '#include "../../hvmtrace/record/session.h"\n' >"$B/lib/core/util.c"
printf '#include "../lib/format/trace_format.h"\n' >"$B/plot/main.c"
printf '#include "record/session.h"\n' >"$B/hvmtrace/live/metrics.c"
printf '#include "commands.h"\n' >"$B/hvmtrace/record/harvest.c"
printf '#include "record/session.h"\n#include "live/metrics.h"\n' >"$B/hvmtrace/cmd_record.c"
check_layers "$B" >"$T/broken.out"
for want in \
	"include cycle: lib/core/a.h -> lib/core/b.h -> lib/core/a.h" \
	"include/hvmtrace/pub.h includes lib/core/a.h: a public header" \
	"lib/analysis/analysis_pages.c includes lib/format/trace_format.h: a private header of another concern" \
	"lib/core/util.c includes hvmtrace/record/session.h: lib/ includes nothing of the command" \
	"plot/main.c includes lib/format/trace_format.h: a program includes only" \
	"hvmtrace/live/metrics.c includes hvmtrace/record/session.h: an engine" \
	"hvmtrace/record/harvest.c includes hvmtrace/commands.h: an engine"; do
	assert_contains "$T/broken.out" "$want"
done
assert_eq "breaches in the broken tree" 7 "$(grep -vc "^include_layers.sh allows" "$T/broken.out")"
rm "$B/lib/analysis/select_ahead.c"
check_layers "$B" | grep -q "allows lib/analysis/select_ahead.c lib/format/trace_decode.h, which no longer occurs" ||
	fail "an allowance no file uses any more went unnoticed"
echo "ok: a tree that breaks each rule is refused by name"
