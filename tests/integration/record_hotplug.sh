#!/bin/bash
# Memory hot-plug against record's memory budget (issue 12 item 1): a layout change that grows the guest
# within --max-guest-ram is traced on; one beyond it is refused with a message naming both sizes, and the
# trace ends with an interval that records the refusal (no sets: what the guest wrote is unknown).
# The VMM is fakepeer (tests/tools), which plugs a slot at 1 TiB in before the 4th harvest.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"

hotplug() { # SIZE: fakepeer on $T/f.sock plugging SIZE in
	rm -f "$T/f.sock"
	start_fakepeer "$T/f.sock" hotplug "$1"
}

# Within the budget: generation 2 is traced, the plugged slot's pages among the written ones.
hotplug 4G
"$BIN/hvmtrace" record --attach "$T/f.sock" --interval 100ms --duration 1s --max-guest-ram 8G \
	-o "$T/in.hvt" --jsonl "$T/in.jsonl" 2>"$T/in.err" || fail "record failed: $(cat "$T/in.err")"
assert_contains "$T/in.err" "enough for guest RAM up to 8.00 GiB"
assert_eq "generations" "1 2" "$(jq -r .generation "$T/in.jsonl" | sort -u | xargs)"
assert_eq "interval 4's pages" "[[4,1],[268435460,1]]" "$(jq -c 'select(.seq == 4) | .written' "$T/in.jsonl")"
assert_eq "refusals" 0 "$(jq -s 'map(select(.layout_refused)) | length' "$T/in.jsonl")"

# Beyond it: refused, recorded, and report says so.
hotplug 4G
expect 1 "layout generation 2 refused: the guest grew to 4.02 GiB of RAM, beyond the 1.00 GiB this run's locked memory covers (record --max-guest-ram)" \
	"$BIN/hvmtrace" record --attach "$T/f.sock" --interval 100ms --duration 2s --max-guest-ram 1G \
	-o "$T/out.hvt" --jsonl "$T/out.jsonl"
grep -q "out of memory" "$T/err" && fail "record ran out of memory"
assert_eq "last interval" '{"seq":4,"generation":1,"written":null,"layout_refused":true,"final":true}' \
	"$(tail -n 1 "$T/out.jsonl" | jq -c '{seq, generation, written, layout_refused, final}')"
assert_eq "intervals before it" 3 "$(jq -s 'map(select(.written_pages == 1)) | length' "$T/out.jsonl")"
"$BIN/hvmtrace" export --jsonl "$T/export.jsonl" "$T/out.hvt" || fail "export failed"
cmp "$T/out.jsonl" "$T/export.jsonl" || fail "the trace and the JSON Lines differ"
"$BIN/hvmtrace" report "$T/out.hvt" >"$T/report" || fail "report failed"
assert_contains "$T/report" "final layout-refused"
assert_contains "$T/report" "recording ended                  the guest's RAM grew beyond"

# A maximum below the RAM at attach is a usage error.
hotplug 4G
expect 2 "--max-guest-ram is less than the guest's 16.0 MiB of RAM" \
	"$BIN/hvmtrace" record --attach "$T/f.sock" --interval 100ms --duration 1s --max-guest-ram 2M -o "$T/x.hvt"
echo "ok: growth within the budget traced, beyond it refused and recorded"
