#!/bin/bash
# Patched QEMU's side of the attach protocol where it races (issue 23, item 12), with a protocol-2 client of
# our own (tests/tools/attach_probe) on a running TCG guest:
#  - the guest stops (QMP quit) while the client asks back to back, so a request is nearly always in flight:
#    every "harvested" after "bye" must be the final one, and the final one must come (QEMU used to answer
#    the request in flight "final": false after bye and close: the guest's last interval was lost);
#  - a request out of order: QEMU answers error "protocol" and closes the connection (it used to keep it
#    open and answer nothing more, so every later tracer was told "busy" until the VM exited); a new tracer
#    then attaches and records.
# QUIT_RUNS stops (default 8), each after a different number of answered requests (what the client saw,
# not a time).
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
need_qemu
RUNS=${QUIT_RUNS:-8}

# start_qemu DIR: a running TCG guest (SeaBIOS finds nothing to boot and idles) with an hvmtrace object.
start_qemu() {
	mkdir -p "$1"
	timeout 300 "$QEMU" "${QEMU_L[@]}" -M pc -accel tcg -m 128M -nic none -display none -serial none \
		-monitor none -qmp "unix:$1/qmp.sock,server=on,wait=off" -object "hvmtrace,id=tr0,path=$1/vm.sock" \
		2>"$1/qemu.err" &
	QEMU_PID=$!
	BG_PIDS+=("$QEMU_PID")
	wait_socket "$1/vm.sock"
	wait_socket "$1/qmp.sock"
}

answered_at_least() { [ -f "$1" ] && [ "$(grep -c "^harvested" "$1")" -ge "$2" ]; }

in_flight=0
for k in $(seq 1 "$RUNS"); do
	d=$T/run$k
	start_qemu "$d"
	"$TOOLS/attach_probe" "$d/vm.sock" race >"$d/probe" 2>"$d/probe.err" &
	probe=$!
	BG_PIDS+=("$probe")
	want=$((5 * k))
	wait_until "the client did not get $want intervals" "$probe" answered_at_least "$d/probe" "$want"
	"$TOOLS/qmp" "$d/qmp.sock" '{"execute":"quit"}' >/dev/null || fail "QMP quit"
	wait "$probe" || fail "attach_probe failed: $(cat "$d/probe.err")"
	wait "$QEMU_PID" || true
	summary=$(tail -n 1 "$d/probe")
	echo "run $k: $summary; $(grep -A2 '^bye' "$d/probe" | tr '\n' ' ')"
	grep -q '^bye QEMU stops the VM: host-qmp-quit' "$d/probe" || fail "run $k: no bye naming the QMP quit"
	case $summary in
	*" nonfinal_after_bye=0 final=1 final_after_bye=1 end=eof") ;;
	*) fail "run $k: after bye QEMU must answer the final interval, and only that: $(cat "$d/probe")" ;;
	esac
	# The request on its way when bye came: bye sits between its harvest and its harvested.
	n=$(grep -c '^harvested' "$d/probe")
	[ "$(sed -n '/^bye/{n;p}' "$d/probe")" = "harvested $n final=1" ] && in_flight=$((in_flight + 1))
done
echo "ok: $RUNS stops, each ending with its final interval after bye ($in_flight with the final request answered right after bye)"

# A request out of order: error, then the connection closes, and the next tracer is welcome.
d=$T/badseq
start_qemu "$d"
"$TOOLS/attach_probe" "$d/vm.sock" bad-seq >"$d/probe" 2>"$d/probe.err" || fail "attach_probe: $(cat "$d/probe.err")"
cat "$d/probe"
assert_eq "after a request out of order" "summary error=protocol closed=yes" "$(tail -n 1 "$d/probe")"
"$BIN/hvmtrace" record --attach "$d/vm.sock" --interval 100ms --duration 1s -q -o "$d/t.hvt" 2>"$d/rec.err" ||
	fail "a tracer after the bad one could not record: $(cat "$d/rec.err")"
"$TOOLS/qmp" "$d/qmp.sock" '{"execute":"quit"}' >/dev/null
echo "ok: a request out of order ends that conversation; the next tracer records"
