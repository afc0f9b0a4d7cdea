#!/bin/bash
# A 4-phase payload over two memslots (one of 1 GiB above a hole), traced at 1 s intervals: every
# interval inside phase k holds exactly W_k (plus the payload's system pages), every boundary interval
# lies within the phases it spans and holds what the VMM's pass log says was written in it — page by page.
# The JSON Lines written while recording equal the trace's export.
source "$(dirname "$0")/common.bash"
need_kvm

start_vmm "$T/vmm.sock" --payload phases4 --phase-time 3.5s --wait-attach --phase-log "$T/phases.jsonl" \
	--vcpu-cpu $VCPU_CPU
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 1s -o "$T/t.hvt" \
	--jsonl "$T/rec.jsonl" 2>"$T/record.err" || { cat "$T/record.err" "$T/vmm.out"; fail "record failed"; }
cat "$T/record.err"
wait "$VMM_PID" || fail "the VMM failed: $(cat "$T/vmm.out")"

"$TOOLS/check_phases" --trace "$T/t.hvt" --phase-log "$T/phases.jsonl" --min-inside 2 || fail "trace does not match the phases"
"$BIN/hvmtrace" export --jsonl "$T/export.jsonl" "$T/t.hvt" || fail "export failed"
cmp "$T/rec.jsonl" "$T/export.jsonl" || fail "the recorded JSON Lines differ from the export"
n=$(wc -l <"$T/rec.jsonl")
[ "$n" -ge 14 ] || fail "only $n intervals for 4 phases of 3.5 s"
tail -n 1 "$T/rec.jsonl" | grep -q '"final":true' || fail "the last interval (VMM exit) is not marked final"
grep -q '"accessed_pages":null' "$T/rec.jsonl" || fail "accessed pages are not reported as unavailable (null)"
echo "ok: $n intervals"
