#!/bin/bash
# The same page-by-page check as record_phases_1s, at 100 ms intervals.
source "$(dirname "$0")/common.bash"
need_kvm

start_vmm "$T/vmm.sock" --payload phases4 --phase-time 0.8s --wait-attach --phase-log "$T/phases.jsonl" \
	--vcpu-cpu $VCPU_CPU
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 100ms -o "$T/t.hvt" \
	--jsonl "$T/rec.jsonl" 2>"$T/record.err" || { cat "$T/record.err" "$T/vmm.out"; fail "record failed"; }
cat "$T/record.err"
wait "$VMM_PID" || fail "the VMM failed: $(cat "$T/vmm.out")"
"$TOOLS/check_phases" --trace "$T/t.hvt" --phase-log "$T/phases.jsonl" --min-inside 4 || fail "trace does not match the phases"
"$BIN/hvmtrace" export --jsonl "$T/export.jsonl" "$T/t.hvt" || fail "export failed"
cmp "$T/rec.jsonl" "$T/export.jsonl" || fail "the recorded JSON Lines differ from the export"
echo "ok: $(wc -l <"$T/rec.jsonl") intervals"
