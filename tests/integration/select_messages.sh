#!/bin/bash
# What report, export and plot say of a selection that holds nothing, on a trace of 201 one-second
# intervals: a reversed --from/--to is named as such, and an empty one quotes what the whole trace covers
# (report --from 100 --to 50 said "the trace covers 0-51.000 s, intervals 1-51": only what it had read).
# One line, exit 2, nothing written.
source "$(dirname "$0")/../lib/assert.bash"

"$TOOLS/synth_trace" -o "$T/t.hvt" --guest 1G --intervals 201 --runs 50 --phase 50 >/dev/null ||
	fail "synth_trace failed"
whole="--from/--to select no interval: the trace covers 0-201.000 s, intervals 1-201"
for cmd in "report" "export --jsonl $T/x.jsonl" "plot wss -o $T/x.png"; do
	# shellcheck disable=SC2086 # cmd is words
	expect 2 "--from 100 --to 50 select no interval: --from is after --to (reversed)" \
		"$HVT" $cmd "$T/t.hvt" --from 100 --to 50
	# shellcheck disable=SC2086
	expect 2 "--from 10s --to 2500ms select no interval: --from is after --to (reversed)" \
		"$HVT" $cmd "$T/t.hvt" --from 10s --to 2.5s
	# shellcheck disable=SC2086
	expect 2 "$whole" "$HVT" $cmd "$T/t.hvt" --from 300
	# shellcheck disable=SC2086
	expect 2 "$whole" "$HVT" $cmd "$T/t.hvt" --from 150 --to 10s # a seq after a time
	# shellcheck disable=SC2086
	expect 2 "$whole" "$HVT" $cmd "$T/t.hvt" --from 5s --to 5s # [5 s, 5 s) overlaps nothing
	[ "$(wc -l <"$T/err")" = 1 ] || fail "more than one line: $(cat "$T/err")"
done
[ ! -e "$T/x.jsonl" ] && [ ! -e "$T/x.png" ] || fail "a refused command left its output behind"
echo "ok: empty and reversed selections are named, with the whole trace's coverage"
