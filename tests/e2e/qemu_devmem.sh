#!/bin/bash
# memory-backend-devmem under TCG, with a regular file standing in for /dev/mem: two extents given in
# non-ascending order back a 4 GiB pc guest (RAM 0-3 GiB and 4-5 GiB, so the block crosses the PCI hole).
# The guest (tests/guest/sigwriter.S) signs chosen guest-physical addresses; each signature must sit at
# the file offset the extent list predicts. Extents that overlap System RAM, cross a Reserved boundary,
# are unaligned, overlap each other or are claimed by a driver are refused with a message naming the
# extent (checked against a recorded /proc/iomem through x-iomem-path, which a character device refuses).
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
need_qemu
GiB=$((1 << 30))

# extent 0: file 3-5 GiB -> block 0-2 GiB; extent 1: file 1-3 GiB -> block 2-4 GiB
truncate -s $((5 * GiB)) "$T/mem.img"
ext0=$((3 * GiB)) ext1=$((1 * GiB))
devmem() { # extra JSON members
	printf '{"qom-type":"memory-backend-devmem","id":"m0","size":%d,"mem-path":"%s"%s}' $((4 * GiB)) "$1" "$2"
}
extents='"extents":[{"phys":'$ext0',"size":'$((2 * GiB))'},{"phys":'$ext1',"size":'$((2 * GiB))'}]'

rc=0
timeout 120 "$QEMU" "${QEMU_L[@]}" -M pc -accel tcg -cpu max -m 4G -machine memory-backend=m0 \
	-object "$(devmem "$T/mem.img" ",$extents")" -kernel "$BUILD/guest/sigwriter.elf" \
	-device isa-debug-exit,iobase=0xf4,iosize=4 -display none -nic none -serial none -monitor none \
	2>"$T/qemu.err" || rc=$?
[ $rc = 1 ] || { cat "$T/qemu.err"; fail "the guest did not finish (QEMU exit $rc, expected 1 from isa-debug-exit)"; }

# guest-physical -> block offset (pc: below 4 GiB as is, above 4 GiB after the 3 GiB of low RAM) -> file
file_offset() {
	local gpa=$1 off
	if [ "$gpa" -ge $((4 * GiB)) ]; then off=$((gpa - 4 * GiB + 3 * GiB)); else off=$gpa; fi
	if [ "$off" -lt $((2 * GiB)) ]; then echo $((ext0 + off)); else echo $((ext1 + off - 2 * GiB)); fi
}
for gpa in 0x00200000 0x3ffff000 0x40000000 0x7ffff000 0x80000000 0xbffff000 0x100000000 0x120000000 0x13ffff000; do
	gpa=$((gpa))
	off=$(file_offset $gpa)
	got=$(dd if="$T/mem.img" iflag=skip_bytes,count_bytes skip=$off count=16 bs=16 status=none | od -An -tx1 | tr -d ' \n')
	want=$(printf '4856545349470000%016x' $gpa | sed 's/\(..\)/\1 /g' | awk '{ for (i = 1; i <= 8; i++) printf "%s", $i; for (i = 16; i >= 9; i--) printf "%s", $i }')
	[ "$got" = "$want" ] || fail "gpa $(printf 0x%x $gpa): expected its signature at file offset $(printf 0x%x $off), found $got"
	echo "ok: gpa $(printf 0x%x $gpa) -> file offset $(printf 0x%x $off)"
done
# ... and nowhere else: every "HVTSIG" in the file is one of those, or the pattern inside the payload's own
# code (loaded at guest-physical 1 MiB)
expected=" $(for gpa in 0x00200000 0x3ffff000 0x40000000 0x7ffff000 0x80000000 0xbffff000 0x100000000 0x120000000 0x13ffff000; do
	file_offset $((gpa)); done | tr '\n' ' ')"
code=$(file_offset $((0x100000)))
n=0
for off in $(grep -a -b -o 'HVTSIG' "$T/mem.img" | cut -d: -f1); do
	n=$((n + 1))
	case "$expected" in *" $off "*) continue ;; esac
	[ "$off" -ge "$code" ] && [ "$off" -lt $((code + 4096)) ] && continue
	fail "a signature at file offset $(printf 0x%x "$off") that no guest address maps to"
done
assert_eq "signatures in the file (9 written + 1 in the payload's code)" 10 "$n"

# --- refusals, against a recorded /proc/iomem (as root prints it)
cat >"$T/iomem" <<'EOT'
00000000-00000fff : Reserved
00001000-0009fbff : System RAM
000f0000-000fffff : Reserved
  000f0000-000fffff : System ROM
00100000-3fffffff : System RAM
  01000000-01ffffff : Kernel code
40000000-7fffffff : Reserved
80000000-bfffffff : Reserved
  a0000000-a7ffffff : dax0.0
c0000000-febfffff : PCI Bus 0000:00
100000000-13fffffff : System RAM
EOT
refuse() { # what members-json expected-text [size] (size defaults to the extents' total)
	local rc=0 size=${4:-}
	[ -n "$size" ] || size=$(grep -o '"size":[0-9]*' <<<"$2" | awk -F: '{ s += $2 } END { print s }')
	timeout 60 "$QEMU" "${QEMU_L[@]}" -M pc -accel tcg -m 1G -machine memory-backend=m0 \
		-object "$(printf '{"qom-type":"memory-backend-devmem","id":"m0","size":%d,"mem-path":"%s","x-iomem-path":"%s",%s}' \
			"$size" "$T/mem.img" "$T/iomem" "$2")" -display none -nic none -S 2>"$T/err" </dev/null || rc=$?
	[ $rc != 0 ] || fail "$1: QEMU accepted it"
	assert_contains "$T/err" "$3"
	echo "ok: $1 refused: $(head -c 300 "$T/err")"
}
ok_ext='{"phys":1073741824,"size":536870912}'
refuse "System RAM" '"extents":[{"phys":1048576,"size":1073741824}]' "extent 0 {phys 0x100000, size 0x40000000} cannot be mapped: overlaps System RAM"
refuse "crossing" '"extents":[{"phys":1879048192,"size":536870912}]' "crosses the boundary of Reserved"
refuse "busy" '"extents":[{"phys":2415919104,"size":536870912}]' "busy: 'dax0.0'"
refuse "unaligned" '"extents":['"$ok_ext"',{"phys":1610614784,"size":4096}]' "extent 1 {phys 0x60000800, size 0x1000}: phys and size must be"
refuse "unaligned size" '"extents":[{"phys":1073741824,"size":1000}]' "extent 0 {phys 0x40000000, size 0x3e8}: phys and size must be"
refuse "overlap" '"extents":['"$ok_ext"',{"phys":1342177280,"size":536870912}]' "extent 0 {phys 0x40000000, size 0x20000000} overlaps extent 1"
refuse "PCI hole" '"extents":[{"phys":3221225472,"size":4096}]' "not inside a Reserved resource"
rc=0
timeout 60 "$QEMU" "${QEMU_L[@]}" -M pc -accel tcg -m 512M -machine memory-backend=m0 \
	-object '{"qom-type":"memory-backend-devmem","id":"m0","size":536870912,"mem-path":"/dev/zero","x-iomem-path":"'"$T/iomem"'","extents":['"$ok_ext"']}' \
	-display none -nic none -S 2>"$T/err" </dev/null || rc=$?
[ $rc != 0 ] || fail "x-iomem-path was honoured for a character device"
assert_contains "$T/err" "x-iomem-path is for tests with a regular file"
echo ok

# --- extents from a channel map: chanmap + channels (+ size) take the channels' ranges in the order given;
# query-memdev and the tracer's layout show them with their channels.
cat >"$T/chanmap.json" <<'EOT'
{"schema": "hvmtrace-chanmap", "version": 1, "sockets": 1, "source": "test fixture (not a probe)",
 "channels": [
  {"id": "s0.mc0.ch0", "socket": 0, "controller": 0, "channel": 0, "pmu": "uncore_imc_0",
   "ranges": [{"start": "0x40000000", "size": "0x20000000"}, {"start": "0xc0000000", "size": "0x20000000"}]},
  {"id": "s0.mc0.ch1", "socket": 0, "controller": 0, "channel": 1, "pmu": "uncore_imc_1",
   "ranges": [{"start": "0x100000000", "size": "0x40000000"}]}]}
EOT
"$QEMU" "${QEMU_L[@]}" -M pc -accel tcg -m 1G -S -machine memory-backend=m0 -nic none -display none -serial none \
	-monitor none -qmp "unix:$T/qmp.sock,server=on,wait=off" -object "hvmtrace,id=t0,path=$T/vm.sock" \
	-object '{"qom-type":"memory-backend-devmem","id":"m0","size":1073741824,"mem-path":"'"$T/mem.img"'","chanmap":"'"$T/chanmap.json"'","channels":["s0.mc0.ch1","s0.mc0.ch0"]}' \
	2>"$T/qemu2.err" &
BG_PIDS+=($!)
wait_socket "$T/qmp.sock"
wait_socket "$T/vm.sock"
"$TOOLS/qmp" "$T/qmp.sock" '{"execute":"query-memdev"}' >"$T/memdev" || fail "query-memdev: $(cat "$T/memdev")"
grep -o '"extents":\[[^]]*\]' "$T/memdev" | grep '"phys":4294967296' | grep '"size":1073741824' |
	grep -q '"channel":"s0.mc0.ch1"' ||
	fail "query-memdev does not show the channel's extent: $(cat "$T/memdev")"
"$BIN/hvmtrace" record --attach "$T/vm.sock" --duration 300ms --interval 100ms -o "$T/c.hvt" 2>/dev/null || fail "record"
"$BIN/hvmtrace" export --meta "$T/c.hvt" | tr -d ' \n' >"$T/meta"
grep -q '"backing":"devmem"' "$T/meta" && grep -q '"hpa":4294967296' "$T/meta" && grep -q '"channel":"s0.mc0.ch1"' "$T/meta" ||
	fail "the tracer's layout lacks the devmem extents and their channel: $(cat "$T/meta")"
echo "ok: chanmap extents in query-memdev and in the trace layout"
refuse "chanmap short" '"chanmap":"'"$T/chanmap.json"'","channels":["s0.mc0.ch0"]' "the channels given hold 0x40000000 bytes" 2147483648
refuse "chanmap unknown channel" '"chanmap":"'"$T/chanmap.json"'","channels":["s1.mc0.ch0"]' "no channel 's1.mc0.ch0'" 4096
