#!/usr/bin/env python3
"""huge_slot_expect.py SLOT_PAGES MARK_PAGES INTERVALS REPORT_JSON: checks the figures of
`hvmtrace report --json --pages --histogram --energy` on a trace of tests/tools/huge_slot_trace against a model
of what that tool writes, computed here page by page from its pattern (not by hvmtrace's code).

The tool's two slots: "big" at GFN 2^20 (SLOT_PAGES pages as the layout declares them; its sets were made for a
slot of MARK_PAGES pages, the same unless the layout was patched afterwards) and "low" (16384 pages at GFN 0).
Interval k (0 ..) writes and accesses in each slot pages k..k+2, 17 pages from mark/2 + 4096k, page mark-1-k
(what lies inside the slot) and, when mark > 4 Mi pages, 2^20 pages from mark/4; it also accesses pages 100..104. Exit 0 all agree, 1 not.
"""
import json
import sys

slot_pages, mark_pages, k_n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rep = json.load(open(sys.argv[4]))
BIG, LOW, REGION = 1 << 20, 16384, 512
written, accessed = {}, {}  # GFN -> intervals; the 2^20-page run apart (same count for all of its pages)
long_run = []
for base, n in ((BIG, mark_pages), (0, LOW)):
    for k in range(k_n):
        runs = [(k, 3), (n // 2 + 4096 * k, 17), (n - 1 - k, 1)]
        for first, count in runs:
            for p in range(first, min(first + count, n)):  # the pageset drops what lies past the slot
                written[base + p] = written.get(base + p, 0) + 1
                accessed[base + p] = accessed.get(base + p, 0) + 1
        for p in range(100, 105):
            accessed[base + p] = accessed.get(base + p, 0) + 1
    if n > 4 << 20:
        long_run.append((base + n // 4, 1 << 20))
for first, count in long_run:  # touched in every interval, apart from every other run
    assert all(not (first <= g < first + count) for g in accessed)

ram = slot_pages + LOW


def cls(w, a):
    if not a:
        return "untouched"
    if w >= 0.5 * k_n:
        return "write-heavy"
    if a < 0.05 * k_n:
        return "cold"
    if a >= 0.25 * k_n and w <= 0.1 * a:
        return "read-mostly"
    return "mixed"


long_pages = sum(c for _, c in long_run)
hist = [0] * (k_n + 1)
for w in written.values():
    hist[w] += 1
hist[k_n] += long_pages
hist[0] = ram - sum(hist[1:])
pages = {"write-heavy": long_pages, "read-mostly": 0, "mixed": 0, "cold": 0}
by_region = {}
for g, a in accessed.items():
    c = cls(written.get(g, 0), a)
    pages[c] += 1
    by_region.setdefault(g // REGION, {}).setdefault(c, 0)
    by_region[g // REGION][c] += 1
pages["untouched"] = ram - sum(pages.values())
regions = {"write-heavy": 0, "read-mostly": 0, "mixed": 0, "cold": 0, "untouched": 0}
for first, count in long_run:  # whole regions of write-heavy pages
    regions["write-heavy"] += count // REGION
for r, per in by_region.items():
    per["untouched"] = REGION - sum(per.values())
    best = None
    for c in ("write-heavy", "read-mostly", "mixed", "cold"):
        if per.get(c) and (best is None or per[c] > per[best]):
            best = c
    regions[best or "untouched"] += 1
regions["untouched"] += ram // REGION - sum(regions.values())
want = {
    "ram_pages": ram,
    "pages_ever_written": len(written) + long_pages,
    "pages_written_every_interval": sum(1 for w in written.values() if w == k_n) + long_pages,
    "histogram": hist,
    "class pages": dict(pages, unknown=None),
    "class regions": dict(regions, unknown=None),
}
got = {
    "ram_pages": rep["selection"]["ram_pages"],
    "pages_ever_written": rep["totals"]["pages_ever_written"],
    "pages_written_every_interval": rep["totals"]["pages_written_every_interval"],
    "histogram": rep["write_frequency"]["histogram"],
    "class pages": rep["classes"]["pages"],
    "class regions": rep["classes"]["regions"],
}
bad = [f"{k}: {got[k]}, want {want[k]}" for k in want if got[k] != want[k]]
runs = rep["classes"]["page_runs"]
if sum(r[1] for r in runs) != ram or any(a[0] + a[1] > b[0] for a, b in zip(runs, runs[1:])):
    bad.append("page_runs do not cover the RAM once, ascending")
if not rep.get("energy", {}).get("bytes"):
    bad.append("no energy figures")
for b in bad:
    print("huge_slot_expect:", b)
sys.exit(1 if bad else 0)
