#!/bin/bash
# The build load attributed (issue 27): a Debian Linux guest under TCG runs the build-like load
# (tests/guest/buildload.c: make, cc1, as and ld, each exec'd under its name, so the guest agent sees a
# kernel build's comms; files in tmpfs) for 8 s with the guest agent (hvt.owners=0.5: a snapshot every
# 0.5 s after the last one's end, so every 0.63 to 0.85 s under TCG), and hvmtrace record --owners-port
# stores the snapshots, at 500 ms intervals. Record stores at most one snapshot an interval, and the agent's
# period is longer than an interval, so no snapshot waits behind another and each interval is attributed by
# one at most about an interval old. `hvmtrace attribute --json`, by process and by kind, over the intervals
# wholly inside the build (tests/tools/owners_build_check.py), must give:
#   - cc1 as the top writing program (processes of one name summed). A compilation takes about 0.15 s under
#     TCG and four run at once, so most snapshots hold a cc1 or more, each with its 4 MiB heap
#     (1,024 pages) written in the interval after it; the next writer, the agent, writes about 160 pages an
#     interval. Measured: cc1 15 to 30 % of the build's written pages, the agent 2 %.
#   - the page cache (kind cache) at least 5 % of the build's written pages. A tmpfs page is a file page
#     on the LRU, not anonymous, so kpageflags makes it cache (the snapshots' cache pages are the
#     initramfs's files plus the build's 10,240 pages of files, to a few pages). The build rewrites 6,144
#     pages of tmpfs files a round (each .s and .o, and a.out), truncating each file first, so the frames it
#     writes are often those the file had just freed (the allocator hands out the most recently freed
#     first), cache in the snapshot before too. Measured: 11.3 to 15 %; the
#     bound is under half the lowest, since how many frames come back to the same file is the allocator's.
# What the snapshots miss is the rest: measured, 67 to 82 % of the build's written pages are no process's
# (compilers that started and exited between two snapshots; docs/attribution.md "What a snapshot cannot
# see"); that is printed, not checked.
# one build: its subject is the guest agent on a build; attribute's figures are integration/attribute's, on both builds
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
need_qemu
[ "$(id -u)" = 0 ] || skip "needs root (the initramfs needs /dev/console)"

{ read -r kernel; read -r initrd; } < <(scripts/guest-workloads.sh "$BUILD")
[ -f "$kernel" ] && [ -f "$initrd" ] || fail "no guest kernel or initramfs (scripts/guest-workloads.sh)"

timeout 300 "$QEMU" "${QEMU_L[@]}" -M pc -accel tcg -cpu max -m 512M -smp 1 -kernel "$kernel" -initrd "$initrd" \
	-append "console=ttyS0 quiet panic=-1 hvt.run=build hvt.seconds=8 hvt.jobs=4 hvt.owners=0.5" -no-reboot \
	-nic none -display none -serial stdio -monitor none -object "hvmtrace,id=t0,path=$T/vm.sock" \
	-device virtio-serial-pci -chardev "socket,id=owners0,path=$T/owners.sock,server=on,wait=off" \
	-device virtserialport,chardev=owners0,name=org.hvmtrace.owners.0 \
	2>"$T/qemu.err" </dev/null | "$TOOLS/stamp_lines" >"$T/console" &
QEMU_PID=$!
BG_PIDS+=("$QEMU_PID")
wait_socket "$T/vm.sock"
wait_socket "$T/owners.sock"

"$BIN/hvmtrace" record --attach "$T/vm.sock" --owners-port "$T/owners.sock" --interval 500ms -o "$T/t.hvt" \
	--jsonl "$T/t.jsonl" 2>"$T/record.err" || { cat "$T/record.err" "$T/qemu.err"; fail "record failed"; }
wait "$QEMU_PID" 2>/dev/null
grep 'HVT \|hvmtrace-guest' "$T/console"
grep -q 'HVT OWNERS agent' "$T/console" || { tail -20 "$T/console"; fail "the guest did not start the agent"; }
grep -q 'HVT EXIT 0' "$T/console" || { tail -20 "$T/console"; fail "the build load did not finish"; }
grep 'snapshots stored' "$T/record.err" || { cat "$T/record.err"; fail "record says nothing of the port's snapshots"; }

"$BIN/hvmtrace" attribute "$T/t.hvt" --json >"$T/process.json" || fail "attribute exited $?"
"$BIN/hvmtrace" attribute "$T/t.hvt" --by kind --json >"$T/kind.json" || fail "attribute --by kind exited $?"
begin=$(awk '/HVT PHASE build/ { print $1 }' "$T/console")
end=$(awk '/HVT PHASE done/ { print $1 }' "$T/console")
python3 "$ROOT/tests/tools/owners_build_check.py" "$T/process.json" "$T/kind.json" "$T/t.jsonl" "$begin" "$end" ||
	fail "the build's written pages are not attributed as the model says"
echo "ok: cc1 is the build's top writing program, and the page cache holds a real share of its written pages"
