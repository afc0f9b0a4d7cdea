#!/bin/bash
# The same page-by-page check as record_phases_1s, at 100 ms intervals.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm

trace_phases 100ms 0.8s 4
echo "ok: $(wc -l <"$T/rec.jsonl") intervals"
