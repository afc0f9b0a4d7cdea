#!/bin/bash
# hvmtrace-vmm --payload sparse, the bench table's load (bench/table/sparse_guests.sh): every Nth page of
# the high slot, and nothing else, written in every interval, page by page (check_phases), so the table's
# "0.1 / 1 / 10 % written" are what the guest writes; and a stride the slot cannot hold is refused.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm

# 1 GiB in all, 1 % of the high slot: 2539 pages per pass.
start_vmm "$T/vmm.sock" --payload sparse --write-every 100 --low-ram 32M --high-ram 992M --phase-time 1s \
	--hold-intervals 5 --follow "$T/rec.jsonl" --wait-attach --phase-log "$T/phases.jsonl" --vcpu-cpu $VCPU_CPU
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 100ms -o "$T/t.hvt" \
	--jsonl "$T/rec.jsonl" 2>"$T/record.err" || fail "record failed: $(cat "$T/record.err" "$T/vmm.out")"
wait "$VMM_PID" || fail "the VMM failed: $(cat "$T/vmm.out")"
assert_contains "$T/phases.jsonl" '"write":[[1048576,2539,100]]'
"$TOOLS/check_phases" --trace "$T/t.hvt" --phase-log "$T/phases.jsonl" --min-inside 5 >"$T/check.out" ||
	fail "the trace does not match the sparse payload: $(tail -n 5 "$T/check.out")"
tail -n 1 "$T/check.out"

"$BIN/hvmtrace-vmm" --payload sparse --write-every 600 --low-ram 32M --high-ram 2M >"$T/bad.out" 2>&1
assert_eq "exit status for a stride wider than the slot" 2 "$?"
assert_contains "$T/bad.out" "--write-every 600 must be between 1 and the high slot's 512 pages"
echo ok
