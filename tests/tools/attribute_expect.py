#!/usr/bin/env python3
# What hvmtrace attribute --json must say, page by page and apart from its code: reads the trace's pages
# (export --csv-pages) and the snapshot's JSON (owners_snap.py encode's input, owners in the order written)
# and prints, for owners of type BY ("process", "kind", or "cgroup": processes by cgroup, keyed cg:PATH):
#   iv SEQ ID WRITTEN ACCESSED     each interval's pages per owner (ids: positions in the snapshot's list)
#   iv SEQ shared W A / iv SEQ none W A
#   total ID W A, total shared W A, total none W A
# A page owned by several owners of the type is shared, by none "none". ACCESSED is "-" without accessed
# sets (dirty-log). Usage: attribute_expect.py PAGES_CSV SNAPSHOT_JSON BY
import collections
import csv
import json
import sys

pages_csv, snap_json, by = sys.argv[1:4]
snap = json.load(open(snap_json))
owners_of = collections.defaultdict(list)
for i, o in enumerate(snap["owners"]):
    if o["type"] == by or (by == "cgroup" and o["type"] == "process"):
        key = "cg:" + o.get("cgroup", "") if by == "cgroup" else i
        for first, count in o["runs"]:
            for p in range(first, first + count):
                if key not in owners_of[p]:
                    owners_of[p].append(key)

sets = collections.defaultdict(lambda: {"written": set(), "accessed": set()})
accessed_seen = False
for row in csv.DictReader(open(pages_csv)):
    first, count = int(row["first_gfn"]), int(row["count"])
    sets[int(row["seq"])][row["kind"]].update(range(first, first + count))
    accessed_seen |= row["kind"] == "accessed"

total = collections.defaultdict(lambda: [0, 0])
for seq in sorted(sets):
    counts = collections.defaultdict(lambda: [0, 0])
    for k, kind in enumerate(("written", "accessed")):
        for p in sets[seq][kind]:
            o = owners_of.get(p, [])
            key = "none" if not o else "shared" if len(o) > 1 else o[0]
            counts[key][k] += 1
    for key in sorted(counts, key=str):
        w, a = counts[key]
        print("iv", seq, key, w, a if accessed_seen else "-")
        total[key][0] += w
        total[key][1] += a
for key in sorted(total, key=str):
    w, a = total[key]
    print("total", key, w, a if accessed_seen else "-")
