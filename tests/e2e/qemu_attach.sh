#!/bin/bash
# The hvmtrace object of patched QEMU as an attach-protocol peer (paused guest, TCG): the hello describes
# guest RAM around the PCI hole; a second tracer is told "busy"; while a tracer is attached migration is
# blocked with the object's reason (a second tracer, after retrying "busy" for 3 s, gives up); after the tracer says bye the blocker is gone (migration runs) and
# query-hvmtrace reports what was harvested.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
need_qemu

timeout 300 "$QEMU" "${QEMU_L[@]}" -M pc -accel tcg -m 4G -S -nic none -display none -serial none -monitor none \
	-qmp "unix:$T/qmp.sock,server=on,wait=off" -object "hvmtrace,id=tr0,path=$T/vm.sock,cpu=0" 2>"$T/qemu.err" &
QEMU_PID=$!
BG_PIDS+=("$QEMU_PID")
wait_socket "$T/vm.sock"
wait_socket "$T/qmp.sock"
[ "$(stat -c %a "$T/vm.sock")" = 600 ] || fail "the socket is not mode 0600"

"$BIN/hvmtrace" record --attach "$T/vm.sock" --interval 200ms --duration 6s -o "$T/t.hvt" 2>"$T/record.err" &
REC=$!
wait_contains "$T/record.err" "attached to VM" $REC
qpid=$(pgrep -P "$QEMU_PID" -f qemu-system)
assert_contains "$T/record.err" "(pid $qpid, QEMU 10.0"

expect 2 "busy" "$BIN/hvmtrace" record --attach "$T/vm.sock" --duration 1s -o "$T/x.hvt"
rc=0
"$TOOLS/qmp" "$T/qmp.sock" '{"execute":"migrate","arguments":{"uri":"exec:cat >/dev/null"}}' >"$T/q" || rc=$?
[ $rc = 1 ] && grep -q "hvmtrace: a tracer is attached to 'tr0'" "$T/q" || fail "migrate was not blocked: $(cat "$T/q")"
echo "ok: $(cat "$T/q")"

wait $REC || fail "record failed: $(cat "$T/record.err")"
"$BIN/hvmtrace" export --meta "$T/t.hvt" >"$T/meta.json" || fail "export --meta"
# RAM below the hole (3 GiB at 0) and above it (1 GiB at 4 GiB), both of pc.ram
grep -q '"gpa": 4294967296' "$T/meta.json" && grep -q '"size": 1073741824' "$T/meta.json" &&
	grep -q '"name": "pc.ram"' "$T/meta.json" || { cat "$T/meta.json"; fail "the layout does not show RAM around the PCI hole"; }
"$BIN/hvmtrace" report --totals-only "$T/t.hvt" | tee "$T/report"
# 30 deadlines in 6 s at 200 ms, each harvested or, on a busy machine, counted missed in the interval
# that spans it.
n=$(awk '$1 == "intervals" { print $2; exit }' "$T/report")
missed=$(sed -n 's/^ *intervals .*, \([0-9]*\) deadlines\{0,1\} missed).*/\1/p' "$T/report")
[ $((n + ${missed:-0})) = 30 ] || fail "expected 30 deadlines of 200 ms in 6 s, got $n intervals and ${missed:-0} missed"

"$TOOLS/qmp" "$T/qmp.sock" '{"execute":"query-hvmtrace"}' >"$T/q" || fail "query-hvmtrace"
grep -q '"attached":false' "$T/q" && grep -q "\"intervals\":$n" "$T/q" || fail "query-hvmtrace after detach: $(cat "$T/q")"
"$TOOLS/qmp" "$T/qmp.sock" '{"execute":"migrate","arguments":{"uri":"exec:cat >/dev/null"}}' >"$T/q" ||
	fail "migration still blocked after the tracer left: $(cat "$T/q")"
echo "ok: migration allowed after detach"
