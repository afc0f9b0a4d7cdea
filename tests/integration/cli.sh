#!/bin/bash
# Command-line errors name the option and the value at fault and exit 2; help works.
source "$(dirname "$0")/../lib/assert.bash"
HVT=$BIN/hvmtrace

expect 2 "--interval '0'" "$HVT" record --attach x --interval 0
expect 2 "--interval '5x'" "$HVT" record --attach x --interval 5x
expect 2 "--interval '500us'" "$HVT" record --attach x --interval 500us
expect 2 "--duration 'soon'" "$HVT" record --attach x --duration soon
expect 2 "--attach SOCK is required" "$HVT" record
expect 2 "--cpu 'two'" "$HVT" record --attach x --cpu two
expect 2 "--mode 'fast'" "$HVT" record --attach x --mode fast
expect 2 "'frobnicate' is not a command" "$HVT" frobnicate
expect 2 "unexpected argument" "$HVT" report a.hvt b.hvt
"$HVT" record --help | grep -q -- '--interval DUR' || fail "record --help"
"$HVT" --help | grep -q 'export' || fail "--help"
"$BIN/hvmtrace-vmm" --help | grep -q -- '--listen' || fail "hvmtrace-vmm --help"
echo ok
