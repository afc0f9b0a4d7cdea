#!/bin/bash
# The guest agent's snapshots reach the host over QEMU's virtio-serial port (docs/attribution.md): a Debian
# Linux guest under TCG runs the array program with hvt.owners=1 (scripts/guest-workloads.sh: hvmtrace-guest
# --every 1 to the port org.hvmtrace.owners.0, and a snapshot at once when the arrays are in place), QEMU
# serves the port as a unix socket, and hvmtrace record --owners-port stores the snapshots in the trace it
# records. Every snapshot the agent took during the copy phase (by the guest's clock, which the PHASE lines
# carry) gives each page of c (the program prints them from its pagemap) to the `array` process alone, as
# anonymous memory; and `hvmtrace attribute`, by the trace's own snapshots, makes `array` the top writer of
# every copy interval, with at least c's pages.
# one build: its subject is the guest agent and QEMU's port; attribute's figures are integration/attribute's, on both builds
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
need_qemu
[ "$(id -u)" = 0 ] || skip "needs root (the initramfs needs /dev/console)"
TOOLS_PY=$ROOT/tests/tools
SIZE=$((32 << 20)) PHASE=5

guest_linux

timeout 300 "$QEMU" "${QEMU_L[@]}" -M pc -accel tcg -cpu max -m 512M -smp 1 -kernel "$kernel" -initrd "$initrd" \
	-append "console=ttyS0 quiet panic=-1 hvt.size=$SIZE hvt.phase=$PHASE hvt.owners=1" -no-reboot -nic none \
	-display none -serial stdio -monitor none -object "hvmtrace,id=t0,path=$T/vm.sock" \
	-device virtio-serial-pci -chardev "socket,id=owners0,path=$T/owners.sock,server=on,wait=off" \
	-device virtserialport,chardev=owners0,name=org.hvmtrace.owners.0 \
	2>"$T/qemu.err" </dev/null | "$TOOLS/stamp_lines" >"$T/console" &
QEMU_PID=$!
BG_PIDS+=("$QEMU_PID")
wait_socket "$T/vm.sock"
wait_socket "$T/owners.sock"

"$BIN/hvmtrace" record --attach "$T/vm.sock" --owners-port "$T/owners.sock" --interval 1s -o "$T/t.hvt" 2>"$T/record.err" ||
	{ cat "$T/record.err" "$T/qemu.err"; fail "record failed"; }
wait "$QEMU_PID" 2>/dev/null
grep 'HVT OWNERS\|HVT PHASE\|hvmtrace-guest' "$T/console"
grep -q 'HVT OWNERS agent' "$T/console" || { tail -20 "$T/console"; fail "the guest did not start the agent"; }
grep -q 'HVT EXIT 0' "$T/console" || { tail -20 "$T/console"; fail "the array program did not finish"; }
grep 'snapshots stored' "$T/record.err" || { cat "$T/record.err"; fail "record says nothing of the port's snapshots"; }
mkdir -p "$T/snaps"
python3 "$TOOLS_PY/trace_owners.py" "$T/t.hvt" "$T/snaps" >/dev/null || fail "the trace's OWNERS records are not as stored"
for n in $(ls "$T/snaps" | sort -n); do cat "$T/snaps/$n"; done >"$T/owners.bin"
[ -s "$T/owners.bin" ] || fail "no snapshot came over the port into the trace"

# The copy phase's intervals, by the host's clock (check_array: each holds c; the agent's own writes are
# the extra pages the slack allows).
"$TOOLS/check_array" --trace "$T/t.hvt" --console "$T/console" --min-intervals 2 --slack 0.5 >"$T/check" ||
	{ cat "$T/check"; fail "written sets do not match the array program"; }
copy_seqs=$(awk '/\(copy\)/ { print $2 }' "$T/check" | tr '\n' ' ')

# The snapshots taken during the copy, by the guest's clock: each gives every page of c to array alone.
python3 "$TOOLS_PY/owners_array_check.py" "$T/owners.bin" "$T/console" >/dev/null ||
	fail "c is not attributed to array"
echo "ok: every copy-phase snapshot in the trace gives c's pages to array"

"$BIN/hvmtrace" attribute "$T/t.hvt" --json >"$T/attr.json" ||
	fail "attribute exited $?"
cpages=$(awk '/HVT C-PAGES/ { print $NF; exit }' "$T/console")
copy_at=$(awk '/HVT PHASE copy/ { print $NF; exit }' "$T/console") # the guest's CLOCK_REALTIME, the snapshots' clock
# An interval is attributed by the snapshots around it (docs/attribution.md): one taken before the arrays
# were in place names c's pages free or the kernel's, so in the copy interval after it they count as
# changed owner, never array's; once every snapshot around an interval is of the copy, they are array's.
python3 - "$T/attr.json" "$cpages" "$copy_at" $copy_seqs <<'PY' || fail "array is not the top writer of the copy intervals"
import json, sys
a = json.load(open(sys.argv[1]))
cpages, copy_at, seqs = int(sys.argv[2]), int(sys.argv[3]), {int(s) for s in sys.argv[4:]}
names = {o["id"]: o["name"] for o in a["owners"]}
snap_t = [s["time_ns"] for s in a["snapshots"]]
bad = whole = 0
for iv in a["intervals"]:
    if iv["seq"] not in seqs:
        continue
    lo, hi = iv["snapshots"]
    of_copy = all(snap_t[i] >= copy_at for i in range(lo, hi + 1))
    top = max(iv["owners"], key=lambda o: o["written"])
    array = sum(o["written"] for o in iv["owners"] if names[o["id"]] == "array")
    print(f"interval {iv['seq']}: snapshots {lo}-{hi}{' (of the copy)' if of_copy else ''}: top writer "
          f"{names[top['id']]} ({top['written']} pages), array {array}, changed owner {iv['changed']['written']}, c {cpages}")
    if of_copy:
        whole += 1
        bad += names[top["id"]] != "array" or array < cpages
    else:  # c's pages are array's or changed owner's, nobody else's
        bad += array + iv["changed"]["written"] < cpages
sys.exit(1 if bad or whole < 2 else 0)
PY
echo "ok: array is the top writer of copy intervals $copy_seqs"
