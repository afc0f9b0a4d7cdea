#!/bin/bash
# Patched QEMU refuses mode ad where it cannot serve it, and says why. Under TCG its hello offers only
# dirty-log, `hvmtrace record --mode ad` gives up with exit 2 and no trace, and a peer that asks for ad
# anyway gets error "mode" naming TCG; the object then serves the next tracer in dirty-log mode. Under
# this host's KVM (no KVM_CAP_AD_HARVEST) the refusal names the missing capability instead; mode
# dirty-ring, asked of a QEMU not on KVM's dirty ring, is refused naming the option it needs.
# (Mode ad itself needs the patched KVM: the nested lab.)
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/qemu.bash"
need_qemu

# raw_attach SOCK MODE: speaks the attach protocol by hand (hvmtrace record never asks for a mode the
# hello does not offer): prints hello's accel and modes, sends attach MODE, prints the answer's type,
# code and message.
raw_attach() {
	/usr/bin/python3 - "$1" "$2" <<'EOF'
import json, socket, struct, sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])

def recv_exact(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            sys.exit("EOF from the VMM")
        b += c
    return b

def recv():
    (n,) = struct.unpack("<I", recv_exact(4))
    return json.loads(recv_exact(n))

hello = recv()
print("hello", hello["type"], hello["accel"], ",".join(hello["modes"]))
msg = json.dumps({"type": "attach", "protocol": 2, "mode": sys.argv[2], "cpu": -1,
                  "tracer": {"name": "raw_attach", "pid": 0}}).encode()
s.sendall(struct.pack("<I", len(msg)) + msg)
ans = recv()
print("answer", ans["type"], ans.get("code", ""), ans.get("message", ""))
EOF
}

# --- TCG -----------------------------------------------------------------------------------------------
timeout 300 "$QEMU" "${QEMU_L[@]}" -M pc -accel tcg -m 256M -S -nic none -display none -serial none \
	-monitor none -qmp "unix:$T/qmp.sock,server=on,wait=off" -object "hvmtrace,id=tr0,path=$T/vm.sock" \
	2>"$T/qemu.err" &
BG_PIDS+=($!)
wait_socket "$T/vm.sock"
wait_socket "$T/qmp.sock"

expect 2 "mode ad is not available (the VMM offers: dirty-log;" \
	"$BIN/hvmtrace" record --attach "$T/vm.sock" --mode ad -o "$T/ad.hvt"
[ ! -e "$T/ad.hvt" ] || fail "a refused attach left a trace file"

raw_attach "$T/vm.sock" ad >"$T/raw" || fail "raw attach: $(cat "$T/raw")"
cat "$T/raw"
assert_contains "$T/raw" "hello hello tcg dirty-log"
grep -q '^hello .*ad' "$T/raw" && fail "hello offers ad under TCG"
assert_contains "$T/raw" "answer error mode mode ad is not available: this VM runs under tcg, not KVM"
wait_contains "$T/qemu.err" "hvmtrace: tracer asked for mode ad: this VM runs under tcg, not KVM" "${BG_PIDS[-1]}"

"$TOOLS/qmp" "$T/qmp.sock" '{"execute":"query-hvmtrace"}' >"$T/q" || fail "query-hvmtrace"
grep -q '"attached":false' "$T/q" || fail "still attached after the refusal: $(cat "$T/q")"
"$BIN/hvmtrace" record --attach "$T/vm.sock" --duration 600ms --interval 200ms -o "$T/auto.hvt" \
	2>"$T/auto.err" || fail "auto mode after the refusal: $(cat "$T/auto.err")"
assert_contains "$T/auto.err" "in dirty-log mode"
echo "ok: TCG"

# --- KVM without the patch ------------------------------------------------------------------------------
if [ ! -c /dev/kvm ] || [ ! -w /dev/kvm ]; then
	echo "(no usable /dev/kvm: the KVM half is not run)"
	exit 0
fi
# KVM_CHECK_EXTENSION(KVM_CAP_AD_HARVEST) on /dev/kvm, asked without QEMU
cap=$(/usr/bin/python3 -c 'import fcntl, os; print(fcntl.ioctl(os.open("/dev/kvm", os.O_RDWR), 0xAE03, 0x10000))')
if [ "$cap" != 0 ]; then
	echo "(this host's KVM has the A/D patch: the refusal for a missing capability is not run)"
	exit 0
fi
timeout 300 "$QEMU" "${QEMU_L[@]}" -M pc -accel kvm -m 256M -S -nic none -display none -serial none \
	-monitor none -object "hvmtrace,id=tr1,path=$T/kvm.sock" 2>"$T/qemu-kvm.err" &
BG_PIDS+=($!)
wait_socket "$T/kvm.sock"
raw_attach "$T/kvm.sock" ad >"$T/raw-kvm" || fail "raw attach (KVM): $(cat "$T/raw-kvm") $(cat "$T/qemu-kvm.err")"
cat "$T/raw-kvm"
assert_contains "$T/raw-kvm" "hello hello kvm dirty-log"
grep -q '^hello .*ad' "$T/raw-kvm" && fail "hello offers ad on a KVM without KVM_CAP_AD_HARVEST"
assert_contains "$T/raw-kvm" "answer error mode mode ad is not available: this host's KVM lacks KVM_CAP_AD_HARVEST"
expect 2 "mode ad is not available (the VMM offers: dirty-log;" \
	"$BIN/hvmtrace" record --attach "$T/kvm.sock" --mode ad -o "$T/ad-kvm.hvt"
echo "ok: KVM without the A/D patch"
raw_attach "$T/kvm.sock" dirty-ring >"$T/raw-ring" || fail "raw attach (dirty-ring): $(cat "$T/raw-ring")"
cat "$T/raw-ring"
assert_contains "$T/raw-ring" "answer error mode mode dirty-ring is not available: this VM does not run on KVM's dirty ring (-accel kvm,dirty-ring-size=N); this QEMU offers dirty-log"
echo "ok: dirty-ring without the ring"
