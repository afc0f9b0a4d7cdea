#!/usr/bin/env python3
# Per-interval medians of one hvmtrace trace, for bench/table.sh: harvest time, tracer CPU, written pages,
# interval length, and the bytes of each INTERVAL record in the file (docs/formats.md: 16-byte header,
# payload, padding to 8; the records are in the CSV's order). The first interval (it spans the attach) and a final one (cut short) are left out.
# usage: trace_stats.py HVMTRACE TRACE  ->  "harvest_us=… tracer_cpu_us=… written=… duration_s=… bytes=… n=…"
import csv
import io
import statistics
import struct
import subprocess
import sys

hvmtrace, trace = sys.argv[1], sys.argv[2]
out = subprocess.run([hvmtrace, "export", "--csv", "-", trace], check=True, capture_output=True, text=True).stdout
every = list(csv.DictReader(io.StringIO(out)))
keep = [i for i, r in enumerate(every) if i > 0 and r["final"] != "1"]
rows = [every[i] for i in keep]
if not rows:
    sys.exit(f"trace_stats: {trace}: no interval besides the first and a final one")

sizes = []
with open(trace, "rb") as f:
    data = f.read()
off = 16
while off + 16 <= len(data):
    rtype, length = struct.unpack_from("<II", data, off)
    if rtype == 3:
        sizes.append(16 + length + (8 - length % 8) % 8)
    elif rtype == 4:
        break
    off += 16 + length + (8 - length % 8) % 8


def med(key):
    return statistics.median(float(r[key]) for r in rows)


print("harvest_us=%.1f tracer_cpu_us=%.1f written=%.0f duration_s=%.4f bytes=%.0f n=%d" % (
    med("harvest_us"), med("tracer_cpu_us"), med("written_pages"), med("duration_s"),
    statistics.median(sizes[i] for i in keep), len(rows)))
