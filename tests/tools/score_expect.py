#!/usr/bin/env python3
# score_expect.py INTERVALS_CSV PAGES_CSV RECORD KIND HOT CLOCK OFFSET_NS: what `hvmtrace score` must say,
# computed page by page with Python sets, apart from its code (docs/score.md): the trace from
# `hvmtrace export --csv` (intervals' times) and `--csv-pages` (their runs), KIND "accessed" or "written"
# the set scored, RECORD damo's json_compressed or plain JSON, or "hvmtrace-damon 1" text; CLOCK "record"
# (its first window starts with the trace's first interval) or "trace", then OFFSET_NS added.
# RECORD may instead be "sample:every:N:WINDOW:RAM_PAGES" or "sample:random:F:SEED:WINDOW:RAM_PAGES", the
# sampling tracker of `score --sample` (hvmtrace/score/sample.h), in windows of WINDOW intervals, its blocks
# cut to RAM_PAGES (one slot from 0).
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


M64 = (1 << 64) - 1


def splitmix64(state):
    z = (state + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def sampled_windows(spec, ivs, runs):
    """the sampler's windows: (first_seq, last_seq, {page: nr_accesses}) per WINDOW intervals"""
    f = spec.split(":")
    if f[1] == "every":
        block, seed, window, ram = int(f[2]), None, int(f[3]), int(f[4])
    else:
        if len(f) == 5:  # no SEED: 1
            f.insert(3, "1")
        block, seed, window, ram = round(1 / float(f[2])), int(f[3]), int(f[4]), int(f[5])
    seqs = sorted(ivs)
    out = []
    for w in range(0, len(seqs), window):
        counts = {}
        for index in range(w, min(w + window, len(seqs))):
            for first, cnt in runs.get(seqs[index], []):
                for p in range(first, first + cnt):
                    k = p // block
                    off = 0
                    if seed is not None:
                        state = seed ^ ((index * 0x9E3779B97F4A7C15) & M64) ^ ((k * 0xC2B2AE3D27D4EB4F) & M64)
                        off = splitmix64(state) % block
                    if p == k * block + off:
                        counts[k] = counts.get(k, 0) + 1
        damon = {}
        for k, nr in counts.items():
            for p in range(k * block, min((k + 1) * block, ram)):
                damon[p] = nr
        out.append((seqs[w], seqs[min(w + window, len(seqs)) - 1], damon))
    return out


def hot(pages_freq, k):
    """the k hottest pages: by frequency, then by address"""
    ranked = sorted(pages_freq.items(), key=lambda pf: (-pf[1], pf[0]))
    return set(p for p, _ in ranked[:k])


def ratio(a, b):
    return "null" if b == 0 else "%.6f" % (a / b)


def score(n, count, damon, freq, hot_pct, sums):
    k = (len(freq) * hot_pct + 99) // 100
    fig = [len(damon), len(freq), len(set(damon) & set(freq)), k, len(hot(damon, k) & hot(freq, k))]
    print(n, count, *fig)
    return [s + f for s, f in zip(sums, fig)]


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
    sums = [0, 0, 0, 0, 0]
    if record.startswith("sample:"):
        for n, (first, last, damon) in enumerate(sampled_windows(record, ivs, runs)):
            freq = {}
            for seq in range(first, last + 1):
                for start, cnt in runs.get(seq, []):
                    for p in range(start, start + cnt):
                        freq[p] = freq.get(p, 0) + 1
            sums = score(n, last - first + 1, damon, freq, hot_pct, sums)
    else:
        snaps = read_record(record)
        t0 = min(s for s, _ in ivs.values())
        shift = offset + (t0 - snaps[0][0] if clock == "record" else 0)
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
            sums = score(n, count, damon, freq, hot_pct, sums)
    d, t, both, k, hb = sums
    precision = "null" if kind == "written" else ratio(both, d)
    wss = "null" if not t else "%.6f" % ((d - t) / t)
    print("overall", precision, ratio(both, t), ratio(hb, k), wss)


main()
