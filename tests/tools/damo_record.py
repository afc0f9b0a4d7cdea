#!/usr/bin/env python3
# damo_record.py FILE check|regions|snapshots: reads a damo record file (json_compressed: zlib-compressed
# JSON, as damo's _damo_records.write_json_compressed writes and parse_records_file reads it, `file -b`
# saying "zlib compressed data") without damo, and checks it against what damo's reader needs:
# a list of records with target_id, intervals {sample_us, aggr_us, ops_update_us} (damo report access
# refuses records without them) and snapshots {start_time, end_time, regions, total_bytes}; regions
# {start, end, nr_accesses {samples}, age {usec, aggr_intervals}}, sorted, not overlapping, none starting at
# address 0 unless it is one page long (damo's guide takes a lowest address of 0 for unset).
#   check      prints "records R snapshots S regions_max N sample_us U aggr_us A"
#   regions    one line per snapshot: FIRST-END:NR:AGE per region, in pages of 4 KiB
#   snapshots  one line per snapshot: start_ns end_ns regions wss_bytes accessed_page_samples
# Exit 1 with the reason when the file breaks a rule.
import json
import sys
import zlib

PAGE = 4096


def fail(why):
    print("damo_record: %s: %s" % (sys.argv[1], why))
    sys.exit(1)


def load(path):
    data = open(path, "rb").read()
    if data[:1] != b"\x78":
        fail("not zlib data (first byte %r)" % data[:1])
    try:
        return json.loads(zlib.decompress(data))
    except Exception as e:
        fail("not zlib-compressed JSON: %s" % e)


def check(records):
    if not isinstance(records, list) or not records:
        fail("not a non-empty list of records")
    for r in records:
        for k in ("target_id", "intervals", "snapshots"):
            if k not in r:
                fail("a record without %s" % k)
        iv = r["intervals"]
        if not iv or any(not isinstance(iv.get(k), int) or iv[k] <= 0
                         for k in ("sample_us", "aggr_us", "ops_update_us")):
            fail("intervals %r" % iv)
        for i, s in enumerate(r["snapshots"]):
            for k in ("start_time", "end_time", "regions"):
                if k not in s:
                    fail("snapshot %d without %s" % (i, k))
            if not s["start_time"] < s["end_time"]:
                fail("snapshot %d: start_time %r, end_time %r" % (i, s["start_time"], s["end_time"]))
            last = None
            for g in s["regions"]:
                if not g["start"] < g["end"] or g["start"] % PAGE or g["end"] % PAGE:
                    fail("snapshot %d: region %r" % (i, g))
                if last is not None and g["start"] < last:
                    fail("snapshot %d: regions overlap or are not sorted at %d" % (i, g["start"]))
                if g["start"] == 0 and g["end"] != PAGE:
                    fail("snapshot %d: a region from address 0 longer than a page" % i)
                if not isinstance(g["nr_accesses"]["samples"], int) or g["nr_accesses"]["samples"] < 0:
                    fail("snapshot %d: nr_accesses %r" % (i, g["nr_accesses"]))
                if "usec" not in g["age"] or not isinstance(g["age"]["aggr_intervals"], int):
                    fail("snapshot %d: age %r" % (i, g["age"]))
                last = g["end"]
            if s.get("total_bytes") != sum(g["end"] - g["start"] for g in s["regions"]):
                fail("snapshot %d: total_bytes %r" % (i, s.get("total_bytes")))


def main():
    records = load(sys.argv[1])
    check(records)
    what = sys.argv[2]
    snaps = [s for r in records for s in r["snapshots"]]
    if what == "check":
        print("records %d snapshots %d regions_max %d sample_us %d aggr_us %d" % (
            len(records), len(snaps), max([len(s["regions"]) for s in snaps] or [0]),
            records[0]["intervals"]["sample_us"], records[0]["intervals"]["aggr_us"]))
    elif what == "regions":
        for s in snaps:
            print(" ".join("%d-%d:%d:%d" % (g["start"] // PAGE, g["end"] // PAGE, g["nr_accesses"]["samples"],
                                            g["age"]["aggr_intervals"]) for g in s["regions"]))
    elif what == "snapshots":
        for s in snaps:
            rs = s["regions"]
            print(s["start_time"], s["end_time"], len(rs),
                  sum(g["end"] - g["start"] for g in rs if g["nr_accesses"]["samples"] >= 1),
                  sum((g["end"] - g["start"]) // PAGE * g["nr_accesses"]["samples"] for g in rs))
    else:
        fail("unknown request %s" % what)


main()
