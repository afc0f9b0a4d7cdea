#!/bin/bash
# record --owners-port (docs/attribution.md): snapshots written by hvmtrace-guest on this host reach the trace
# byte for byte. tests/tools/owners_serve serves the port as QEMU's chardev would, from inside the VMM's
# process (it listens, then becomes tests/tools/fakepeer, whose one 32 GiB slot holds this host's PFNs), and
# sends three snapshots, closing the connection between the second and the third (record connects again).
# The trace's OWNERS records, read by tests/tools/trace_owners.py from the bytes, are the three snapshots, in
# order, each after the interval it says; attribute (without --owners), report and export read the trace.
# A port whose peer is not the VMM is refused with a sentence, and recording goes on without it; so does a
# port that never connects. A tracer killed (SIGKILL) once two snapshots are in the trace leaves them
# readable, byte for byte, with the intervals before them.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
command -v python3 >/dev/null || skip "needs python3"
[ -r /proc/kpageflags ] || skip "hvmtrace-guest needs /proc/kpageflags (root, CONFIG_PROC_PAGE_MONITOR)"

for i in 1 2 3; do
	"$BIN/hvmtrace-guest" -o "$T/s$i.snap" 2>"$T/guest.err" || fail "hvmtrace-guest: $(cat "$T/guest.err")"
done
cmp -s "$T/s1.snap" "$T/s2.snap" && fail "two snapshots are the same bytes (a test that cannot tell them apart)"

# ---- three snapshots, the port closed and opened again between the second and the third ----
"$TOOLS/owners_serve" "$T/own.sock" --follow "$T/rec.jsonl" --done "$T/done" --stop-peer \
	"$T/s1.snap" wait:2 "$T/s2.snap" wait:1 close "$T/s3.snap" \
	-- "$TOOLS/fakepeer" "$T/f.sock" ram 32G >"$T/serve.out" 2>&1 &
BG_PIDS+=($!)
wait_socket "$T/f.sock"
"$HVT" record --attach "$T/f.sock" --interval 100ms --max-guest-ram 32G -o "$T/t.hvt" --jsonl "$T/rec.jsonl" \
	--owners-port "$T/own.sock" 2>"$T/rec.err" || fail "record exited $?: $(cat "$T/rec.err" "$T/serve.out")"
[ -e "$T/done" ] || fail "owners_serve did not finish: $(cat "$T/serve.out")"
cat "$T/rec.err"
assert_contains "$T/rec.err" "owners port $T/own.sock: 3 snapshots stored" ", 0 refused, 0 dropped"
python3 "$ROOT/tests/tools/trace_owners.py" "$T/t.hvt" "$T/got" >"$T/records" || fail "trace_owners.py: $(cat "$T/records")"
[ "$(wc -l <"$T/records")" = 3 ] || fail "$(wc -l <"$T/records") OWNERS records, not 3: $(cat "$T/records")"
for i in 0 1 2; do
	cmp "$T/got/$i.snap" "$T/s$((i + 1)).snap" || fail "OWNERS record $i is not snapshot $((i + 1)), byte for byte"
done
echo "ok: the 3 snapshots sent are the trace's OWNERS records, byte for byte: $(tr '\n' ';' <"$T/records")"

# the readers: every interval, the snapshots found by the walk (the INDEX does not list them)
n=$(wc -l <"$T/rec.jsonl")
"$HVT" export --jsonl "$T/export.jsonl" "$T/t.hvt" || fail "export exited $?"
cmp "$T/rec.jsonl" "$T/export.jsonl" || fail "the trace's intervals differ from record's JSON Lines"
"$HVT" report "$T/t.hvt" >"$T/report.txt" || fail "report exited $?"
"$HVT" attribute "$T/t.hvt" --json >"$T/attr.json" 2>"$T/attr.err" || fail "attribute exited $?: $(cat "$T/attr.err")"
python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
snaps = o["snapshots"]
assert o["owners_file"] is None and len(snaps) == 3, (o["owners_file"], len(snaps))
assert len(o["intervals"]) == int(sys.argv[2]), "every interval attributed"
ats = [s["at_ns"] for s in snaps]
assert ats == sorted(ats), ats
# each interval by the snapshots around it (docs/attribution.md): ascending spans that use all three
spans = [tuple(iv["snapshots"]) for iv in o["intervals"]]
assert all(lo <= hi for lo, hi in spans) and spans == sorted(spans), spans
assert spans[0][0] == 0 and spans[-1][1] == 2 and any(1 in s for s in spans), spans
' "$T/attr.json" "$n" || fail "attribute --json: $(head -c 600 "$T/attr.json")"
echo "ok: $n intervals exported as recorded; report and attribute (by the trace's 3 snapshots) read the trace"

# ---- a peer that is not the VMM: owners_serve on its own ----
rm -f "$T/done" "$T/rec.jsonl"
"$TOOLS/owners_serve" "$T/own2.sock" --follow "$T/rec.jsonl" --done "$T/done" "$T/s1.snap" >"$T/serve2.out" 2>&1 &
BG_PIDS+=($!)
wait_socket "$T/own2.sock"
next_fakepeer "$T/f.sock" ram 1G
"$HVT" record --attach "$T/f.sock" --interval 100ms --duration 1s -o "$T/p.hvt" --owners-port "$T/own2.sock" \
	2>"$T/rec2.err" || fail "record exited $?: $(cat "$T/rec2.err")"
assert_contains "$T/rec2.err" "owners port $T/own2.sock: refused: the process at the other end is pid" \
	"not the VMM whose memory is traced (pid $FAKE_PID)" "0 snapshots stored" "the peer was refused"
python3 "$ROOT/tests/tools/trace_owners.py" "$T/p.hvt" "$T/got2" >"$T/records2" || fail "trace_owners.py: $(cat "$T/records2")"
[ ! -s "$T/records2" ] || fail "a refused peer's snapshot is in the trace: $(cat "$T/records2")"
echo "ok: a peer that is not the VMM is refused: $(grep -o 'refused: .*' "$T/rec2.err" | head -n 1)"

# ---- a port that is not there: a warning, and the trace as without it ----
next_fakepeer "$T/f.sock" ram 1G
"$HVT" record --attach "$T/f.sock" --interval 100ms --duration 1s -o "$T/n.hvt" --owners-port "$T/nothing.sock" \
	2>"$T/rec3.err" || fail "record exited $?: $(cat "$T/rec3.err")"
assert_contains "$T/rec3.err" "owners port $T/nothing.sock: warning: cannot connect" "never connected"
[ "$("$HVT" export --jsonl - "$T/n.hvt" | wc -l)" -ge 5 ] || fail "the trace without a port is short"
echo "ok: a port that never connects is a warning; the trace holds its intervals"

# ---- killed (SIGKILL) once the trace holds two snapshots: it reads to its last whole record ----
rm -f "$T/done" "$T/rec.jsonl"
kill "$FAKE_PID" 2>/dev/null
wait "$FAKE_PID" 2>/dev/null
"$TOOLS/owners_serve" "$T/own3.sock" --follow "$T/rec.jsonl" --done "$T/done" \
	"$T/s1.snap" wait:1 "$T/s2.snap" wait:1 "$T/s3.snap" wait:1000 \
	-- "$TOOLS/fakepeer" "$T/f3.sock" ram 32G >"$T/serve3.out" 2>&1 &
BG_PIDS+=($!)
wait_socket "$T/f3.sock"
"$HVT" record --attach "$T/f3.sock" --interval 100ms --max-guest-ram 32G -o "$T/k.hvt" --jsonl "$T/rec.jsonl" \
	--owners-port "$T/own3.sock" 2>"$T/rec4.err" &
rec=$!
BG_PIDS+=("$rec")
two_stored() { [ "$(python3 "$ROOT/tests/tools/trace_owners.py" "$T/k.hvt" "$T/got3" 2>/dev/null | wc -l)" -ge 2 ]; }
wait_until "the trace never held two snapshots" "$rec" two_stored
kill -9 "$rec"
wait "$rec" 2>/dev/null
python3 "$ROOT/tests/tools/trace_owners.py" "$T/k.hvt" "$T/got3" >"$T/records3" || fail "trace_owners.py: $(cat "$T/records3")"
k=$(wc -l <"$T/records3")
for ((i = 0; i < k; i++)); do
	cmp "$T/got3/$i.snap" "$T/s$((i + 1)).snap" || fail "after SIGKILL, OWNERS record $i is not snapshot $((i + 1))"
done
"$HVT" export --jsonl "$T/k.jsonl" "$T/k.hvt" 2>"$T/k.err"
rc=$?
[ "$rc" = 3 ] || fail "export of the killed trace exited $rc, not 3 (incomplete): $(cat "$T/k.err")"
[ "$(wc -l <"$T/k.jsonl")" -ge 1 ] || fail "the killed trace has no interval"
"$HVT" attribute "$T/k.hvt" >/dev/null 2>"$T/k.err" || [ $? = 3 ] || fail "attribute of the killed trace: $(cat "$T/k.err")"
echo "ok: killed with $k snapshots stored: they read back byte for byte, with $(wc -l <"$T/k.jsonl") intervals"
