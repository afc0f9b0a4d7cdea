#!/bin/bash
# The trace metadata, read through its type by report and export. Traces written by hvmtrace 0.1.0
# (tests/fixtures/trace: no bandwidth, PMU stand-in channels, resctrl totals) report and export. A META
# record with a field of the wrong type, in a trace whose every CRC is right, is refused with a message
# naming the field and exit 2, never a crash: before the type, `report` died of SIGSEGV on a null
# bandwidth_source and of a json-c assertion on a number for channels. Members a newer writer may add are
# kept.
source "$(dirname "$0")/../lib/assert.bash"
command -v jq >/dev/null || skip "jq is not installed (scripts/install-deps.sh)"
FIX=tests/fixtures/trace

for f in dirtylog-nobw pmu-standin resctrl-total; do
	"$HVT" report "$FIX/$f.hvt" >"$T/$f.report" 2>"$T/err" || fail "report $f: $(cat "$T/err")"
	assert_contains "$T/$f.report" "trace      $FIX/$f.hvt (complete)"
	assert_contains "$T/$f.report" "mode       dirty-log, interval 0.100 s"
	"$HVT" export --meta "$FIX/$f.hvt" >"$T/$f.meta" || fail "export --meta $f"
	jq -e '.complete and .meta.tool == "hvmtrace 0.1.0" and .meta.page_size == 4096 and
	       .meta.interval_ns == 100000000 and .meta.tracer.command[0] == "record"' "$T/$f.meta" >/dev/null ||
		{ cat "$T/$f.meta"; fail "export --meta $f lost a field"; }
	"$HVT" export --jsonl "$T/$f.jsonl" --csv "$T/$f.csv" "$FIX/$f.hvt" || fail "export $f"
	[ "$(wc -l <"$T/$f.jsonl")" -ge 2 ] || fail "export $f: fewer than 2 intervals"
done
assert_contains "$T/dirtylog-nobw.report" "vm         'fake' (fakepeer, kvm)"
assert_contains "$T/dirtylog-nobw.report" "DRAM bandwidth                   not measured in this trace"
assert_contains "$T/pmu-standin.report" \
	"bandwidth  pmu-stand-in (STAND-IN: software events, not DRAM): s0.mc0.ch1, s1.mc0.ch0"
assert_contains "$T/resctrl-total.report" \
	"bandwidth  resctrl-total (TOTAL bytes, not split into reads and writes): resctrl.mon_L3_00, resctrl.mon_L3_01"
jq -e '.meta.bandwidth_source == "resctrl-total" and (.meta.channels | map(.reads_writes_split) == [false, false])' \
	"$T/resctrl-total.meta" >/dev/null || fail "resctrl-total: bandwidth metadata changed"

# with_meta NAME JQ: the PMU fixture with its META changed by the jq filter, as $T/NAME.hvt.
with_meta() {
	jq -c ".meta | $2" "$T/pmu-standin.meta" | "$TOOLS/trace_set_meta" "$FIX/pmu-standin.hvt" "$T/$1.hvt" ||
		fail "cannot make $1.hvt"
}

refused() { # NAME JQ MESSAGE
	with_meta "$1" "$2"
	expect 2 "$T/$1.hvt: META: $3" "$HVT" report "$T/$1.hvt"
	expect 2 "$T/$1.hvt: META: $3" "$HVT" export --jsonl - "$T/$1.hvt"
}
refused source-null '.bandwidth_source = null' '"bandwidth_source" is not a string (got null)'
refused channels-number '.channels = 2' '"channels" is not an array (got an integer)'
refused channel-not-object '.channels[1] = "s1"' 'channels[1] is not an object (got a string)'
refused channel-id-missing 'del(.channels[0].id)' 'channels[0]: missing "id"'
refused vm-string '.vm = "x"' '"vm" is not an object (got a string)'
refused pid-string '.vm.pid = "12"' 'vm: "pid" is not an integer (got a string)'
refused page-size '.page_size = 4095' '"page_size" is not a power of two of at least 4096'
refused interval-zero '.interval_ns = 0' '"interval_ns" = 0 is out of range'
refused mode-unknown '.mode = "fast"' '"mode" = "fast" is not a harvest mode'
refused source-unknown '.bandwidth_source = "dram"' '"bandwidth_source" = "dram" is not a bandwidth source'
refused source-missing 'del(.bandwidth_source)' 'missing "bandwidth_source", though "bandwidth_available" is true'
refused command-entry '.tracer.command[0] = 1' 'tracer: command[0] is not a string (got an integer)'

# What a newer writer may add is read past and kept, where it was (the command line shortened to make room).
with_meta newer '.tracer.command |= .[:1] | .future = {"x": 1} | .vm.numa = 0 | .channels[0].rank = 2'
"$HVT" report "$T/newer.hvt" >"$T/newer.report" 2>"$T/err" || fail "report of a newer trace: $(cat "$T/err")"
assert_contains "$T/newer.report" "s0.mc0.ch1, s1.mc0.ch0"
"$HVT" export --meta "$T/newer.hvt" | jq -e '.meta.future.x == 1 and .meta.vm.numa == 0 and
    .meta.channels[0].rank == 2 and .meta.vm.name == "fake"' >/dev/null || fail "newer members were not kept"
echo "ok: 3 old traces read, 12 bad fields refused by name, newer members kept"
