#!/bin/bash
# Command-line errors name the option and the value at fault and exit 2; help works.
source "$(dirname "$0")/../lib/assert.bash"

expect 2 "--interval '0'" "$HVT" record --attach x --interval 0
expect 2 "--interval '5x'" "$HVT" record --attach x --interval 5x
expect 2 "--interval '500us'" "$HVT" record --attach x --interval 500us
expect 2 "--duration 'soon'" "$HVT" record --attach x --duration soon
expect 2 "give --attach SOCK or --domain NAME" "$HVT" record
expect 2 "give --attach SOCK or --domain NAME (one of them)" "$HVT" record --attach x --domain y
expect 2 "--vmm-uid 'me'" "$HVT" record --attach x --vmm-uid me
expect 2 "--cpu and --output-dir are needed" "$HVT" virt-xml /dev/null
expect 2 "give a domain file or --domain NAME" "$HVT" virt-xml --check
expect 2 "needs DOMAIN OP SUBOP" "$HVT" libvirt-hook
expect 2 "--cpu 'two'" "$HVT" record --attach x --cpu two
expect 2 "--mode 'fast'" "$HVT" record --attach x --mode fast
expect 2 "'frobnicate' is not a command" "$HVT" frobnicate
# A command that reads one trace says so of a second (report and plot wss/cdf take several).
expect 2 "unexpected argument 'b.hvt': TRACE is 'a.hvt' already (one TRACE only)" "$HVT" export --jsonl - a.hvt b.hvt
"$HVT" record --help | grep -q -- '--interval DUR' || fail "record --help"
"$HVT" --help | grep -q 'export' || fail "--help"
# The main --help names every form export writes (it said "JSON Lines or CSV"), each an option of export's.
"$HVT" --help | grep '^  export ' >"$T/export-line"
assert_contains "$T/export-line" "JSON Lines" "CSV" "damo (DAMON) input" "pcm-memory CSV" "raw bitmaps"
"$HVT" export --help >"$T/export-help"
assert_contains "$T/export-help" "--jsonl FILE" "--csv FILE" "--damo FILE" "--pcm-csv FILE" "--raw FILE"
# An operand that repeats is listed once (top's --help listed ENDPOINT four times).
[ "$("$HVT" top --help | grep -c '^  ENDPOINT')" = 1 ] || fail "top --help: $("$HVT" top --help)"
# One selection for every reading command: the same --from/--to/--range lines (lib/analysis/select.c).
for c in report plot export; do
	"$HVT" $c --help | grep -A 3 '^Selection' | tr -s ' ' >"$T/sel-$c.txt"
done
grep -q -- '--range FIRST-LAST only these guest page frame numbers' "$T/sel-report.txt" || fail "report --help: $(cat "$T/sel-report.txt")"
cmp -s "$T/sel-report.txt" "$T/sel-plot.txt" && cmp -s "$T/sel-report.txt" "$T/sel-export.txt" ||
	fail "report, plot and export --help differ on the selection: $(cat "$T"/sel-*.txt)"
"$BIN/hvmtrace-vmm" --help | grep -q -- '--listen' || fail "hvmtrace-vmm --help"

# hvmtrace-vmm exits as its --help says: 2 on a usage error, 1 on a host error, and in both cases only after
# freeing what it had set up (in the sanitized build a leak turns any exit status into 1, and says so).
VMM=$BIN/hvmtrace-vmm
"$VMM" --help | grep -q '^  2  a usage error$' || fail "hvmtrace-vmm --help does not list exit status 2"
expect 2 "--low-ram '5x': not a size" "$VMM" --low-ram 5x
expect 2 "--wait-attach needs --listen SOCKET" "$VMM" --wait-attach
if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
	# Both are found only once the guest is built. CPU_SETSIZE - 1 is a CPU no test machine has.
	expect 2 "--vcpu-cpu 1023" "$VMM" --vcpu-cpu 1023 --low-ram 64M --high-ram 2M
	expect 1 "--phase-log $T/none/p.jsonl" "$VMM" --phase-log "$T/none/p.jsonl" --low-ram 64M --high-ram 2M
	! grep -q LeakSanitizer "$T/err" || fail "hvmtrace-vmm leaks on a --phase-log it cannot create"
fi
echo ok
