#!/bin/bash
# The main job on a fresh Debian 12 machine: install what is needed, build hvmtrace and patched QEMU 10.0
# (cached: cold ~10 min, then seconds), boot the built-in Linux guest under QEMU (TCG) running the seed
# paper's array program (copy c[i]=a[i], then add c[i]=a[i]+b[i]), trace it with hvmtrace record at 1 s
# intervals through QEMU's hvmtrace object, print the written pages per second, and leave the trace and
# its exports and pictures in demo-out/: heatmap.png (written pages by address and time), bw.png (DRAM
# bandwidth, where the trace has it; not under TCG) and report.html (the interactive memory display).
# The guest runs the guest agent, hvmtrace-guest (docs/attribution.md), which sends snapshots of who owns
# which guest page over a virtio-serial port that record stores in the trace.
#   OUT=DIR      output directory (default demo-out)
#   PHASE=SECS   length of each phase (default 8)
#   SIZE=BYTES   size of each array (default 32 MiB)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-demo-out}
PHASE=${PHASE:-8}
SIZE=${SIZE:-$((32 << 20))}

if [ "$(id -u)" != 0 ]; then
	echo "demo: run as root (it installs packages): sudo $0" >&2
	exit 1
fi
scripts/install-deps.sh
[ -f config.mk ] || ./configure >/dev/null
make -s all build/guest/array build/guest/buildload
qemu_dir=$(scripts/build-qemu.sh)
{ read -r kernel; read -r initrd; } < <(scripts/guest-workloads.sh build)

mkdir -p "$OUT"
rm -f "$OUT/vm.sock" "$OUT/owners.sock"
# The guest agent's port: QEMU serves it as a unix socket, record connects to it.
owners_qemu=(-device virtio-serial-pci -chardev "socket,id=owners0,path=$OUT/owners.sock,server=on,wait=off"
	-device virtserialport,chardev=owners0,name=org.hvmtrace.owners.0)
echo "== booting the guest (Debian Linux under QEMU TCG, patched QEMU in $qemu_dir)"
"$qemu_dir/qemu-system-x86_64" -L "$qemu_dir/optionrom" -L /usr/share/seabios -M pc -accel tcg -cpu max \
	-m 512M -kernel "$kernel" -initrd "$initrd" -append "console=ttyS0 quiet panic=-1 hvt.size=$SIZE hvt.phase=$PHASE hvt.owners=1" \
	-no-reboot -nic none -display none -monitor none -serial "file:$OUT/console.log" \
	-name demo -object "hvmtrace,id=t0,path=$OUT/vm.sock" "${owners_qemu[@]}" 2>"$OUT/qemu.log" &
qemu=$!
trap 'kill $qemu 2>/dev/null || true' EXIT
for _ in $(seq 200); do [ -S "$OUT/vm.sock" ] && [ -S "$OUT/owners.sock" ] && break; sleep 0.05; done

echo "== tracing it (array of $SIZE bytes: copy for ${PHASE}s, then add for ${PHASE}s)"
build/bin/hvmtrace record --attach "$OUT/vm.sock" --interval 1s -o "$OUT/demo.hvt" --owners-port "$OUT/owners.sock"
wait $qemu || true
grep -q 'HVT EXIT 0' "$OUT/console.log" || echo "demo: warning: the guest's array program did not report success (see $OUT/console.log)" >&2
echo
echo "== written pages per second (hvmtrace report $OUT/demo.hvt); c has $((SIZE / 4096)) pages"
build/bin/hvmtrace report "$OUT/demo.hvt"
echo
echo "== who wrote them: the guest's top writing processes per second (hvmtrace report --by process, by the"
echo "   guest agent's snapshots in the trace; array's copy and add write c's pages every second)"
build/bin/hvmtrace report "$OUT/demo.hvt" --by process --top 3 >"$OUT/owners.txt" &&
	sed -n '/^Pages by process/,$p' "$OUT/owners.txt" || echo "demo: warning: no attribution (see above)" >&2
build/bin/hvmtrace export --jsonl "$OUT/demo.jsonl" --csv "$OUT/demo.csv" "$OUT/demo.hvt"
build/bin/hvmtrace plot heatmap "$OUT/demo.hvt" -o "$OUT/heatmap.png" >/dev/null
pictures="$OUT/heatmap.png (written pages by guest-physical address and time)"
if [ "$(build/bin/hvmtrace export --meta "$OUT/demo.hvt" | jq .meta.bandwidth_available)" = true ]; then
	build/bin/hvmtrace plot bw "$OUT/demo.hvt" -o "$OUT/bw.png" >/dev/null
	pictures="$pictures, $OUT/bw.png (DRAM read and write bandwidth)"
else
	rm -f "$OUT/bw.png"
	pictures="$pictures (no bw.png: this trace has no DRAM bandwidth)"
fi
build/bin/hvmtrace report "$OUT/demo.hvt" --html "$OUT/report.html" >/dev/null
echo
echo "== wrote $OUT/demo.hvt (trace), $OUT/demo.jsonl and $OUT/demo.csv (exports), $OUT/console.log (guest console)"
echo "== pictures: $pictures"
echo "== interactive memory display: $OUT/report.html (open it in a browser; it needs no network)"
