#!/bin/bash
# The build load attributed (issue 27): a Debian Linux guest under TCG runs the build-like load
# (tests/guest/buildload.c: make, cc1, as and ld, each exec'd under its name, so the guest agent sees a
# kernel build's comms; files in tmpfs) for 5 s with the guest agent (hvt.owners=0.5: a snapshot every
# 0.5 s after the last one's end, so every 0.63 to 0.85 s under TCG), and hvmtrace record --owners-port
# stores the snapshots, at 500 ms intervals. Record stores at most one snapshot an interval, and the agent's
# period is longer than an interval, so no snapshot waits behind another. attribute gives a page to an
# owner only when the snapshots around its interval agree (docs/attribution.md): a process must live
# across two snapshots, 0.6 to 1.7 s apart, for its pages to be its own. Over the intervals wholly inside
# the build (tests/tools/owners_build_check.py), two builds:
#   - Short compilers (the load's defaults: 64 units a round, two rounds at least, since the first round
#     creates the files the second rewrites, a cc1 builds and walks its 4 MiB heap once, about 0.15 s a
#     compilation): their pages are changed owner or no process's, not cc1's (measured: changed 30 to 44 %,
#     none 54 to 68 % of the written pages); the page cache (kind cache) holds at least 2 % of the written
#     pages. A tmpfs page is a file page on the LRU, not anonymous, so kpageflags makes it cache (the
#     snapshots' cache pages are the initramfs's files plus the build's 10,240 pages of files, to a few
#     pages); each round after the first rewrites 6,144 pages of files, truncating each first, and the
#     frames the allocator hands back are often the file's own (most recently freed first), cache in the
#     snapshots on both sides (the rest are changed kind: a file's frame on one side, free on the other).
#     Measured: 3.9 to 4.9 % in builds of two rounds, 12 % in an 8 s build; the bound is half the
#     lowest, since which frames come back is the allocator's.
#   - Long compilers (hvt.units=4 hvt.passes=400: each cc1 rewrites its heap 400 times, as optimisation
#     passes rewrite their IR, and lives about 2 s with four at once): cc1 is the top writing program,
#     its 1,024 heap pages written in every interval it lives through; the next, the agent, writes about 160
#     an interval. Measured: cc1 23 to 83 % of the written pages, the agent 2 %.
# one build: its subject is the guest agent on a build; attribute's figures are integration/attribute's, on both builds
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
need_qemu
[ "$(id -u)" = 0 ] || skip "needs root (the initramfs needs /dev/console)"

guest_linux

# build NAME "GUEST OPTIONS" CHECK OPTIONS...: one guest run of the build, traced, and its check.
build() {
	local name=$1 d=$T/$1 opts=$2 begin end
	shift 2
	mkdir -p "$d"
	timeout 300 "$QEMU" "${QEMU_L[@]}" -M pc -accel tcg -cpu max -m 512M -smp 1 -kernel "$kernel" \
		-initrd "$initrd" -no-reboot -nic none -display none -serial stdio -monitor none \
		-append "console=ttyS0 quiet panic=-1 hvt.run=build hvt.jobs=4 $opts hvt.owners=0.5" \
		-object "hvmtrace,id=t0,path=$d/vm.sock" -device virtio-serial-pci \
		-chardev "socket,id=owners0,path=$d/owners.sock,server=on,wait=off" \
		-device virtserialport,chardev=owners0,name=org.hvmtrace.owners.0 \
		2>"$d/qemu.err" </dev/null | "$TOOLS/stamp_lines" >"$d/console" &
	local qemu=$!
	BG_PIDS+=("$qemu")
	wait_socket "$d/vm.sock"
	wait_socket "$d/owners.sock"
	"$BIN/hvmtrace" record --attach "$d/vm.sock" --owners-port "$d/owners.sock" --interval 500ms \
		-o "$d/t.hvt" --jsonl "$d/t.jsonl" 2>"$d/record.err" || { cat "$d/record.err" "$d/qemu.err"; fail "record failed"; }
	wait "$qemu" 2>/dev/null
	echo "== $name build ($opts)"
	grep 'HVT \|hvmtrace-guest' "$d/console"
	grep -q 'HVT OWNERS agent' "$d/console" || { tail -20 "$d/console"; fail "the guest did not start the agent"; }
	grep -q 'HVT EXIT 0' "$d/console" || { tail -20 "$d/console"; fail "the build load did not finish"; }
	grep 'snapshots stored' "$d/record.err" || { cat "$d/record.err"; fail "record says nothing of the port"; }
	"$BIN/hvmtrace" attribute "$d/t.hvt" --json >"$d/process.json" || fail "attribute exited $?"
	"$BIN/hvmtrace" attribute "$d/t.hvt" --by kind --json >"$d/kind.json" || fail "attribute --by kind exited $?"
	begin=$(awk '/HVT PHASE build/ { print $1 }' "$d/console")
	end=$(awk '/HVT PHASE done/ { print $1 }' "$d/console")
	python3 "$ROOT/tests/tools/owners_build_check.py" "$d/process.json" "$d/kind.json" "$d/t.jsonl" "$begin" "$end" \
		"$@" || fail "the $name build's written pages are not attributed as the model says"
}

build short "hvt.seconds=3 hvt.min_rounds=2" --min-cache 0.02
echo "ok: with short compilers, the page cache holds 2 % of the build's written pages or more"
build long "hvt.seconds=3 hvt.units=4 hvt.passes=400" --top cc1
echo "ok: with long compilers, cc1 is the build's top writing program"
