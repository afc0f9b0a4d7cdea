#!/bin/bash
# The build-like load (tests/guest/buildload.c: parallel "compilers" reading sources, working on their heaps,
# writing objects, then a "link") in a Linux guest under patched QEMU (TCG), traced at 1 s: every interval
# inside the build writes at least a few hundred pages (the compilers' heaps alone are 4 MiB each), the
# guest finishes, and the trace ends with the guest's final interval.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
need_qemu
[ "$(id -u)" = 0 ] || skip "needs root (the initramfs needs /dev/console)"

guest_linux
timeout 300 "$QEMU" "${QEMU_L[@]}" -M pc -accel tcg -cpu max -m 512M -smp 1 -kernel "$kernel" -initrd "$initrd" \
	-append "console=ttyS0 quiet panic=-1 hvt.run=build hvt.seconds=8 hvt.jobs=4" -no-reboot -nic none \
	-display none -serial stdio -monitor none -object "hvmtrace,id=t0,path=$T/vm.sock" 2>"$T/qemu.err" </dev/null |
	"$TOOLS/stamp_lines" >"$T/console" &
BG_PIDS+=($!)
wait_socket "$T/vm.sock"
"$BIN/hvmtrace" record --attach "$T/vm.sock" --interval 1s -o "$T/t.hvt" --jsonl "$T/t.jsonl" 2>"$T/record.err" ||
	{ cat "$T/record.err"; fail "record failed"; }
grep -q 'HVT EXIT 0' "$T/console" || { tail -20 "$T/console"; fail "the build load did not finish"; }
assert_contains "$T/record.err" "the VMM said bye: QEMU stops the VM: guest-shutdown"
grep 'HVT PHASE' "$T/console"
begin=$(awk '/HVT PHASE build/ { print $1 }' "$T/console")
end=$(awk '/HVT PHASE done/ { print $1 }' "$T/console")
# intervals wholly inside the build (100 ms margin for console latency): "t_start_ns t_end_ns written_pages"
grep -o '"t_start_ns":[0-9]*,"t_end_ns":[0-9]*' "$T/t.jsonl" | tr -c '0-9\n' ' ' | awk '{ print $1, $2 }' >"$T/times"
grep -o '"written_pages":[0-9]*' "$T/t.jsonl" | cut -d: -f2 | paste -d' ' "$T/times" - |
	awk -v b="$begin" -v e="$end" '$1 > b + 1e8 && $2 + 1e8 < e' >"$T/inside"
cat "$T/inside"
[ "$(wc -l <"$T/inside")" -ge 5 ] || fail "fewer than 5 intervals inside an 8 s build"
awk '$3 < 300 { bad = 1 } END { exit bad }' "$T/inside" || fail "an interval inside the build wrote fewer than 300 pages"
tail -n 1 "$T/t.jsonl" | grep -q '"final":true' || fail "the trace does not end with the guest's final interval"
"$BIN/hvmtrace" report --totals-only "$T/t.hvt"
