#!/usr/bin/env python3
# The owners snapshot of docs/attribution.md, in Python and apart from the C code, for the tests:
#   owners_snap.py decode FILE   one JSON object per snapshot on stdout: header fields and owners, each
#                                owner's runs as [first, count] pairs
#   owners_snap.py encode        JSON on stdin ({"page_size", "time_ns", "flags", "owners": [{"type":
#                                "process"|"kind", "kind", "pid", "name", "cgroup", "flags", "runs"}]})
#                                to one snapshot on stdout
import json
import struct
import sys

MAGIC = b"HVTOWNRS"
KINDS = {1: "free", 2: "slab", 3: "pagetable", 4: "anon", 5: "cache", 6: "other"}


def varint(data, at):
    v = shift = 0
    while True:
        b = data[at]
        at += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, at


def decode(data):
    at = 0
    while at < len(data):
        magic, ver, flags, page_size, nowners, _, time_ns, body = struct.unpack_from("<8sHHIIIQQ", data, at)
        assert magic == MAGIC and ver == 1, "not a version 1 snapshot"
        at += 40
        end = at + body
        owners = []
        for _ in range(nowners):
            typ, kind, oflags, pid, nl, cl, nruns, rb = struct.unpack_from("<BBHIHHII", data, at)
            at += 20
            name = data[at:at + nl].decode()
            at += nl
            cgroup = data[at:at + cl].decode()
            at += cl
            stop, runs, prev = at + rb, [], 0
            for _ in range(nruns):
                gap, at = varint(data, at)
                n1, at = varint(data, at)
                runs.append([prev + gap, n1 + 1])
                prev += gap + n1 + 1
            assert at == stop, "runs_bytes does not match"
            owners.append({"type": "process" if typ == 1 else "kind", "kind": KINDS.get(kind), "pid": pid,
                           "name": name, "cgroup": cgroup, "flags": oflags, "runs": runs})
        assert at == end, "body_bytes does not match"
        yield {"page_size": page_size, "time_ns": time_ns, "flags": flags, "owners": owners}


def put_varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def encode(snap):
    body = bytearray()
    kind_ids = {v: k for k, v in KINDS.items()}
    for o in snap["owners"]:
        runs, prev = bytearray(), 0
        for first, count in o["runs"]:
            runs += put_varint(first - prev) + put_varint(count - 1)
            prev = first + count
        name, cgroup = o.get("name", "").encode(), o.get("cgroup", "").encode()
        typ = 1 if o["type"] == "process" else 2
        kind = kind_ids[o["kind"]] if typ == 2 else 0
        body += struct.pack("<BBHIHHII", typ, kind, o.get("flags", 0), o.get("pid", 0), len(name), len(cgroup),
                            len(o["runs"]), len(runs)) + name + cgroup + runs
    head = struct.pack("<8sHHIIIQQ", MAGIC, 1, snap.get("flags", 0), snap.get("page_size", 4096),
                       len(snap["owners"]), 0, snap.get("time_ns", 0), len(body))
    return head + bytes(body)


if __name__ == "__main__":
    if sys.argv[1] == "decode":
        for s in decode(open(sys.argv[2], "rb").read()):
            print(json.dumps(s))
    elif sys.argv[1] == "encode":
        sys.stdout.buffer.write(encode(json.load(sys.stdin)))
    else:
        sys.exit("usage: owners_snap.py decode FILE | encode <JSON")
