#!/usr/bin/env python3
# The build load's attribution (tests/e2e/qemu_owners_build.sh):
#   owners_build_check.py BY_PROCESS.json BY_KIND.json TRACE.jsonl BEGIN_NS END_NS [--top NAME]
#                         [--min-cache FRACTION]
# The two are `hvmtrace attribute --json` of one trace, by process and by kind; TRACE.jsonl the trace's
# intervals as record --jsonl wrote them (their times on the host's clock); BEGIN_NS and END_NS the
# build's start and end on that clock (the console's stamps). Over the intervals wholly inside the
# build it prints each interval's written pages by program name (processes of one name summed: cc1, as,
# ld, make, ...; "(changed)" the pages whose owner the snapshots around the interval disagree on) and by
# kind, and the sums; then checks, exiting 1 saying which failed:
#   - at least 3 intervals inside the build;
#   - with --top NAME: processes named NAME wrote more pages than any other name summed over them;
#   - with --min-cache F: the page cache (kind cache) holds at least F of their written pages.
import json
import sys

by_proc, by_kind = (json.load(open(p)) for p in sys.argv[1:3])
times = {}
for line in open(sys.argv[3]):
    r = json.loads(line)
    times[r["seq"]] = (r["t_start_ns"], r["t_end_ns"])
begin, end = int(sys.argv[4]), int(sys.argv[5])
opts = dict(zip(sys.argv[6::2], sys.argv[7::2]))
names = {o["id"]: o["name"] for o in by_proc["owners"]}
kinds = {o["id"]: o["kind"] for o in by_kind["owners"]}


def inside(iv):
    t = times.get(iv["seq"])
    return t is not None and t[0] >= begin and t[1] <= end


def tally(iv, label):
    t = {}
    for o in iv["owners"]:
        t[label[o["id"]]] = t.get(label[o["id"]], 0) + o["written"]
    t["(shared)"] = iv["shared"]["written"]
    t["(changed)"] = iv["changed"]["written"]
    t["(none)"] = iv["none"]["written"]
    return t


def show(t):
    return ", ".join(f"{k} {v}" for k, v in sorted(t.items(), key=lambda kv: -kv[1]) if v)


procs, kinds_sum, n = {}, {}, 0
kind_ivs = {iv["seq"]: iv for iv in by_kind["intervals"]}
for iv in by_proc["intervals"]:
    if not inside(iv):
        continue
    n += 1
    p, k = tally(iv, names), tally(kind_ivs[iv["seq"]], kinds)
    first, last = iv["snapshots"]
    print(f"interval {iv['seq']} (snapshots {first}-{last}): {show(p)} | {show(k)}")
    for src, dst in ((p, procs), (k, kinds_sum)):
        for key, v in src.items():
            dst[key] = dst.get(key, 0) + v
total = sum(procs.values())
print(f"{n} intervals inside the build, {total} pages written (page-intervals)")
for label, t in (("by process name", procs), ("by kind", kinds_sum)):
    print(f"{label}: " + ", ".join(f"{k} {v} ({100 * v / max(total, 1):.1f} %)"
                                    for k, v in sorted(t.items(), key=lambda kv: -kv[1]) if v))
bad = []
if n < 3:
    bad.append(f"only {n} intervals inside the build")
writers = {k: v for k, v in procs.items() if not k.startswith("(")}
top = max(writers, key=writers.get) if writers else None
if "--top" in opts and top != opts["--top"]:
    bad.append(f"the top writing program is {top}, not {opts['--top']}")
if "--min-cache" in opts and kinds_sum.get("cache", 0) < float(opts["--min-cache"]) * total:
    bad.append(f"the page cache holds {kinds_sum.get('cache', 0)} of {total} written pages, "
               f"under {100 * float(opts['--min-cache']):g} %")
for b in bad:
    print("FAIL: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
