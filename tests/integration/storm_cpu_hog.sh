#!/bin/bash
# Storm: CPU contention on the tracer's core. A busy loop at nice -10 shares the CPU of the tracer (and of the
# VMM's harvest thread) while `record` traces the phases4 pattern at 10 ms intervals: deadlines are missed,
# every missed one is counted in the interval that spans it (tests/tools/check_deadlines), and nothing is
# wrong: the pages match the VMM's phase log (check_phases) and the trace equals the JSON Lines.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm

# The hog starts once the tracer has written its first interval: a tracer starved from its start takes
# longer than the VMM's 10 s to send attach, and the storm is about deadlines, not attaching. Nice -10
# leaves the tracer and the harvest thread about 10 % of the CPU, 5 % with another busy process there (the
# suite's lab lane): deadlines of 10 ms are missed by the hundred. At nice -20 they got about 1 %, 0.5 %
# beside the lab, and the sanitizer build's VMM once took over record's 5 s to answer a harvest: a VMM
# that hung, as record rightly took it, not a storm of missed deadlines.
hog() {
	(
		while [ ! -s "$T/rec.jsonl" ]; do sleep 0.01; done
		exec taskset -c "$TRACER_CPU" nice -n -10 bash -c 'while :; do :; done'
	) &
	BG_PIDS+=($!)
}
hog
trace_phases 10ms 0.2s 2
"$TOOLS/check_deadlines" --trace "$T/t.hvt" --interval 10ms >"$T/deadlines" || {
	cat "$T/deadlines"
	fail "missed deadlines are not accounted for"
}
cat "$T/deadlines"
missed=$(awk '{ print $3 }' "$T/deadlines")
[ "$missed" -gt 0 ] || fail "no deadline was missed under the hog: the storm tested nothing"
echo "ok: $missed deadlines missed under contention, all counted; every page right"
