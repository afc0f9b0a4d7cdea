#!/bin/bash
# `hvmtrace record --bw-fallback resctrl` on a VM without reserved channels (the test VMM's anon slots):
# the VMM's threads go into a resctrl monitoring group and each interval records that group's TOTAL bytes,
# labelled as not split into reads and writes. The resctrl tree is the recorded one in
# tests/fixtures/resctrl (this host has no resctrl); a background loop plays the kernel, raising the
# group's mbm_total_bytes, so the recorded deltas must add up to exactly what it added. Without the option
# the same VM records no bandwidth (null), and the trace says so.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm
command -v jq >/dev/null || skip "jq is not installed (scripts/install-deps.sh)"

start_vmm "$T/vmm.sock" --name bwvm --payload phases4 --phase-time 0.5s --repeat 0 --vcpu-cpu $VCPU_CPU

# No channels, no fallback: bandwidth is null, not 0.
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 100ms --duration 300ms \
	-o "$T/plain.hvt" 2>"$T/err" || fail "record failed: $(cat "$T/err")"
"$BIN/hvmtrace" export --meta "$T/plain.hvt" | jq -e '.meta.bandwidth_available == false or .bandwidth_available == false' >/dev/null ||
	fail "a channel-less VM claims bandwidth"
"$BIN/hvmtrace" export --jsonl - "$T/plain.hvt" | jq -e -s 'all(.[]; .read_bytes == null and .channels == null)' >/dev/null ||
	fail "a channel-less VM recorded bandwidth figures"

R=$T/resctrl
cp -a tests/fixtures/resctrl/skx-2socket "$R"
G=$R/mon_groups/hvmtrace-bwvm-$VMM_PID
mv "$R/mon_groups/hvmtrace-test" "$G" # the group as the kernel lays it out after mkdir
echo 1000 >"$G/mon_data/mon_L3_00/mbm_total_bytes"
echo 5000 >"$G/mon_data/mon_L3_01/mbm_total_bytes"
(
	v=1000
	for i in $(seq 1 200); do
		v=$((v + 4096 * i))
		echo $v >"$G/mon_data/mon_L3_00/mbm_total_bytes.new"
		mv "$G/mon_data/mon_L3_00/mbm_total_bytes.new" "$G/mon_data/mon_L3_00/mbm_total_bytes"
		sleep 0.01
	done
) &
BG_PIDS+=($!)
"$BIN/hvmtrace" record --attach "$T/vmm.sock" --cpu $TRACER_CPU --interval 100ms --duration 1s --bw-fallback resctrl \
	--resctrl-root "$R" -o "$T/t.hvt" --jsonl "$T/rec.jsonl" 2>"$T/err" || fail "record failed: $(cat "$T/err")"
cat "$T/err"
assert_contains "$T/err" "bandwidth from resctrl-total (TOTAL bytes"
final=$(cat "$G/mon_data/mon_L3_00/mbm_total_bytes")
grep -qx "$VMM_PID" "$G/tasks" || fail "the VMM's main thread was not put in the group: $(cat "$G/tasks")"
# Threads the VMM starts later inherit the group in the kernel; here every thread present went in.
[ "$(wc -l <"$G/tasks")" -ge 2 ] || fail "the vCPU thread was not put in the group: $(cat "$G/tasks")"

"$BIN/hvmtrace" export --meta "$T/t.hvt" >"$T/meta.json"
jq -e '(.. | objects | select(has("bandwidth_source")) | .bandwidth_source) == "resctrl-total"' "$T/meta.json" >/dev/null ||
	fail "metadata does not name the resctrl source"
jq -e '[.. | objects | select(has("channels")) | .channels[]?] | map(select(.id == "resctrl.mon_L3_00" and .reads_writes_split == false)) | length == 1' \
	"$T/meta.json" >/dev/null || fail "metadata channels are not labelled as resctrl totals"
# Every interval carries both domains as totals: reads and writes were not measured apart, so they are
# null (not "all reads, 0 writes"), and the interval's total is the domains' sum; the windows add up.
jq -e -s 'length >= 9 and all(.[]; .channels != null and (.channels | length) == 2 and
    .read_bytes == null and .write_bytes == null and .total_bytes == ([.channels[].total_bytes] | add) and
    all(.channels[]; .read_bytes == null and .write_bytes == null and (.total_bytes | type) == "number"))' \
	"$T/rec.jsonl" >/dev/null || { cat "$T/rec.jsonl"; fail "intervals lack resctrl totals or claim a read/write split"; }
sum=$(jq -s '[.[].channels[] | select(.channel == 0) | .total_bytes] | add' "$T/rec.jsonl")
wait "${BG_PIDS[-1]}" 2>/dev/null
[ "$sum" -gt 0 ] || fail "no bytes recorded"
[ "$sum" -le $((final - 1000)) ] || fail "recorded $sum bytes, more than the $((final - 1000)) the group counted"
# Each window is the counter's rise between two reads: whole steps of the loop, never torn values.
jq -s '[.[].channels[] | select(.channel == 0) | .total_bytes] | map(. % 4096 == 0) | all' "$T/rec.jsonl" | grep -q true ||
	fail "a window is not a whole number of the loop's 4096-byte steps"
"$BIN/hvmtrace" export --jsonl "$T/export.jsonl" "$T/t.hvt" || fail "export failed"
cmp "$T/rec.jsonl" "$T/export.jsonl" || fail "recorded JSON Lines differ from the export"
# CSV: read_bytes and write_bytes empty (not measured), total_bytes the JSON total.
"$BIN/hvmtrace" export --csv "$T/t.csv" "$T/t.hvt" || fail "CSV export failed"
[ "$(head -1 "$T/t.csv" | cut -d, -f17)" = total_bytes ] || fail "CSV has no total_bytes column (17, where the awk below reads it)"
awk -F, 'NR > 1 && ($14 != "" || $15 != "" || $17 == "") { bad = 1 } END { exit bad }' "$T/t.csv" ||
	fail "CSV rows give reads/writes for resctrl totals, or lack the total: $(head -3 "$T/t.csv")"
[ "$(awk -F, 'NR > 1 { s += $17 } END { print s }' "$T/t.csv")" = "$(jq -s '[.[].total_bytes] | add' "$T/rec.jsonl")" ] ||
	fail "CSV totals differ from the JSON Lines totals"
# report: a total MB/s column and totals, never a read/write split
"$BIN/hvmtrace" report "$T/t.hvt" >"$T/report" || fail "report failed"
assert_contains "$T/report" "total_MBps"
assert_contains "$T/report" "not split into reads and writes"
echo "ok: $sum bytes over $(wc -l <"$T/rec.jsonl") intervals"
