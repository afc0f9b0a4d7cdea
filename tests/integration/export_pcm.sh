#!/bin/bash
# hvmtrace export --pcm-csv writes what pcm-memory -csv writes on the same host (display_bandwidth_csv in
# https://github.com/intel/pcm, src/pcm-memory.cpp; docs/analyses.md): two header rows, every channel of
# every socket in pcm's numbering (a socket's channels counted controller by controller: s0.mc1.ch0 is Ch3
# on Skylake-SP's 3 channels per controller, s0.mc1.ch1 Ch3 on Ice Lake-SP's 2), empty cells where the VM
# has no channel, each socket's Mem Read, Mem Write, P. Write (T/s) (Skylake-SP to Sapphire Rapids) and
# Memory, then the system's. A python3 csv reader (no pandas) checks the figures by header name and by
# position against the trace's bytes. Without --chanmap the columns end at the trace's last channel, and it
# says so; bad maps and channel names are refused.
source "$(dirname "$0")/../lib/assert.bash"
command -v jq >/dev/null || skip "needs jq"
command -v python3 >/dev/null || skip "needs python3"
MAP=$ROOT/tests/fixtures/doctor/chanmap-2s6c-hole.json # 2 sockets x 2 controllers x 3 channels, skx

"$TOOLS/synth_arrays" -o "$T/skx.hvt" --memory 512M --intervals 4 --channel-ids s0.mc1.ch0,s1.mc0.ch2 \
	--channel-source skx >/dev/null || fail "synth_arrays"
"$HVT" export --jsonl "$T/skx.jsonl" "$T/skx.hvt" || fail "export --jsonl"

# check CSV JSONL SOCKETS PER_SOCKET PWRITE CELLS: the header rows as pcm-memory writes them for SOCKETS
# sockets of PER_SOCKET channels; CELLS = "trace_channel:socket:pcm_channel ..." hold the channels' MB/s,
# looked up by name (SKTs, ChNRead) and by position, every other channel cell empty, socket and system
# sums right.
check() {
	python3 - "$@" <<'EOF'
import csv, json, sys
path, jsonl, nsock, per, pwrite = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
cells = [tuple(int(x) for x in c.split(":")) for c in sys.argv[6].split()]
rows = list(csv.reader(open(path, newline="")))
ivs = [json.loads(line) for line in open(jsonl)]
def fail(why):
    print(why)
    sys.exit(1)
# the two header rows, built the way display_bandwidth_csv prints them
h1, h2 = ["", ""], ["Date", "Time"]
for s in range(nsock):
    for c in range(per):
        h1 += ["SKT%d" % s] * 2
        h2 += ["Ch%dRead" % c, "Ch%dWrite" % c]
    extra = ["Mem Read (MB/s)", "Mem Write (MB/s)"] + (["P. Write (T/s)"] if pwrite else []) + ["Memory (MB/s)"]
    h1 += ["SKT%d" % s] * len(extra)
    h2 += extra
h1 += ["System"] * 3
h2 += ["Read", "Write", "Memory"]
if rows[0] != h1:
    fail("header 1: %s" % ",".join(rows[0]))
if rows[1] != h2:
    fail("header 2: %s" % ",".join(rows[1]))
if len(rows) != 2 + len(ivs):
    fail("%d rows for %d intervals" % (len(rows) - 2, len(ivs)))
col = {(a, b): i for i, (a, b) in enumerate(zip(h1, h2))}  # by name
def pos(s, name):  # by position: pcm's fixed order
    base = 2 + s * (2 * per + 3 + pwrite)
    if name.startswith("Ch"):
        c, kind = int(name[2:].split("R")[0].split("W")[0]), name.endswith("Write")
        return base + 2 * c + kind
    return base + 2 * per + ["Mem Read (MB/s)", "Mem Write (MB/s)"].index(name)
def near(cell, want, what):
    if abs(float(cell) - want) > 0.006:
        fail("%s: %s, the trace gives %.3f" % (what, cell, want))
for row, iv in zip(rows[2:], ivs):
    if len(row) != len(h2):
        fail("a row of %d cells, the header has %d" % (len(row), len(h2)))
    secs = (iv["t_end_ns"] - iv["t_start_ns"]) / 1e9
    mbs = {c["channel"]: (c["read_bytes"] / 1e6 / secs, c["write_bytes"] / 1e6 / secs) for c in iv["channels"]}
    filled = set()
    for ch, s, c in cells:
        for k, kind in enumerate(("Read", "Write")):
            name = "Ch%d%s" % (c, kind)
            near(row[col[("SKT%d" % s, name)]], mbs[ch][k], "SKT%d %s by name" % (s, name))
            near(row[pos(s, name)], mbs[ch][k], "SKT%d %s by position" % (s, name))
            filled.add(col[("SKT%d" % s, name)])
    for i, name in enumerate(h2):
        if name.startswith("Ch") and i not in filled and row[i] != "":
            fail("%s %s holds %r, no channel of the VM is there" % (h1[i], name, row[i]))
    for s in range(nsock):
        rd = sum(mbs[ch][0] for ch, cs, _ in cells if cs == s)
        wr = sum(mbs[ch][1] for ch, cs, _ in cells if cs == s)
        near(row[col[("SKT%d" % s, "Mem Read (MB/s)")]], rd, "SKT%d Mem Read" % s)
        near(row[pos(s, "Mem Write (MB/s)")], wr, "SKT%d Mem Write by position" % s)
        near(row[col[("SKT%d" % s, "Memory (MB/s)")]], rd + wr, "SKT%d Memory" % s)
        if pwrite and row[col[("SKT%d" % s, "P. Write (T/s)")]] != "":
            fail("P. Write holds a figure; partial writes are not counted")
    near(row[-3], sum(v[0] for v in mbs.values()), "System Read")
    near(row[col[("System", "Memory")]], sum(v[0] + v[1] for v in mbs.values()), "System Memory")
print("ok: %d rows, %d columns" % (len(rows) - 2, len(h2)))
EOF
}

# Skylake-SP with the host's map: 6 channels a socket; s0.mc1.ch0 is SKT0 Ch3, s1.mc0.ch2 SKT1 Ch2.
"$HVT" export --pcm-csv "$T/skx.csv" --chanmap "$MAP" "$T/skx.hvt" 2>"$T/err" || fail "export --pcm-csv: $(cat "$T/err")"
check "$T/skx.csv" "$T/skx.jsonl" 2 6 1 "0:0:3 1:1:2" || fail "skx with --chanmap"
[ ! -s "$T/err" ] || fail "export --pcm-csv with a map said: $(cat "$T/err")"
# Without the map: the columns end at the trace's last channel (Ch3), and it says so.
"$HVT" export --pcm-csv "$T/skx-nomap.csv" "$T/skx.hvt" 2>"$T/err" || fail "export --pcm-csv without a map"
check "$T/skx-nomap.csv" "$T/skx.jsonl" 2 4 1 "0:0:3 1:1:2" || fail "skx without --chanmap"
assert_contains "$T/err" "without --chanmap: columns Ch0-Ch3 of each socket" "--chanmap FILE gives them all"

# Ice Lake-SP: the kernel shows 3 channels a controller, pcm-memory 2 (channel 2 is inactive): with a map of
# 4 controllers x 3 channels, 8 columns a socket; s0.mc1.ch1 is Ch3, s0.mc3.ch0 Ch6, and s0.mc2.ch2 has no
# column (its bytes count in the sums only, and export says so).
python3 - "$MAP" >"$T/icx.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["cpu"].update(model=106, generation="icx", name="MODEL ICX-like")
m["sockets"], m["interleaved"] = 1, []
m["channels"] = [{"id": "s0.mc%d.ch%d" % (c, k), "socket": 0, "controller": c, "channel": k,
                  "pmu": "uncore_imc_%d" % (3 * c + k), "ranges": []} for c in range(4) for k in range(3)]
print(json.dumps(m))
EOF
"$TOOLS/synth_arrays" -o "$T/icx.hvt" --memory 512M --intervals 3 --channel-ids s0.mc1.ch1,s0.mc3.ch0 \
	--channel-source icx >/dev/null || fail "synth_arrays icx"
"$HVT" export --jsonl "$T/icx.jsonl" "$T/icx.hvt" || fail "export --jsonl icx"
"$HVT" export --pcm-csv "$T/icx.csv" --chanmap "$T/icx.json" "$T/icx.hvt" || fail "export --pcm-csv icx"
check "$T/icx.csv" "$T/icx.jsonl" 1 8 1 "0:0:3 1:0:6" || fail "icx with --chanmap"
"$TOOLS/synth_arrays" -o "$T/icx2.hvt" --memory 512M --intervals 2 --channel-ids s0.mc1.ch1,s0.mc2.ch2 \
	--channel-source icx >/dev/null || fail "synth_arrays icx ch2"
"$HVT" export --pcm-csv "$T/icx2.csv" --chanmap "$T/icx.json" "$T/icx2.hvt" 2>"$T/err" || fail "export icx ch2"
assert_contains "$T/err" "pcm-memory shows no channel s0.mc2.ch2"
echo "ok: pcm-memory's columns for skx and icx, by name and by position"

# Refusals: one line, exit 2, nothing written.
expect 2 "has no channel s1.mc0.ch2" "$HVT" export --pcm-csv "$T/x.csv" --chanmap "$T/icx.json" "$T/skx.hvt"
expect 2 "--chanmap is for --pcm-csv" "$HVT" export --csv "$T/x.csv" --chanmap "$MAP" "$T/skx.hvt"
"$TOOLS/synth_arrays" -o "$T/odd.hvt" --memory 512M --intervals 2 --channel-ids s0.mc0.ch0,dimm7 >/dev/null ||
	fail "synth_arrays odd"
expect 2 "needs channels named by socket, controller and channel (s0.mc1.ch0); dimm7 is not" \
	"$HVT" export --pcm-csv "$T/x.csv" "$T/odd.hvt"
[ ! -e "$T/x.csv" ] || fail "a refused export left its output behind"
echo "ok: refusals"
