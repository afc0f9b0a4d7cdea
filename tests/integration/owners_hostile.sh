#!/bin/bash
# record --owners-port against a hostile guest (docs/attribution.md, "Snapshots in the trace"): between four
# good snapshots (tests/tools/owners_snap.py, of a 1 GiB guest: tests/tools/fakepeer ram 1G, small, so that
# the port's share of record's memory budget is most of it), the port carries garbage with stray magics, lies (65,537 owners, a body of
# 2^40 bytes, a body past --owners-max-bytes, a page one past the guest's memory, a kind twice, 4 M runs in
# 8.4 MB that pass every rule but the guest's memory) and a flood
# of 64 MiB. The trace stays intact (every interval as recorded, report reads it), the four good snapshots
# are its OWNERS records byte for byte, each lie is refused with a line naming its rule, and record's peak
# resident memory (tests/tools/maxrss) stays within the budget it locked (an optimised build: a sanitizer's
# allocator keeps freed memory and ignores the budget). The port's pace follows the intervals written.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/vmm.bash"
command -v python3 >/dev/null || skip "needs python3"
SLACK_KB=8192 # stacks, libraries paged in late, stdio: outside the heap the budget reserves

for i in 1 2 3 4; do # kinds and processes, different in each
	echo '{"time_ns": '$i', "owners": [{"type": "kind", "kind": "anon", "runs": [[0, '$((1000 * i))']]},
	 {"type": "kind", "kind": "cache", "runs": [[100000, 5000]]},
	 {"type": "process", "pid": '$((100 + i))', "name": "array", "cgroup": "/a", "runs": [[10, '$((500 * i))'], [262000, 144]]}]}' |
		python3 "$ROOT/tests/tools/owners_snap.py" encode >"$T/g$i.snap" || fail "owners_snap.py encode"
done
python3 - "$T" <<'EOF' || fail "cannot write the hostile inputs"
import random, struct, subprocess, sys
t = sys.argv[1]
rnd = random.Random(27)
def header(owners, body, version=1, page=4096):
    return b"HVTOWNRS" + struct.pack("<HHIIIQQ", version, 0, page, owners, 0, 1, body)
def snap(spec):
    return subprocess.run(["python3", "tests/tools/owners_snap.py", "encode"], input=spec.encode(),
                          capture_output=True, check=True).stdout
garbage = bytearray(rnd.randbytes(1 << 20))
for at in (1000, 50000, 700000):  # stray magics, and a header of another version
    garbage[at:at + 8] = b"HVTOWNRS"
garbage[900000:900040] = header(1, 100, version=9)
files = {
    "garbage": bytes(garbage) + b"HVTOWNR",  # ends in a magic cut short
    "owners65537": header(65537, 65537 * 20) + bytes(65537 * 20),
    "huge": header(1, 1 << 40),
    "over": header(1, 10 << 20) + bytes(10 << 20),
    # the last page of the 1 GiB guest is PFN 262143: this run ends one past it
    "outside": snap('{"owners": [{"type": "process", "pid": 9, "name": "liar", "runs": [[262143, 2]]}]}'),
    "twokinds": snap('{"owners": [{"type": "kind", "kind": "anon", "runs": [[1, 1]]}, {"type": "kind", "kind": "anon", "runs": [[5, 1]]}]}'),
    "flood": rnd.randbytes(64 << 20),
}
# near the bound, every rule kept but the guest's memory: the six kinds with 4,194,300 runs of a page, one
# page apart, up to PFN 8.4 M, in 8.4 MB. The reader holds them and their copy (the kinds' overlap check)
# before it can tell: what the budget must cover
def varint(v):
    out = bytearray()
    while True:
        out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
        v >>= 7
        if not v:
            return bytes(out)
body, per = bytearray(), 699050
for k, name in enumerate([b"free", b"slab", b"pagetable", b"anon", b"cache", b"other"]):
    runs = varint(k * 2 * per + 1) + b"\0" + b"\x01\x00" * (per - 1)
    body += struct.pack("<BBHIHHII", 2, k + 1, 0, 0, len(name), 0, per, len(runs)) + name + runs
files["bigliar"] = header(6, len(body)) + bytes(body)
for name, data in files.items():
    open(f"{t}/{name}", "wb").write(data)
EOF

"$TOOLS/owners_serve" "$T/own.sock" --follow "$T/rec.jsonl" --done "$T/done" --stop-peer \
	"$T/g1.snap" "$T/garbage" "$T/g2.snap" wait:1 "$T/owners65537" "$T/huge" "$T/over" "$T/outside" "$T/twokinds" \
	"$T/bigliar" "$T/g3.snap" wait:1 "$T/flood" "$T/g4.snap" \
	-- "$TOOLS/fakepeer" "$T/f.sock" ram 1G >"$T/serve.out" 2>&1 &
BG_PIDS+=($!)
wait_socket "$T/f.sock"
"$TOOLS/maxrss" "$T/rec.rss" "$HVT" record --attach "$T/f.sock" --interval 100ms --owners-max-bytes 9M -o "$T/t.hvt" \
	--jsonl "$T/rec.jsonl" --owners-port "$T/own.sock" 2>"$T/rec.err" ||
	fail "record exited $?: $(cat "$T/rec.err" "$T/serve.out")"
[ -e "$T/done" ] || fail "owners_serve did not finish: $(cat "$T/serve.out")"
grep -v 'refused' "$T/rec.err"
echo "  refusals logged: $(grep -c 'refused: ' "$T/rec.err")"

# the good snapshots, byte for byte, and nothing else
python3 "$ROOT/tests/tools/trace_owners.py" "$T/t.hvt" "$T/got" >"$T/records" || fail "trace_owners.py: $(cat "$T/records")"
[ "$(wc -l <"$T/records")" = 4 ] || fail "$(wc -l <"$T/records") OWNERS records, not 4: $(cat "$T/records")"
for i in 0 1 2 3; do
	cmp "$T/got/$i.snap" "$T/g$((i + 1)).snap" || fail "OWNERS record $i is not good snapshot $((i + 1))"
done
[ -z "$(awk '{ print $3 }' "$T/records" | sort | uniq -d)" ] ||
	fail "two snapshots stored in one interval (after the same one): $(cat "$T/records")"
echo "ok: the 4 good snapshots around the bad ones are the trace's OWNERS records, byte for byte, one an interval at most"

# each lie refused, by its rule
assert_contains "$T/rec.err" "4 snapshots stored" "refused: version 9" "refused: 65537 owners in 1310740 bytes" \
	"refused: body_bytes 1099511627776, beyond the 9437144 allowed" "refused: body_bytes 10485760, beyond" \
	"refused: owner 0 (liar) names PFN 0x40000, outside the guest's memory" "refused: owner 1: kind anon a second time" \
	"refused: owner 0 (free) names PFN 0x40001"
refused=$(sed -n 's/.* \([0-9]*\) refused, .*/\1/p' "$T/rec.err")
[ "$refused" -ge 7 ] || fail "only $refused refusals counted"
echo "ok: every lie refused by its rule ($refused refusals counted)"

# the trace intact
"$HVT" export --jsonl "$T/export.jsonl" "$T/t.hvt" || fail "export exited $?"
cmp "$T/rec.jsonl" "$T/export.jsonl" || fail "the trace's intervals differ from record's JSON Lines"
"$HVT" report "$T/t.hvt" >"$T/report.txt" || fail "report exited $?"
"$HVT" attribute "$T/t.hvt" >"$T/attr.txt" || fail "attribute exited $?"
echo "ok: $(wc -l <"$T/rec.jsonl") intervals, each as recorded; report and attribute read the trace"

# within the budget
rss=$(cat "$T/rec.rss")
if ldd "$HVT" | grep -q libasan; then
	echo "ok: record's peak RSS ${rss} KiB (not held to the budget: a sanitizer build)"
else
	budget=$(sed -n 's/.*resident memory \([0-9.]*\) MiB.*/\1/p' "$T/rec.err")
	[ -n "$budget" ] || fail "record did not say its resident memory: $(head -n 3 "$T/rec.err")"
	limit=$(awk -v m="$budget" -v s="$SLACK_KB" 'BEGIN { printf "%d", m * 1024 + s }')
	[ "$rss" -le "$limit" ] || fail "record's peak RSS ${rss} KiB passed its budget ${budget} MiB (+ ${SLACK_KB} KiB)"
	echo "ok: record's peak RSS ${rss} KiB within its budget of ${budget} MiB (+ ${SLACK_KB} KiB)"
fi
