#!/bin/bash
# The chanmap reserve → reboot → verify round trip, for real, in a Linux guest: Debian's kernel (PVH
# vmlinux, scripts/guest-kernel.sh) boots under QEMU TCG with 3 GiB (RAM at 0-3 GiB, docs/hardware-notes.md §8.3)
# and a busybox initramfs holding this build's chanmap and a MODEL channel map of that guest
# (tests/fixtures/chanmap/tcg-3g.json: 1 MiB-2 GiB one channel, 2-3 GiB another; written by hand, not
# probed).
# Boot 1: `chanmap reserve` reads the guest's real /sys/firmware/memmap and /proc/iomem, prints memmap= for
# 512 MiB of the 2-3 GiB channel, and refuses the whole channel (its top 128 KiB is firmware-reserved: a
# System RAM hole), a size that crosses into the next channel, and the channel holding the kernel.
# Boot 2, with exactly the printed argument: `chanmap verify --write-test` must pass (Reserved in
# /proc/iomem, not busy, mapped through the real /dev/mem, pages written and read back), and a range over
# System RAM must fail. Warm: two boots of ~3-5 s each.
# one build: its subject is the guest kernel honouring the reservation (a TCG boot of minutes); chanmap
# reserve and verify themselves run against both builds in chanmap.sh.
source "$(dirname "$0")/../lib/assert.bash"
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 missing (scripts/install-deps.sh installs qemu-system-x86)"
[ -x /bin/busybox ] || skip "busybox-static missing (scripts/install-deps.sh installs it)"
command -v cpio >/dev/null || skip "cpio missing (scripts/install-deps.sh installs it)"
MAP=tests/fixtures/chanmap/tcg-3g.json

kdir=$(scripts/guest-kernel.sh -q 6.1) || fail "cannot get the guest kernel (scripts/guest-kernel.sh 6.1)"

# The guest's /init: boot 1 (no memmap= on the command line) reserves, boot 2 verifies. Each command's
# output is framed by markers so the host can pick it out of the console.
cat >"$T/init" <<'EOF'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo # the markers below must start a line: the firmware leaves the console mid-line
run() { # NAME COMMAND...
	name=$1
	shift
	echo "@@BEGIN $name"
	"$@" 2>&1
	echo "@@END $name rc=$?"
}
export ASAN_OPTIONS=detect_leaks=0
if grep -q 'memmap=' /proc/cmdline; then
	run cmdline cat /proc/cmdline
	run verify /bin/chanmap verify -m /chanmap.json --write-test
	run verify-ram /bin/chanmap verify --range '256M$0x40000000'
	run iomem grep -i reserved /proc/iomem
else
	run reserve /bin/chanmap reserve -m /chanmap.json --channel s0.mc0.ch1 --size 512M
	run reserve-hole /bin/chanmap reserve -m /chanmap.json --channel s0.mc0.ch1
	run reserve-cross /bin/chanmap reserve -m /chanmap.json --channel s0.mc0.ch1 --size 2G
	run reserve-kernel /bin/chanmap reserve -m /chanmap.json --channel s0.mc0.ch0 --size 1G
fi
echo "@@DONE"
poweroff -f
EOF
initrd=$(scripts/mkinitramfs.sh -q -b "$BIN/chanmap" -f "$MAP:/chanmap.json" "$T/init") ||
	fail "mkinitramfs failed"

boot() { # LOG APPEND: boots the guest, console to LOG
	local t0
	t0=$(date +%s%N)
	timeout 120 qemu-system-x86_64 -accel tcg -m 3072 -smp 1 -nographic -no-reboot -nodefaults -serial stdio \
		-kernel "$kdir/vmlinux" -initrd "$initrd" -append "console=ttyS0 quiet panic=-1 $2" \
		</dev/null >"$1" 2>&1 || fail "qemu failed or timed out: $(tail -5 "$1")"
	tr -d '\r' <"$1" >"$1.txt"
	grep -q '^@@DONE' "$1.txt" || fail "the guest did not finish: $(tail -20 "$1.txt")"
	echo "boot took $((($(date +%s%N) - t0) / 1000000)) ms"
}
# section LOG NAME: the output of one guest command; rc LOG NAME: its exit status
section() { sed -n "/^@@BEGIN $2\$/,/^@@END $2 /p" "$1" | sed '1d;$d'; }
rc() { sed -n "s/^@@END $2 rc=//p" "$1"; }

boot "$T/boot1" ""
L=$T/boot1.txt
section "$L" reserve
assert_eq "reserve exit status" 0 "$(rc "$L" reserve)"
arg=$(section "$L" reserve | head -1)
assert_eq "memmap argument" 'memmap=512M$0x80000000' "$arg"
for case in reserve-hole reserve-cross reserve-kernel; do
	assert_eq "$case exit status" 1 "$(rc "$L" "$case")"
	echo "refused ($case): $(section "$L" "$case" | head -2 | tr '\n' ' ')"
done
section "$L" reserve-hole | grep -q "is not all RAM" || fail "the firmware hole at the channel's top was not named"
section "$L" reserve-cross | grep -q "would cross into another channel" || fail "crossing channels was not refused"
section "$L" reserve-kernel | grep -qi "kernel" || fail "reserving over the kernel image was not refused"

boot "$T/boot2" "$arg"
L=$T/boot2.txt
section "$L" verify
section "$L" cmdline | grep -qF " $arg" || fail "the guest did not boot with $arg: $(section "$L" cmdline)"
assert_eq "verify exit status" 0 "$(rc "$L" verify)"
section "$L" verify | grep -q 'ok   memmap=512M\$0x80000000: Reserved, not busy, mapped through /dev/mem' ||
	fail "verify did not report the reservation as good"
section "$L" verify | grep -q 'pages written and read back, channel s0.mc0.ch1' ||
	fail "verify did not write through /dev/mem or did not place the range in channel s0.mc0.ch1"
section "$L" iomem | grep -q '^80000000-9fffffff : Reserved' || fail "/proc/iomem has no Reserved 80000000-9fffffff"
[ "$(rc "$L" verify-ram)" != 0 ] || fail "verify passed a range of System RAM"
section "$L" verify-ram | grep -q "overlaps System RAM" || fail "verify did not say the range is System RAM"
echo "ok: $arg reserved, verified in the guest"
