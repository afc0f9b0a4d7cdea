#!/bin/bash
# hvmtrace attribute (docs/attribution.md): a trace's pages by owner from a snapshot built here with
# tests/tools/owners_snap.py, each interval's and the total figures checked against
# tests/tools/attribute_expect.py, which counts page by page with Python sets from the trace's own
# export --csv-pages:
#  - a trace recorded from tests/tools/fakepeer (page i written in harvest i, then a slot plugged in at
#    1 TiB): two processes that share two pages, a page of no process, the plugged slot's pages, and a
#    process that claims pages far outside the guest's RAM (it gets none);
#  - a synthetic array run in mode ad (written and accessed, with random noise): "array" owns c and half
#    of a, "reader" owns b and all of a (the half it shares with array is shared); --by kind; the text's
#    top writers;
#  - the refusals: no --owners for a trace without snapshots, a snapshot that is not one, a snapshot index past the file's, a page size
#    that is not the trace's, each one line naming the input.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/arrays.bash"
source "$(dirname "$0")/../lib/vmm.bash"
command -v python3 >/dev/null || skip "needs python3"
SNAP=(python3 "$ROOT/tests/tools/owners_snap.py")
EXPECT=(python3 "$ROOT/tests/tools/attribute_expect.py")

# what attribute --json says, in attribute_expect.py's lines
said() {
	python3 -c '
import json, sys
o = json.load(sys.stdin)
acc = lambda p: "-" if p["accessed"] is None else p["accessed"]
for iv in o["intervals"]:
    rows = [(str(c["id"]), c) for c in iv["owners"]]
    rows += [(k, iv[k]) for k in ("shared", "none") if iv[k]["written"] or (iv[k]["accessed"] or 0)]
    for key, p in sorted(rows):
        print("iv", iv["seq"], key, p["written"], acc(p))
rows = [(str(c["id"]), c) for c in o["owners"] if c["written"] or (c["accessed"] or 0)]
rows += [(k, o[k]) for k in ("shared", "none") if o[k]["written"] or (o[k]["accessed"] or 0)]
for key, p in sorted(rows):
    print("total", key, p["written"], acc(p))'
}

# check NAME TRACE SNAPSHOT_JSON BY: attribute's figures are the expected ones
check() {
	local name=$1 trace=$2 spec=$3 by=$4
	"$HVT" export --csv "$T/iv.csv" --csv-pages "$T/pages.csv" "$trace" || fail "$name: export"
	"${SNAP[@]}" encode <"$spec" >"$T/snap" || fail "$name: encode"
	"${EXPECT[@]}" "$T/pages.csv" "$spec" "$by" | sort >"$T/want" || fail "$name: attribute_expect.py"
	"$HVT" attribute "$trace" --owners "$T/snap" --by "$by" --json >"$T/said.json" || fail "$name: attribute exited $?"
	said <"$T/said.json" | sort >"$T/got" || fail "$name: attribute's JSON"
	[ -s "$T/want" ] || fail "$name: nothing expected (a test that cannot fail)"
	assert_eq "$name" "$(cat "$T/want")" "$(cat "$T/got")"
	echo "ok: $name: $(grep -c '^iv' "$T/got") interval rows; $(grep '^total' "$T/got" | tr '\n' ' ')"
}

# ---- a recorded trace: fakepeer writes page i in harvest i, then plugs 4 GiB in at 1 TiB ----
start_fakepeer "$T/f.sock" hotplug 4G
"$BIN/hvmtrace" record --attach "$T/f.sock" --interval 100ms --duration 1s --max-guest-ram 8G -o "$T/h.hvt" \
	2>"$T/h.err" || fail "record: $(cat "$T/h.err")"
tib=$((1 << 28)) # PFN of 1 TiB
cat >"$T/h.json" <<EOF2
{"time_ns": 5, "owners": [
 {"type": "kind", "kind": "anon", "runs": [[0, 8]]},
 {"type": "kind", "kind": "cache", "runs": [[$tib, 100]]},
 {"type": "process", "pid": 10, "name": "writer", "cgroup": "/a", "runs": [[0, 6], [$tib, 3]]},
 {"type": "process", "pid": 11, "name": "other", "cgroup": "/b", "runs": [[4, 4]]},
 {"type": "process", "pid": 12, "name": "liar", "cgroup": "/c", "runs": [[$((1 << 39)), 100000]]}
]}
EOF2
check "fakepeer trace, by process" "$T/h.hvt" "$T/h.json" process
grep -q '^total shared ' "$T/got" || fail "no page counted as shared"
grep -q '^total none ' "$T/got" || fail "no page counted as no process's"
python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); [l] = [x for x in o["owners"] if x.get("name") == "liar"]; sys.exit(l["written"] != 0 or l["pages"] != 100000)' "$T/said.json" ||
	fail "the process with pages outside RAM got some of the trace's"
check "fakepeer trace, by kind" "$T/h.hvt" "$T/h.json" kind

# ---- a synthetic array run, mode ad, with noise ----
arrays_run "$T/a.hvt" 12
cat >"$T/a.json" <<EOF2
{"time_ns": 7, "owners": [
 {"type": "process", "pid": 100, "name": "array", "cgroup": "/user.slice/run", "runs": [[$a, $((n / 2))], [$c, $n]]},
 {"type": "process", "pid": 101, "name": "reader", "cgroup": "/user.slice/read", "flags": 1, "runs": [[$a, $n], [$b, $n]]},
 {"type": "kind", "kind": "anon", "runs": [[$a, $n], [$b, $n], [$c, $n]]},
 {"type": "kind", "kind": "cache", "runs": [[0, $((a - 1))]]},
 {"type": "kind", "kind": "free", "runs": [[$((c + n)), 1000]]}
]}
EOF2
check "array trace, by process" "$T/a.hvt" "$T/a.json" process
check "array trace, by kind" "$T/a.hvt" "$T/a.json" kind
"${SNAP[@]}" encode <"$T/a.json" >"$T/a.snap"
"$HVT" attribute "$T/a.hvt" --owners "$T/a.snap" --top 2 >"$T/text" || fail "attribute, text"
assert_contains "$T/text" "by process, owners from $T/a.snap (snapshot 0 of 1: 2 processes, 3 kinds)" \
	"12 intervals; pages summed over intervals" "top writers:"
sed -n '/^top writers/,$p' "$T/text" | sed -n 3p | grep -q "^   1 array\[100\] " ||
	fail "array is not the top writer: $(cat "$T/text")"
grep -q 'reader\[101\]\*' "$T/text" || fail "reader's partial mark is missing"
"$HVT" attribute "$T/a.hvt" --owners "$T/a.snap" --intervals >"$T/ivs" || fail "attribute --intervals"
assert_eq "--intervals: array's rows" 12 "$(sed '/^top writers/q' "$T/ivs" | grep -c ' array\[100\] ')"
echo "ok: text: array first of the top writers, in all 12 intervals"

# ---- refusals ----
expect 2 "hvmtrace attribute: $T/a.hvt holds no owners snapshots (record --owners-port stores them): give --owners SNAPSHOT" "$HVT" attribute "$T/a.hvt"
head -c 100 /dev/urandom >"$T/junk"
expect 2 "hvmtrace attribute: $T/junk: snapshot 0 (byte 0): not an owners snapshot" \
	"$HVT" attribute "$T/a.hvt" --owners "$T/junk"
expect 2 "hvmtrace attribute: $T/a.snap: no snapshot 3 (it holds 1)" \
	"$HVT" attribute "$T/a.hvt" --owners "$T/a.snap" --snapshot 3
python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); s["page_size"] = 65536; print(json.dumps(s))' \
	"$T/a.json" | "${SNAP[@]}" encode >"$T/64k.snap"
expect 2 "hvmtrace attribute: interval 0 has pages of 4096 bytes, the snapshot's are 65536 bytes" \
	"$HVT" attribute "$T/a.hvt" --owners "$T/64k.snap"
echo "ok: refusals"
