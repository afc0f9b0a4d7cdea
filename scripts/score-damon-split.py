#!/usr/bin/env python3
# score-damon-split.py RUN_DIR HVMTRACE: a run of scripts/score-damon.sh split in two, the array program's
# c (the pages it prints as "HVT C-RUN GFN COUNT" on the console) and everything else the guest wrote (its
# kernel, the recorder's ring buffer, stacks): per window in which DAMON saw anything (its first windows,
# before its regions split, see nothing), the written pages of each part and the share DAMON saw, and
# DAMON's pages in and outside c. Windows and their alignment as `hvmtrace score` takes them (docs/score.md):
# the record's times moved by the start sync's smallest offset, each snapshot's window from the previous one's time,
# the first as long as the second, each interval to the window holding its midpoint.
import bisect
import csv
import subprocess
import sys

run, hvt = sys.argv[1], sys.argv[2]
console = [line.rstrip('\r\n').split() for line in open(run + '/console', errors='replace')]
c = set()
for f in console:
    if len(f) >= 5 and f[1:3] == ['HVT', 'C-RUN']:
        c.update(range(int(f[3]), int(f[3]) + int(f[4])))
host_syncs = [int(f[0]) for f in console if f[1:4] == ['HVT', 'DAMON-SYNC', 'start']]
snaps, guest_syncs = {}, []
for line in open(run + '/damon.rec'):
    f = line.split()
    if f[:3] == ['#', 'sync', 'start']:
        guest_syncs.append(int(f[3]))
    elif f and f[0][0].isdigit():
        snaps.setdefault(int(f[0]), []).append((int(f[1], 0) // 4096, int(f[2], 0) // 4096, int(f[3])))
# As score-damon.sh aligns: the smallest offset of the start sync's repetitions (latency only adds).
offset = min(h - g for h, g in zip(host_syncs, guest_syncs))
times = sorted(snaps)
ends = [t + offset for t in times]
starts = [ends[0] - (ends[1] - ends[0])] + ends[:-1]


def export(opt):
    out = subprocess.run([hvt, 'export', opt, '-', run + '/trace.hvt'], capture_output=True, text=True, check=True)
    return csv.DictReader(out.stdout.splitlines())


written = {}
for r in export('--csv-pages'):
    if r['kind'] == 'written':
        first = int(r['first_gfn'])
        written.setdefault(int(r['seq']), set()).update(range(first, first + int(r['count'])))
truth = [set() for _ in times]
for r in export('--csv'):
    mid = (int(r['t_start_ns']) + int(r['t_end_ns'])) // 2
    i = bisect.bisect_right(ends, mid)
    if i < len(times) and starts[i] <= mid:
        truth[i] |= written.get(int(r['seq']), set())
n = wc = bc = wo = bo = dc = do = 0
for i, t in enumerate(times):
    seen = set()
    for first, end, nr in snaps[t]:
        if nr:
            seen.update(range(first, end))
    if not truth[i] or not seen:
        continue
    n += 1
    wc += len(truth[i] & c)
    bc += len(truth[i] & c & seen)
    wo += len(truth[i] - c)
    bo += len((truth[i] - c) & seen)
    dc += len(seen & c)
    do += len(seen - c)
if not n:
    sys.exit('score-damon-split: DAMON saw nothing in any window of ' + run)
print(f'   split ({n} of {len(times)} windows, those where DAMON saw something; pages per window):'
      f' c written {wc / n:.0f}, DAMON saw {bc / max(wc, 1):.4f} of them;'
      f' written outside c {wo / n:.0f}, DAMON saw {bo / max(wo, 1):.4f};'
      f' DAMON\'s pages in c {dc / n:.0f}, outside c {do / n:.0f} (c has {len(c)})')
