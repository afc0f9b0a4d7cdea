#!/usr/bin/env python3
# trace_owners.py TRACE OUTDIR: the OWNERS records of a trace, read from the bytes as docs/formats.md
# describes them and apart from the C reader: each snapshot to OUTDIR/N.snap (from 0), and a line per record,
# "N at_ns after_seq bytes", on stdout. Exits 1 (saying why) when a record's after_seq is not the seq of the
# last interval before it, when at_ns decreases, or when the walk meets a bad record before the end or the
# INDEX.
import os
import struct
import sys

MAGIC = b"HVMTRACE"
OWNERS, INTERVAL, INDEX = 0x8001, 3, 4
NONE_BEFORE = 2**64 - 1


def table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        t.append(c)
    return t


TABLE = table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = (crc >> 8) ^ TABLE[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


def main():
    data = open(sys.argv[1], "rb").read()
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    assert data[:8] == MAGIC, "not a trace"
    at, last_seq, last_at, n = 16, NONE_BEFORE, 0, 0
    while at + 16 <= len(data):
        typ, length, crc, _ = struct.unpack_from("<IIII", data, at)
        end = at + 16 + (length + 7) // 8 * 8
        if end > len(data):
            break  # torn at the end: what a killed writer leaves
        payload = data[at + 16:at + 16 + length]
        if typ in (OWNERS, INTERVAL):  # the records that matter here get their CRC checked (slow in Python)
            hdr = bytearray(data[at:at + 16])
            hdr[8:12] = b"\0\0\0\0"
            if crc32c(bytes(hdr) + payload) != crc:
                sys.exit(f"record at {at}: CRC mismatch")
        if typ == INTERVAL:
            last_seq = struct.unpack_from("<Q", payload, 0)[0]
        elif typ == OWNERS:
            at_ns, after = struct.unpack_from("<QQ", payload, 0)
            if after != last_seq:
                sys.exit(f"owners record {n} says it follows {after}, but follows {last_seq}")
            if at_ns < last_at:
                sys.exit(f"owners record {n}: at_ns {at_ns} before the previous {last_at}")
            last_at = at_ns
            with open(os.path.join(out, f"{n}.snap"), "wb") as f:
                f.write(payload[16:])
            print(n, at_ns, after, length - 16)
            n += 1
        elif typ == INDEX:
            break
        at = end


main()
