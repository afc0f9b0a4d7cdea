#!/bin/bash
# The views by owner (docs/attribution.md, docs/analyses.md "By owner", docs/formats.md): report --by and
# export --by on a synthetic array run in mode ad with owners of a snapshot file, each figure against a
# page-by-page count in Python (tests/tools/attribute_expect.py, the trace's own export --csv-pages):
#  - report --by process|cgroup|kind --json: every interval's written and accessed pages per owner, the
#    totals, no page changed owner (one snapshot); each owner's pages per class against report --pages's
#    class of every page; the text's top writer and per-interval columns;
#  - export --by process|cgroup --csv-pages: the runs are the plain export's cut at owner boundaries, each
#    piece labelled with the owner of every page in it; JSON Lines' written_owners/accessed_owners the same;
#  - refusals: --owners without --by, --by with several traces, with no output that takes it, a trace
#    without snapshots and no --owners.
# The rule over several snapshots (changed owner) is tested in tests/unit/test_owners_interval.c.
source "$(dirname "$0")/../lib/assert.bash"
source "$(dirname "$0")/../lib/arrays.bash"
command -v python3 >/dev/null || skip "needs python3"
SNAP=(python3 "$ROOT/tests/tools/owners_snap.py")
EXPECT=(python3 "$ROOT/tests/tools/attribute_expect.py")

arrays_run "$T/a.hvt" 10
cat >"$T/a.json" <<EOF2
{"time_ns": 7, "owners": [
 {"type": "kind", "kind": "anon", "runs": [[$a, $n], [$b, $n], [$c, $n]]},
 {"type": "process", "pid": 100, "name": "array", "cgroup": "/user.slice/run", "runs": [[$a, $((n / 2))], [$c, $n]]},
 {"type": "process", "pid": 101, "name": "reader", "cgroup": "/user.slice/run", "runs": [[$a, $n], [$b, $((n / 2))]]},
 {"type": "process", "pid": 102, "name": "odd,\"name\"", "cgroup": "/other", "runs": [[$((b + n / 2)), $((n / 4))]]},
 {"type": "kind", "kind": "cache", "runs": [[0, $((a - 1))]]}
]}
EOF2
"${SNAP[@]}" encode <"$T/a.json" >"$T/a.snap" || fail "encode"
"$HVT" export --csv-pages "$T/pages.csv" "$T/a.hvt" || fail "export"

# report --by's JSON in attribute_expect.py's lines (cgroups keyed cg:PATH)
said() {
	python3 -c '
import json, sys
o = json.load(sys.stdin)["by_owner"]
key = {c["id"]: ("cg:" + c["cgroup"] if o["by"] == "cgroup" else str(c["id"])) for c in o["owners"]}
acc = lambda p: "-" if p["accessed"] is None else p["accessed"]
for iv in o["intervals"]:
    assert iv["changed"]["written"] == 0 and iv["changed"]["accessed"] == 0, "changed owner with one snapshot"
    rows = [(key[c["id"]], c) for c in iv["owners"]]
    rows += [(k, iv[k]) for k in ("shared", "none") if iv[k]["written"] or (iv[k]["accessed"] or 0)]
    for k, p in sorted(rows):
        print("iv", iv["seq"], k, p["written"], acc(p))
rows = [(key[c["id"]], c) for c in o["owners"] if c["written"] or (c["accessed"] or 0)]
rows += [(k, o[k]) for k in ("shared", "none") if o[k]["written"] or (o[k]["accessed"] or 0)]
for k, p in sorted(rows):
    print("total", k, p["written"], acc(p))'
}

for by in process cgroup kind; do
	"${EXPECT[@]}" "$T/pages.csv" "$T/a.json" "$by" | sort >"$T/want"
	"$HVT" report "$T/a.hvt" --by "$by" --owners "$T/a.snap" --json --pages >"$T/r.json" ||
		fail "report --by $by exited $?"
	said <"$T/r.json" | sort >"$T/got" || fail "report --by $by: its JSON"
	[ -s "$T/want" ] || fail "nothing expected (a test that cannot fail)"
	assert_eq "report --by $by" "$(cat "$T/want")" "$(cat "$T/got")"
	# each owner's pages per class: report --pages's class of every page, crossed with the owners here
	python3 - "$T/r.json" "$T/a.json" "$by" <<'PY' || fail "report --by $by: classes per owner"
import collections, json, sys
r, snap, by = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
owners_of = collections.defaultdict(set)
for i, o in enumerate(snap["owners"]):
    if o["type"] == by or (by == "cgroup" and o["type"] == "process"):
        for first, count in o["runs"]:
            for p in range(first, first + count):
                owners_of[p].add("cg:" + o["cgroup"] if by == "cgroup" else str(i))
want = collections.defaultdict(collections.Counter)
for first, count, cls in r["classes"]["page_runs"]:
    for p in range(first, first + count):
        o = owners_of.get(p, ())
        want["none" if not o else "shared" if len(o) > 1 else next(iter(o))][cls] += 1
o = r["by_owner"]
got = {("cg:" + c["cgroup"] if by == "cgroup" else str(c["id"])): c["classes"] for c in o["owners"]}
got["none"], got["shared"] = o["none"]["classes"], o["shared"]["classes"]
bad = [(k, dict(want[k]), {c: n for c, n in got.get(k, {}).items() if n}) for k in set(want) | set(got)
       if dict(want[k]) != {c: n for c, n in got.get(k, {}).items() if n}]
assert not bad, bad
assert sum(o["changed"]["classes"].values()) == 0
print("ok: classes of", len(want), "owners")
PY
	echo "ok: report --by $by: $(grep -c '^iv' "$T/got") interval rows; $(grep '^total' "$T/got" | tr '\n' ' ')"
done

"$HVT" report "$T/a.hvt" --by process --owners "$T/a.snap" >"$T/text" || fail "report --by, text"
assert_contains "$T/text" "Pages by process, owners from $T/a.snap (snapshot 0 of 1; every interval by it)" \
	"written pages per interval by process" "top writers (pages summed over intervals"
sed -n '/^top writers (pages/,$p' "$T/text" | sed -n 3p | grep -q "^   1 array\[100\] " ||
	fail "array is not the top writer: $(cat "$T/text")"
assert_eq "array's column in every interval" 10 \
	"$(sed -n '/^written pages per interval/,/^$/p' "$T/text" | awk 'NR > 2 && $2 == '"$n"'' | wc -l)"
echo "ok: text: array first of the top writers, $n pages written in each of 10 intervals"

# ---- export --by ----
for by in process cgroup; do
	"$HVT" export "$T/a.hvt" --by "$by" --owners "$T/a.snap" --csv-pages "$T/owned.csv" --jsonl "$T/owned.jsonl" ||
		fail "export --by $by exited $?"
	python3 - "$T/pages.csv" "$T/owned.csv" "$T/owned.jsonl" "$T/a.json" "$by" <<'PY' || fail "export --by $by"
import collections, csv, json, sys
plain, owned, jsonl, snap, by = sys.argv[1:6]
snap = json.load(open(snap))
label_of = collections.defaultdict(set)
for o in snap["owners"]:
    if o["type"] == "process":
        name = o["cgroup"] if by == "cgroup" else "%s[%d]" % (o["name"], o["pid"])
        for first, count in o["runs"]:
            for p in range(first, first + count):
                label_of[p].add(name)
def label(p):
    s = label_of.get(p, ())
    return "(no process)" if not s else "(shared)" if len(s) > 1 else next(iter(s))
rows = list(csv.DictReader(open(owned)))
assert rows and list(rows[0]) == ["seq", "kind", "first_gfn", "count", "owner"], list(rows[0])
# every piece is one owner's, and pieces that touch have different owners
for i, r in enumerate(rows):
    first, count = int(r["first_gfn"]), int(r["count"])
    assert all(label(p) == r["owner"] for p in range(first, first + count)), r
    if i and rows[i - 1]["seq"] == r["seq"] and rows[i - 1]["kind"] == r["kind"] and \
       int(rows[i - 1]["first_gfn"]) + int(rows[i - 1]["count"]) == first:
        assert rows[i - 1]["owner"] != r["owner"], (rows[i - 1], r)
# joined again, they are the plain export's runs
joined = []
for r in rows:
    key, first, count = (r["seq"], r["kind"]), int(r["first_gfn"]), int(r["count"])
    if joined and joined[-1][0] == key and joined[-1][1] + joined[-1][2] == first:
        joined[-1][2] += count
    else:
        joined.append([key, first, count])
want = [[(r["seq"], r["kind"]), int(r["first_gfn"]), int(r["count"])] for r in csv.DictReader(open(plain))]
assert joined == want, "the owned runs do not join to the plain export's"
# JSON Lines: the same pieces
lines = [json.loads(l) for l in open(jsonl)]
from_json = [[str(l["seq"]), kind, f, c, o] for l in lines for kind in ("written", "accessed")
             for f, c, o in l[kind + "_owners"] or []]
from_csv = [[r["seq"], r["kind"], int(r["first_gfn"]), int(r["count"]), r["owner"]] for r in rows]
assert sorted(from_json) == sorted(from_csv), "JSON Lines and CSV disagree"
print("ok:", len(rows), "pieces of", len(want), "runs;", len({r["owner"] for r in rows}), "owners")
PY
done
"$HVT" export "$T/a.hvt" --by process --owners "$T/a.snap" --csv-pages - | grep -q ',"odd,""name""\[102\]"$' ||
	fail "a name with a comma is not quoted"
echo "ok: export --by: a comma in a name quoted"

# ---- refusals ----
expect 2 "hvmtrace report: --owners is for --by, which is not asked for" \
	"$HVT" report "$T/a.hvt" --owners "$T/a.snap"
expect 2 "hvmtrace report: --by takes one trace (2 given)" \
	"$HVT" report "$T/a.hvt" "$T/a.hvt" --by process --owners "$T/a.snap"
expect 2 "hvmtrace report: $T/a.hvt holds no owners snapshots (record --owners-port stores them): give --owners SNAPSHOT" \
	"$HVT" report "$T/a.hvt" --by process
expect 2 "hvmtrace export: --by adds owners to --jsonl and --csv-pages, and neither is asked for" \
	"$HVT" export "$T/a.hvt" --by process --owners "$T/a.snap" --csv "$T/x.csv"
expect 2 "hvmtrace export: --owners is for --by, which is not asked for" \
	"$HVT" export "$T/a.hvt" --owners "$T/a.snap"
echo "ok: refusals"
