#!/bin/bash
# Large sparse guests (issue 12 item 1): hvmtrace-vmm runs the phase payload in guests of 64 GiB, 256 GiB and
# 1 TiB (most pages never touched), and record traces each at 1 s with exact written sets, page by page as
# record_phases_1s does. record sizes its resident memory from the layout before it drops its privileges and
# says so at start; it never stops for memory mid-run.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
need_kvm

for size in 64G 256G 1T; do
	rm -f "$T/vmm.sock" "$T/rec.jsonl" "$T/phases.jsonl"
	VMM_ARGS=(--high-ram "$size")
	trace_phases 1s 2s 1
	# what record locked covers this guest, and it said so before the first interval
	grep -E '^hvmtrace record: resident memory [0-9.]+ [KMG]iB \([0-9.]+ [KMG]iB locked\), enough for guest RAM up to [0-9.]+ [GT]iB' \
		"$T/record.err" >/dev/null || fail "$size: record did not state its resident memory"
	assert_contains "$T/record.err" "the VMM said bye: guest finished"
	grep -q "out of memory" "$T/record.err" && fail "$size: record ran out of memory"
	n=$(wc -l <"$T/rec.jsonl")
	# the edges phase writes the high slot's last page (slot 1 starts at 4 GiB, gfn 2^20)
	last=$(jq -r '.written | map(.[0] + .[1] - 1) | max // 0' "$T/rec.jsonl" | sort -n | tail -n 1)
	want=$(($(numfmt --from=iec "$size") / 4096 + (1 << 20) - 1))
	assert_eq "$size: highest gfn written" "$want" "$last"
	echo "ok: $size guest, $n intervals, highest gfn written $last"
done
