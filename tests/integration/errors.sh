#!/bin/bash
# Bad input gets a clear error and a clean exit code, and loses nothing recorded before: malformed and
# truncated traces, a VMM that disconnects mid-interval, a socket that is not a VMM, a wrong protocol
# version, a busy VMM, a peer of another uid, a socket we may not open.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"

fake() { next_fakepeer "$T/f.sock" "$@"; } # fakepeer in the given mode on $T/f.sock

# --- a VMM that vanishes in the middle of an interval: the trace keeps the 3 it answered, closed properly.
fake disconnect 3
expect 1 "closed the connection" "$HVT" record --attach "$T/f.sock" --interval 100ms -o "$T/d.hvt" --jsonl "$T/d.jsonl"
assert_contains "$T/err" "during harvest 4"
"$HVT" export --jsonl "$T/d.export" "$T/d.hvt" || fail "export of the closed trace failed"
cmp "$T/d.export" "$T/d.jsonl" || fail "trace and JSON Lines differ"
assert_eq "intervals kept" 3 "$(wc -l <"$T/d.export")"
for i in 1 2 3; do
	sed -n "${i}p" "$T/d.export" | grep -q "\"written\":\[\[$i,1\]\]" || fail "interval $i lost its page"
done

# --- sockets that are not a usable VMM
fake garbage
expect 2 "not an hvmtrace VMM socket" "$HVT" record --attach "$T/f.sock" -o "$T/x.hvt"
fake silent
expect 2 "no hello within" "$HVT" record --attach "$T/f.sock" -o "$T/x.hvt"
fake version
expect 2 "speaks attach protocol 1" "$HVT" record --attach "$T/f.sock" -o "$T/x.hvt"
wait "$FAKE_PID" || fail "the tracer did not tell the VMM why it left: $(cat "$T/f.out")"
fake busy
expect 2 "busy" "$HVT" record --attach "$T/f.sock" -o "$T/x.hvt"
expect 2 "$T/none.sock" "$HVT" record --attach "$T/none.sock" -o "$T/x.hvt"
[ -e "$T/x.hvt" ] && fail "a failed attach left a trace file behind"

# --- peers are authenticated: a VMM socket owned by another uid is refused, and a tracer of another uid
# cannot use ours.
if id nobody >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	chmod 1777 "$T"
	fake as-uid "$(id -u nobody)" busy
	expect 2 "uid $(id -u nobody)" "$HVT" record --attach "$T/f.sock" -o "$T/x.hvt"
	kill "$FAKE_PID" 2>/dev/null
	fake busy
	expect 2 "Permission denied" setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$HVT" record --attach "$T/f.sock" -o /tmp/never.hvt
	kill "$FAKE_PID" 2>/dev/null
	chmod 755 "$T"
else
	echo "note: peer-uid checks need root and a 'nobody' user; not run"
fi

# --- malformed and truncated traces
"$HVT" export --jsonl "$T/full.jsonl" "$T/d.hvt" || fail "export failed"
: >"$T/empty.hvt"
expect 2 "$T/empty.hvt" "$HVT" export "$T/empty.hvt"
head -c 5000 /dev/urandom >"$T/garbage.hvt"
expect 2 "$T/garbage.hvt" "$HVT" export "$T/garbage.hvt"
expect 2 "$T/missing.hvt" "$HVT" report "$T/missing.hvt"
cp "$T/d.hvt" "$T/version.hvt"
printf '\x63' | dd of="$T/version.hvt" bs=1 seek=8 conv=notrunc status=none
expect 2 "version" "$HVT" export "$T/version.hvt"

size=$(stat -c %s "$T/d.hvt")
prev=0
for cut in 100 300 600 900 1200 1500 2000 2500 3000 $((size - 33)) $((size - 1)); do
	[ "$cut" -lt "$size" ] || continue
	head -c "$cut" "$T/d.hvt" >"$T/cut.hvt"
	rc=0
	"$HVT" export --jsonl "$T/cut.jsonl" "$T/cut.hvt" 2>"$T/err" || rc=$?
	case $rc in
	2) assert_contains "$T/err" "$T/cut.hvt" ;; # cut inside the header or metadata: not a trace yet
	3) assert_contains "$T/err" "incomplete trace" ;;
	*) fail "export of a trace cut at $cut exited $rc" ;;
	esac
	n=$([ -f "$T/cut.jsonl" ] && wc -l <"$T/cut.jsonl" || echo 0)
	[ $rc = 2 ] && n=0
	head -n "$n" "$T/full.jsonl" | cmp -s - <([ $rc = 2 ] || cat "$T/cut.jsonl") || fail "cut at $cut: recovered intervals differ"
	[ "$n" -ge "$prev" ] || fail "cut at $cut recovered fewer intervals ($n) than a shorter cut ($prev)"
	prev=$n
	rm -f "$T/cut.jsonl"
	echo "ok: cut at $cut of $size bytes -> exit $rc, $n intervals"
done
[ "$prev" -ge 2 ] || fail "no cut recovered intervals: the cut points are wrong for this trace size"

# A flipped byte inside the last interval record: everything before it survives, and report says so.
cp "$T/d.hvt" "$T/flip.hvt"
off=$((size - 200))
printf '\xff' | dd of="$T/flip.hvt" bs=1 seek=$off conv=notrunc status=none
rc=0
"$HVT" export --jsonl "$T/flip.jsonl" "$T/flip.hvt" 2>"$T/err" || rc=$?
[ $rc = 3 ] || fail "a corrupt record gave exit $rc, expected 3"
n=$(wc -l <"$T/flip.jsonl")
head -n "$n" "$T/full.jsonl" | cmp -s - "$T/flip.jsonl" || fail "intervals before the corrupt record changed"
[ "$n" -ge 1 ] || fail "nothing recovered before the corrupt record"
expect 3 "incomplete trace" "$HVT" report "$T/flip.hvt"
echo "ok"
