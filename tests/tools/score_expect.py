#!/usr/bin/env python3
# score_expect.py INTERVALS_CSV PAGES_CSV RECORD KIND HOT CLOCK OFFSET_NS: what `hvmtrace score` must say,
# computed page by page with Python sets, apart from its code (docs/score.md): the trace from
# `hvmtrace export --csv` (intervals' times) and `--csv-pages` (their runs), KIND "accessed" or "written"
# the set scored, RECORD damo's json_compressed or plain JSON, or "hvmtrace-damon 1" text; CLOCK "record"
# (its first window starts with the trace's first interval) or "trace", then OFFSET_NS added.
# Prints one line per scored snapshot, "snap intervals damon true both hot_k hot_both", and
# "overall P R H W" (precision, recall, hot overlap, WSS error; %.6f, "null" when not known).
import csv
import json
import sys
import zlib

PAGE = 4096


def read_record(path):
    """[(start_ns, end_ns, [(first_page, end_page, nr)])]"""
    data = open(path, "rb").read()
    if data[:1] == b"\x78":
        data = zlib.decompress(data)
    text = data.decode()
    if text.lstrip().startswith("["):
        snaps = []
        for s in json.loads(text)[0]["snapshots"]:
            regions = []
            for r in s["regions"]:
                nr = r["nr_accesses"]
                nr = nr["samples"] if isinstance(nr, dict) else nr
                regions.append((r["start"] // PAGE, r["end"] // PAGE, nr))
            snaps.append((s["start_time"], s["end_time"], regions))
        return snaps
    lines = text.splitlines()
    assert lines[0] == "hvmtrace-damon 1"
    aggr, by_time = None, {}
    order = []
    for line in lines[1:]:
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if f[0] == "aggr_us":
            aggr = int(f[1]) * 1000
            continue
        t, start, end, nr = (int(x, 0) for x in f)
        if t not in by_time:
            by_time[t] = []
            order.append(t)
        by_time[t].append((start // PAGE, end // PAGE, nr))
    snaps = []
    for i, t in enumerate(order):
        if aggr:
            start = t - aggr
        elif i:
            start = order[i - 1]
        else:
            start = t - (order[1] - order[0])
        snaps.append((start, t, by_time[t]))
    return snaps


def hot(pages_freq, k):
    """the k hottest pages: by frequency, then by address"""
    ranked = sorted(pages_freq.items(), key=lambda pf: (-pf[1], pf[0]))
    return set(p for p, _ in ranked[:k])


def ratio(a, b):
    return "null" if b == 0 else "%.6f" % (a / b)


def main():
    ivs_csv, pages_csv, record, kind, hot_pct, clock, offset = sys.argv[1:8]
    hot_pct, offset = int(hot_pct), int(offset)
    ivs = {}
    for row in csv.DictReader(open(ivs_csv)):
        ivs[int(row["seq"])] = (int(row["t_start_ns"]), int(row["t_end_ns"]))
    runs = {}
    for row in csv.DictReader(open(pages_csv)):
        if row["kind"] == kind:
            runs.setdefault(int(row["seq"]), []).append((int(row["first_gfn"]), int(row["count"])))
    snaps = read_record(record)
    t0 = min(s for s, _ in ivs.values())
    shift = offset + (t0 - snaps[0][0] if clock == "record" else 0)
    sums = [0, 0, 0, 0, 0]
    for n, (start, end, regions) in enumerate(snaps):
        freq, count = {}, 0
        for seq, (a, b) in sorted(ivs.items()):
            mid = a + (b - a) // 2
            if start + shift <= mid < end + shift:
                count += 1
                for first, cnt in runs.get(seq, []):
                    for p in range(first, first + cnt):
                        freq[p] = freq.get(p, 0) + 1
        if not count:
            continue
        damon = {}
        for first, last, nr in regions:
            if nr:
                for p in range(first, last):
                    damon[p] = nr
        k = (len(freq) * hot_pct + 99) // 100
        fig = [len(damon), len(freq), len(set(damon) & set(freq)), k, len(hot(damon, k) & hot(freq, k))]
        print(n, count, *fig)
        sums = [s + f for s, f in zip(sums, fig)]
    d, t, both, k, hb = sums
    precision = "null" if kind == "written" else ratio(both, d)
    wss = "null" if not t else "%.6f" % ((d - t) / t)
    print("overall", precision, ratio(both, t), ratio(hb, k), wss)


main()
